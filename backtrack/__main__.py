"""`python -m backtrack`: the command line."""

import sys

from backtrack.cli.main import main

sys.exit(main())
