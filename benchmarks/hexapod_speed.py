"""Real-time factor of the driven hexapod: 10 s at rtol = 1e-6, median of 5 runs.

Writes data/hexapod_speed.csv; options as ``--help`` shows (e.g. ``--solver
block,superlu`` to compare backends).
"""
import sys

from natcoord_bench.hexapod_speed import main

if __name__ == "__main__":
    sys.exit(main())
