"""Requests too large for the machine fail at once, naming the argument and the size.

The limit is half the physical memory (natcoord.util.resources); the tests
shrink the machine to a few megabytes instead of allocating gigabytes.
"""
import time

import numpy as np
import pytest

import natcoord as nc
from natcoord.cli import main
from natcoord.util import resources


@pytest.fixture
def small_machine(monkeypatch):
    monkeypatch.setattr(resources, "physical_memory", lambda: 4 * 2**20)     # 4 MiB


def test_outputs_that_would_not_fit_are_refused_before_integrating(small_machine):
    model = nc.models.six_bar().build()
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"t_eval with 100000 points .* would take about "
                                         r".* GiB, more than half of this machine's"):
        nc.simulate(model, 1.0, t_eval=np.linspace(0.0, 1.0, 100_000))
    assert time.perf_counter() - start < 5.0
    sol = nc.simulate(model, 0.1, t_eval=np.linspace(0.0, 0.1, 11))      # small: runs
    assert sol.success and sol.t.size == 11


def test_a_family_too_large_to_build_is_refused_and_a_slow_one_announced(small_machine,
                                                                            monkeypatch):
    with pytest.raises(ValueError, match=r"chain\(n=1000\) with 1000 bodies would take about"):
        nc.models.chain(1000)
    from natcoord.models import families
    monkeypatch.setattr(families, "SLOW_BUILD", 0.01)
    with pytest.warns(UserWarning, match=r"building 20 bodies takes about"):
        nc.models.chain(20)


def test_the_command_line_refuses_a_huge_chain_in_one_line(capsys):
    """``natcoord simulate chain --param n=100000000``: 3 TB, refused at once (exit 2)."""
    assert main(["simulate", "chain", "--param", "n=100000000", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "100000000 bodies would take about" in err and "Traceback" not in err


def test_drives_sampled_too_finely_are_refused(tmp_path):
    driven = nc.Mechanism(name="slider")
    driven.add_body("s", mass=1.0, com=(0, 0, 0), inertia=np.eye(3) * 0.1)
    driven.add_prismatic(nc.GROUND, "s", point=(0, 0, 0), axis=(1, 0, 0), name="rail",
                         drive=lambda t: (np.sin(t), np.cos(t), -np.sin(t)))
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"sample_drives=1e-09 .* spline knots"):
        nc.save_mechanism(driven, tmp_path / "slider.json", sample_drives=1e-9)
    assert time.perf_counter() - start < 1.0


def test_structure_figure_into_a_directory_is_one_line(tmp_path, capsys):
    assert main(["info", "six-bar", "--structure", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--structure" in err and "Traceback" not in err
