"""Othello engine server: numba bitboard rules, search agents, and protocol front ends."""

__version__ = "0.1.0"
