"""`python -m backtrack`: the command line."""

import sys

from backtrack.cli import main

sys.exit(main())
