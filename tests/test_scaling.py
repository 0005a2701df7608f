"""Machinery of the O(n) evidence: the scaling benchmark and the structure diagram.

Tiny sizes only and no timing assertions (speed lives in ``benchmarks/``).
"""
import argparse
import csv

import matplotlib.image
import numpy as np

from natcoord.cli import main
from natcoord_bench import scaling
from natcoord.linalg.blockldl import block_plan
from natcoord.viz.structure import COLOURS


def run_scaling(tmp_path, *argv):
    parser = argparse.ArgumentParser()
    scaling.configure(parser)
    args = parser.parse_args([*argv, "--repeat", "1", "--solvers", "block", "dense",
                              "--out", str(tmp_path / "scaling.csv"),
                              "--figure", str(tmp_path / "scaling.png")])
    assert scaling.run(args) == 0
    with open(tmp_path / "scaling.csv", newline="") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def test_scaling_rows_and_figure(tmp_path):
    rows = run_scaling(tmp_path, "--family", "chain", "tree", "loops", "--n", "16", "32")
    got = {(r["family"], int(r["n_bodies"]), r["solver"]) for r in rows}
    # trees have 2^depth − 1 bodies: 16 → depth 4 (15), 32 → depth 5 (31)
    assert got == {(f, n, s) for f, ns in (("chain", (16, 32)), ("tree", (15, 31)),
                                          ("loops", (16, 32)))
                   for n in ns for s in ("block", "dense")}
    for r in rows:
        assert float(r["numeric_s"]) > 0 and float(r["call_s"]) > 0
        model = scaling.family_model(r["family"], int(r["n_bodies"]))
        assert int(r["block_flops"]) == block_plan(model).flops()
        assert (int(r["fill_blocks"]) > 0) == (r["family"] == "loops")   # trees: no fill
    assert matplotlib.image.imread(tmp_path / "scaling.png").shape[0] > 100


def test_rows_of_other_families_are_kept(tmp_path):
    run_scaling(tmp_path, "--family", "tree", "--n", "8")
    rows = run_scaling(tmp_path, "--family", "chain", "--n", "8")
    assert sorted({r["family"] for r in rows}) == ["chain", "tree"]


def test_fitted_slope():
    n = np.array([100, 1000, 10000])
    assert np.isclose(scaling.slope(n, 3e-6 * n**1.5), 1.5)


def test_structure_diagram(tmp_path):
    """``natcoord info six-bar --structure`` draws the diagram with the loop's fill in red."""
    path = tmp_path / "six_bar.png"
    assert main(["info", "six-bar", "--structure", str(path)]) == 0
    image = matplotlib.image.imread(path)[..., :3]
    red = np.array(matplotlib.colors.to_rgb(COLOURS["fill"]))
    assert np.sum(np.all(np.abs(image - red) < 0.02, axis=-1)) > 1000


def test_slow_backends_are_skipped_by_extrapolation():
    rows = [dict(family="chain", solver="dense", n_bodies=100, call_s=0.1),
            dict(family="chain", solver="dense", n_bodies=200, call_s=0.8)]       # ~ n³
    assert np.isclose(scaling.predicted_time(rows, "chain", "dense", 400), 6.4)
    assert np.isclose(scaling.predicted_time(rows[:1], "chain", "dense", 400), 0.4)
    assert scaling.predicted_time(rows, "tree", "dense", 400) == 0.0
