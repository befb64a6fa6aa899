"""``python -m deepagent_magics``: the ``deepagent`` command line (deepagent_magics.cli)."""

import sys

from .cli import main

sys.exit(main())
