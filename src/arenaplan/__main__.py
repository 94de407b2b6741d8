"""``python -m arenaplan ...``: the ``arenaplan`` command."""

import sys

from arenaplan.cli import main

sys.exit(main())
