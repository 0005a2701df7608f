"""The peers experiment in quick mode, with whatever peers are installed (no timings).

Checks the CSV schema and the physics: natcoord's joint accelerations of
chain(n) agree with Pinocchio's ABA and MuJoCo's mj_forward, and the peers'
6-bar and chain runs approach natcoord's reference.
"""
import argparse
import importlib.util

import numpy as np
import pytest

from natcoord.study import records
from natcoord_bench import peers

INSTALLED = {name: importlib.util.find_spec(module) is not None
             for name, module in peers.PEERS.items()}


def needs(name):
    return pytest.mark.skipif(not INSTALLED[name],
                              reason=f"{name} not installed (pip install -e '.[peers]')")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("peers")
    parser = argparse.ArgumentParser()
    peers.configure(parser)
    args = parser.parse_args(["--quick", "--out", str(tmp / "peers.csv"),
                              "--figure", str(tmp / "peers.png")])
    assert peers.run(args) == 0
    return tmp


def test_csv_schema(quick):
    text = (quick / "peers.csv").read_text().splitlines()
    assert text[0].startswith("# ") and "UTC" in text[1]            # machine header
    assert tuple(text[2].split(",")) == peers.COLUMNS
    rows = records.read_csv(quick / "peers.csv")
    tools = {r["tool"] for r in rows}
    assert {"natcoord", "natcoord-numeric"} <= tools
    for name, present in INSTALLED.items():
        assert (name in tools) == present
    assert {r["experiment"] for r in rows} == {"call", "bricard", "chain"}
    assert (quick / "peers.png").stat().st_size > 10_000


def test_natcoord_converges_on_bricard(quick):
    rows = [r for r in records.read_csv(quick / "peers.csv")
            if r["experiment"] == "bricard" and r["tool"] == "natcoord"]
    assert min(r["error_m"] for r in rows) < 1e-7


def test_chain_state_and_joint_accelerations_are_consistent():
    """At rest, natcoord's recovered joint accelerations satisfy the constraint Jacobian
    relation with the state from ``chain_state`` (q = 0.1 is the reference)."""
    import natcoord as nc
    n = 5
    p, v, axes, _ = peers.chain_state(n, np.full(n, 0.1), np.zeros(n))
    model = nc.models.chain(n).build()
    np.testing.assert_allclose(p, model.p_reference, atol=1e-12)
    a, _, _ = nc.accelerations(model, nc.State(0.0, p, v))
    qdd = peers.joint_accelerations(a, p, v, axes)
    assert np.all(np.isfinite(qdd)) and np.abs(qdd).max() > 0.1


@pytest.mark.parametrize("name", ["pinocchio", "mujoco"])
def test_physics_cross_check(name):
    if not INSTALLED[name]:
        pytest.skip(f"{name} not installed (pip install -e '.[peers]')")
    found, _ = peers.available_peers()
    for n in (1, 2, 7, 16):
        diffs, scale = peers.chain_cross_check(n, {name: found[name]})
        assert diffs[name] <= 1e-8 * max(1.0, scale), (n, diffs, scale)


@needs("mujoco")
def test_mujoco_spec_and_mjcf_build_the_same_chain():
    import mujoco
    qacc = []
    for spec in (False, True):
        m = peers.mujoco_chain(mujoco, 6, spec=spec)
        d = mujoco.MjData(m)
        d.qpos[:], d.qvel[:] = 0.1, np.linspace(-1, 1, 6)
        mujoco.mj_forward(m, d)
        qacc.append(d.qacc.copy())
    np.testing.assert_allclose(qacc[0], qacc[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["exudyn", "mujoco"])
def test_peer_bricard_approaches_reference(quick, name):
    if not INSTALLED[name]:
        pytest.skip(f"{name} not installed (pip install -e '.[peers]')")
    rows = [r for r in records.read_csv(quick / "peers.csv")
            if r["experiment"] == "bricard" and r["tool"] == name]
    errors = [r["error_m"] for r in rows]
    assert min(errors) < 1e-5 and errors[-1] < errors[0]
