"""The runtime-vs-tolerance experiments of the paper (slow; writes data/*.csv).

Runs, one after the other, the ``natcoord bench tolerance`` commands whose
CSV files ``paper/figures.py`` turns into figures; pass model names to run
only those (e.g. ``python benchmarks/tolerance.py six-bar``).
"""
import sys

from natcoord.cli import main

#: model -> the command-line arguments of its two experiments
EXPERIMENTS = {
    "six-bar": [["--repeat", "5"],
                ["--work-precision", "--repeat", "3"]],
    "hexapod": [["--scenario", "passive", "--repeat", "3"],
                ["--scenario", "passive", "--work-precision", "--repeat", "3"]],
}

if __name__ == "__main__":
    for model in sys.argv[1:] or EXPERIMENTS:
        for arguments in EXPERIMENTS[model]:
            print(f"natcoord bench tolerance {model} {' '.join(arguments)}", flush=True)
            main(["bench", "tolerance", model, *arguments])
