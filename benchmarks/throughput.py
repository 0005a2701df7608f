"""Throughput of nc.sweep on Dask: 200 six-bar runs, plain loop vs 1 and 2 workers (writes data/throughput.csv).

The experiment lives in :mod:`natcoord_bench.throughput` (its docstring
defines every column). Run it on an otherwise idle machine: the parallel
efficiency is only meaningful when the workers have the cores to themselves.
"""
import argparse

from natcoord_bench import throughput

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=throughput.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    throughput.configure(parser)
    args = parser.parse_args()
    if args.workers[0] != 1 or args.runs < 1:
        parser.error("--workers must start with 1 (the efficiency's reference) and --runs ≥ 1")
    throughput.run(args.runs, args.t_end, args.rtol, tuple(args.workers), args.out)
