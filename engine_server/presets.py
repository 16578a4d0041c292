"""The built-in presets (names for agent specs) and the default agents' names, in a module that
imports nothing.

``engine_server.agents.policy`` resolves names with this table, and the registry takes the default
agents from here; they live apart because importing the agents package loads numba and every agent
(a second with a warm kernel cache, minutes with an empty one, as the searches' kernels compile
when their modules load), which neither a command's ``--help`` that lists these names nor the
progress report of a cold compile (``othello-engine --precompile``) can wait for. It belongs to the
agents layer (``tests/test_layers.py``), and its tests check it against the registry: every
preset's family is a registered agent, and ``ALPHA_BETA`` names the alpha-beta families.
"""

from __future__ import annotations

from typing import Iterable, Mapping

# The agent the engine and the web page play unless told otherwise (--agent, [engine] agent).
DEFAULT_AGENT = "best"
# For judges that forbid threads or count CPU time per process (CS303, Botzone).
SINGLE_THREAD_AGENT = "best:threads=1"

# The seed agents at the settings of their papers, and strength levels of our own.
BUILTIN_PRESETS: dict[str, str] = {
    "beginner": "dk:nSims=5,max_iter=40",
    "easy": "ab:depth=2,threads=1",
    "medium": "ab:depth=6,threads=1",
    "hard": "ab:depth=10,threads=1",
    "strong": "best",
    "seed000-shallow": "shallow:n=100",
    "seed000-minmax": "minmax:n=10,k=3",
    "seed000-ucb1": "ucb1:n=50,N=1200,c=1.0",
    "seed001-uct": "uct:c=1.414,form=seed001,iterations=500",
    # plain UCT (one child expanded and simulated per iteration), as the OCBA paper describes it
    "seed002-uct": "uct:reward=ratio,form=plain,c=1.0,expand=one",
    "seed002-ocba": "ocba:n0=5,simulations=100",
    "seed003-puct": "puct",
    "seed004-dk": "dk:avoid=x",   # the post's pseudo-random playouts (docs/papers/dk.md)
}

# The alpha-beta agents (engine_server/agents/ab.py): the family the exports to plain Python
# (othello-cs303 export, othello-botzone pack) can write.
ALPHA_BETA = ("ab", "best")


def family(spec: str) -> str:
    """The agent family a spec names: ``ab`` for ``ab:depth=2,threads=1``."""
    return spec.partition(":")[0].strip().lower()


def presets_of(families: Iterable[str],
               presets: Mapping[str, str] = BUILTIN_PRESETS) -> list[str]:
    """The names of the presets whose spec is of one of ``families``, in the table's order."""
    wanted = set(families)
    return [name for name, spec in presets.items() if family(spec) in wanted]


__all__ = ["ALPHA_BETA", "BUILTIN_PRESETS", "DEFAULT_AGENT", "SINGLE_THREAD_AGENT", "family",
           "presets_of"]
