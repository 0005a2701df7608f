"""Speed of the compiled core: one right-hand side (µs) and whole six-bar and driven
hexapod runs under the chunked, per-step and Python drivers, as ratios in one run.

Writes data/core_speed.csv; options as ``--help`` shows.
"""
import sys

from natcoord_bench.core_speed import main

if __name__ == "__main__":
    sys.exit(main())
