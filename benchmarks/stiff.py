"""Stiff mechanisms: steps, RHS evaluations and wall time of DOPRI5 and Radau IIA
(and SciPy's Radau on the pendulum in polar coordinates).

Writes data/stiff.csv; options as ``--help`` shows.
"""
import sys

from natcoord_bench.stiff import main

if __name__ == "__main__":
    sys.exit(main())
