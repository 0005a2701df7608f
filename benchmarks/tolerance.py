"""The runtime-vs-tolerance experiments of the paper (slow; writes data/*.csv).

Runs, one after the other, the ``natcoord bench tolerance`` commands whose
CSV files ``paper/figures.py`` turns into figures; pass model names to run
only those (e.g. ``python benchmarks/tolerance.py six-bar``).
"""
import argparse
import sys

from natcoord.cli import main

#: model -> the command-line arguments of its two experiments
EXPERIMENTS = {
    "six-bar": [["--repeat", "5"],
                ["--work-precision", "--repeat", "3"],
                # the paper's partitioning without hysteresis, for the comparison figure
                ["--hold-tol", "0", "--repeat", "3",
                 "--out", "data/six_bar_tolerance_no_hysteresis.csv"]],
    "hexapod": [["--scenario", "passive", "--repeat", "3"],
                ["--scenario", "passive", "--work-precision", "--repeat", "3"]],
}


def run(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help=f"models to run (default: all of {', '.join(EXPERIMENTS)})")
    models = parser.parse_args(argv).models
    unknown = [m for m in models if m not in EXPERIMENTS]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}; choose from {', '.join(EXPERIMENTS)}")
    for model in models or EXPERIMENTS:
        for arguments in EXPERIMENTS[model]:
            print(f"natcoord bench tolerance {model} {' '.join(arguments)}", flush=True)
            main(["bench", "tolerance", model, *arguments])


if __name__ == "__main__":
    sys.exit(run())
