"""`python -m pytest_nosync profile|diagnose ...`: see pytest_nosync.profiling.cli."""

import sys

from .profiling.cli import main

if __name__ == "__main__":
    sys.exit(main())
