"""Benchmarks run by the ``othello-bench`` console script."""
