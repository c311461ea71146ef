"""`python -m pytest_nosync profile|diagnose ...`: see pytest_nosync.cli."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
