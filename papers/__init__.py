"""The papers the project started from, in one place: their agents, the reproductions of their
experiments, and the AlphaZero training loop.

* "Upper Confidence Bound Algorithm for MCTS in Othello" (2022): the agents ``random``,
  ``shallow``, ``minmax`` and ``ucb1`` (``agents/ucb1.py``, ``agents/playouts.py``); its Table 1
  is ``othello-match reproduce ucb1`` (``reproduce/ucb1.py``).
* "MCTS for Reversed Reversi" (a SUSTech CS303 report): ``uct`` (``agents/uct.py``); its claims
  on rollouts and the exploration constant are ``othello-match reproduce uct``.
* "Optimal Computing Budget Allocation for MCTS in Othello": ``ocba`` (``agents/ocba.py``); its
  Table 1 is ``othello-match reproduce ocba``.
* "Alphello Zero: Learning Othello Tabula Rasa": ``puct`` (``agents/puct.py``) with a network
  trained by the AlphaZero loop, ``alphazero/`` (``othello-train az``).
* "A Reversi Playing Agent and the MCTS Algorithm" (a blog post): ``pseudo-random`` and ``dk``
  (``agents/playouts.py``, ``agents/dk.py``); its Fig. 1 and Table 1 are
  ``othello-match reproduce dk``.

The texts are in ``../shared/seeds/``; what each reproduction found is in ``docs/papers/``.

The package spans two layers (``tests/test_layers.py``): ``papers.agents`` sits with the
engine's agents (it imports the search and ``engine_server.agents``' shared pieces, and the
registry imports it); ``papers.reproduce`` and ``papers.alphazero`` sit with the clients and the
training code, at the top.  The agents' tree search is the engine's, ``engine_server.search.mcts``.
"""
