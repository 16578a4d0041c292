"""Training of the engine's learned components (``othello-train``): data from WTHOR and self-play,
labels from the exact solver, fits, and the reports in ``docs/``."""
