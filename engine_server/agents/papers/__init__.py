"""The papers' agents, one module per paper; the registry (``engine_server.agents``) builds them
by name.  Which paper each comes from: the ``papers`` package's docstring (the reproductions of
the papers' experiments and the AlphaZero loop live there, above the clients)."""

from __future__ import annotations

from .dk import DK
from .ocba import OCBA
from .playouts import PSEUDO_RANDOM, RANDOM
from .puct import PUCT
from .ucb1 import MINMAX, SHALLOW, UCB1
from .uct import UCT

__all__ = ["DK", "MINMAX", "OCBA", "PSEUDO_RANDOM", "PUCT", "RANDOM", "SHALLOW", "UCB1", "UCT"]
