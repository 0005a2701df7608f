"""``python -m natcoord``: the same command line as the ``natcoord`` script."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
