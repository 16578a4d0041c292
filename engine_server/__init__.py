"""Othello engine server: numba bitboard rules, search agents, and protocol front ends."""

__version__ = "0.1.0"

# Before any kernel is decorated: numba's cache directory is named by the kernels' sources, so
# an edit or an upgrade can never run stale cached machine code (kernel_cache.py).
from . import kernel_cache as _kernel_cache  # noqa: E402

_kernel_cache.configure()
