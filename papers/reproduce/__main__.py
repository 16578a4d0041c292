"""``python -m clients.match.reproduce``, as before the module became a package."""

import sys

from .cli import main

sys.exit(main())
