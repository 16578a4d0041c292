"""The papers the project started from: the reproductions of their experiments and the AlphaZero
training loop; the module names below are those of their agents in ``engine_server/agents/papers/``.

* "Upper Confidence Bound Algorithm for MCTS in Othello" (2022): the agents ``random``,
  ``shallow``, ``minmax`` and ``ucb1`` (``ucb1.py``, ``playouts.py``); its Table 1
  is ``othello-reproduce ucb1`` (``reproduce/ucb1.py``).
* "MCTS for Reversed Reversi" (a SUSTech CS303 report): ``uct`` (``uct.py``); its claims
  on rollouts and the exploration constant are ``othello-reproduce uct``.
* "Optimal Computing Budget Allocation for MCTS in Othello": ``ocba`` (``ocba.py``); its
  Table 1 is ``othello-reproduce ocba``.
* "Alphello Zero: Learning Othello Tabula Rasa": ``puct`` (``puct.py``) with a network
  trained by the AlphaZero loop, ``alphazero/`` (``othello-train az``).
* "A Reversi Playing Agent and the MCTS Algorithm" (a blog post): ``pseudo-random`` and ``dk``
  (``playouts.py``, ``dk.py``); its Fig. 1 and Table 1 are
  ``othello-reproduce dk``.

The texts are in ``../shared/seeds/``; what each reproduction found is in ``docs/papers/``.

The agents themselves are the engine's, in ``engine_server/agents/papers/`` (the registry builds
them by name); this package holds what runs them: ``reproduce`` (their experiments, through the
match clients) and ``alphazero`` (the training loop behind ``puct``'s network).  It sits above
the clients and below ``training``, which runs the AlphaZero loop as ``othello-train az``.
"""
