"""The robot-model corpus table (issue 23) -> data/corpus.csv.

Every MJCF of the dm-control suite and every URDF of example-robot-data, run
through the corpus test's own comparison (``tests/test_corpus.py``:
``compare_mjcf``, ``compare_urdf``; the same peers, states and runs, so the
table is what the test asserts on): imported or refused, and for an imported
model its DOF, the largest joint-acceleration difference from MuJoCo's
``mj_forward`` / Pinocchio's ``aba`` relative to the largest acceleration (at
least 1), and the largest body-position difference after the passive run
(``t_end`` s). A refusal's reason is summarized from its message: each named
element with the kind of problem. Needs ``mujoco``, ``pin``, ``dm-control`` and
``example-robot-data`` (``pip install natcoord[mjcf,peers,models]``).
"""
from __future__ import annotations

import argparse
import re
import sys
import warnings
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests"), str(HERE)]

from natcoord.study.records import write_csv  # noqa: E402

COLUMNS = ("model", "format", "status", "nv", "qdd_rel", "run_m", "t_end", "reason")
#: phrase of a refusal message -> the kind of problem, for the table
KINDS = (("turn without kinetic energy", "point masses turning without kinetic energy "
                                        "(singular mass matrix)"),
         ("has no <inertial>", "massless end of a chain (singular mass matrix)"),
         ("triangle inequality", "non-physical inertia"),
         ("must be positive", "non-physical inertia"),
         ("line or plane", "line or plane mass"),
         ("numerically singular", "spatial inertia numerically singular"),
         ("hinge lines do not pass through one point", "hinges on skew lines"),
         ("no body moves", "no body moves (a template)"),
         ("describes no robot", "no <link> (an empty file)"))


def summary(message):
    """``kind: element, element; kind: …`` of a refusal message."""
    found = defaultdict(list)
    parts = re.split(r"\n  |; (?=<)", message.split(": ", 1)[1])
    for part in parts:
        kind = next((k for phrase, k in KINDS if phrase in part), None)
        if kind is None:
            continue
        element = re.search(r'<(?:link|body) name="([^"]+)">', part) \
            or re.search(r"point masses \[([^\]]+)\]", part)
        found[kind].append(element.group(1).replace("'", "") if element else "")
    if not found:
        return message.split(": ", 1)[1].splitlines()[0]
    return "; ".join(f"{kind}: {', '.join(e for e in elements if e)}".rstrip(": ")
                     for kind, elements in found.items())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="data/corpus.csv", help="CSV file")
    args = parser.parse_args(argv)
    import test_corpus as corpus
    from natcoord_bench.robot_speed import robots_folder
    folder = robots_folder()
    if not corpus.MJCF or corpus.mujoco is None or not corpus.URDF or folder is None:
        print("corpus_table: needs mujoco, pin, dm-control and example-robot-data "
              "(pip install natcoord[mjcf,peers,models]); nothing measured", file=sys.stderr)
        return 1
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")               # each import's 'not modelled' list
        rows += [corpus.compare_mjcf(corpus.suite_path(name)) for name in corpus.MJCF]
        rows += [corpus.compare_urdf(folder, relative) for relative in corpus.URDF]
    for row in rows:
        if row["status"] == "refused":
            row["reason"] = summary(row["reason"])
        print(f"{row['model']:60s} {row['status']:8s} "
              + (f"q̈ {row['qdd_rel']:.1e}  run {row['run_m']:.1e} m" if row["nv"]
                 else row["reason"]))
    imported = sum(row["status"] == "imported" for row in rows)
    print(f"{imported} of {len(rows)} imported ({imported / len(rows):.1%}); worst q̈ "
          f"{max(r['qdd_rel'] for r in rows if r['nv']):.1e} relative, worst run "
          f"{max(r['run_m'] for r in rows if r['nv']):.1e} m")
    print(f"written to {write_csv(args.out, rows, COLUMNS, 'python benchmarks/corpus_table.py', digits=3)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
