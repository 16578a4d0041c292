"""``python -m papers.reproduce EXPERIMENT``: the same as ``othello-reproduce``."""

import sys

from .cli import main

sys.exit(main())
