"""Scaling of the accelerations with the number of bodies (slow; writes data/scaling.csv).

The same experiment as ``natcoord bench scaling`` (see
:mod:`natcoord_bench.scaling`); arguments are passed through, e.g.
``python benchmarks/scaling.py --family chain --n 100 1000 10000``.
"""
import argparse

from natcoord_bench import scaling

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=scaling.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    scaling.configure(parser)
    raise SystemExit(scaling.run(parser.parse_args()))
