"""The benchmark registry: mobility counts of every mechanism, and residuals and
energy conservation of the scalable families and the 6-bar."""
import numpy as np
import pytest

import natcoord as nc
from natcoord.models import (REGISTRY, andrews, chain, four_bar, hexapod, n_four_bar, six_bar,
                             tree)

PROJ_TOL = 1e-10


def test_registry_names():
    assert {"six-bar", "chain", "tree", "hexapod", "n-four-bar", "four-bar",
            "andrews"} <= set(REGISTRY)


# (mechanism, DOF, dropped rows) from mobility analysis: Grübler's count
# 6 (bodies) − Σ joint rows, plus the rows a loop repeats (planar loops in 3D:
# 3 each) or the one Bricard's linkage has in excess.
MOBILITY = [
    (lambda: chain(5), 5, 0),                       # 5 revolutes in series
    (lambda: tree(3), 7, 0),                        # 7 revolutes, no loop
    (lambda: chain(12, loops=2), 12 - 2 * 3, 0),    # each spherical closure: −3
    (six_bar, 1, 1),                                # Bricard: 6·5 − 30 = 0, moves with 1
    (lambda: hexapod("passive"), 6, 0),             # 6·13 − 6·(4 + 5 + 3)
    (lambda: hexapod("driven"), 0, 0),              # … minus 6 drives
    (four_bar, 1, 3),                               # planar loop in 3D
    (lambda: n_four_bar(4), 1, 4 * 3),
    (andrews, 1, 9),                                # 3 planar loops in 3D
]


@pytest.mark.parametrize("factory, dof, dropped", MOBILITY)
def test_mobility(factory, dof, dropped):
    mech = factory()
    assert isinstance(mech, nc.Mechanism) and mech.scenario["t_end"] > 0
    model = mech.build()
    assembly = nc.assemble(model)
    assert assembly.dof == dof and assembly.dropped.size == dropped


@pytest.fixture(scope="module", params=["chain(8)", "tree(4)", "chain(12, loops=2)", "six_bar"])
def run(request):
    """1 s from rest under gravity at rtol = 1e-8."""
    mech = {"chain(8)": lambda: chain(8), "tree(4)": lambda: tree(4),
            "chain(12, loops=2)": lambda: chain(12, loops=2), "six_bar": six_bar}[request.param]()
    return nc.simulate(mech.build(), 1.0, rtol=1e-8, proj_tol=PROJ_TOL,
                       t_eval=np.linspace(0.0, 1.0, 51))


def test_residuals_at_projection_tolerance(run):
    assert run.success
    assert run.constraint_residual.max() <= PROJ_TOL
    assert run.velocity_residual.max() <= PROJ_TOL


def test_energy_conserved(run):
    """No dissipation: at rtol = 1e-8 over 1 s the drift is 2.7e-8 J (chain(8),
    tree(4)), 4.1e-8 J (chain(12, loops=2)) and 4.3e-8 J (six_bar), for kinetic
    energies of 0.09–5 J reached."""
    kinetic = np.array([run.model.kinetic_energy(v) for v in run.v])
    assert kinetic.max() > 0.05                      # it moved
    assert np.abs(run.energy - run.energy[0]).max() < 2e-7


def test_build_by_name_checks_the_factory_parameters():
    model = nc.models.build("chain", n=8, loops=1)
    assert model.n_bodies == 8 and model.n_rows == chain(8, loops=1).build().n_rows
    with pytest.raises(ValueError, match=r"takes the parameters .*not \['legs'\]"):
        nc.models.build("hexapod", legs=7)
    with pytest.raises(ValueError, match="unknown model 'bricard'; choose from"):
        nc.models.build("bricard")


def test_every_rod_of_a_chain_has_the_constraint_terms_of_its_geometry():
    """The axes of rod k are a product of k rotations, orthonormal only to ~k·1e-16, and
    body coordinates of its joint's axes carry noise of that size where the geometry
    has zeros. Within the frame's resolution they are zero (``Body.resolution``), so
    every rod adds the terms its geometry has, at rod 4 as at rod 256: 10 quadratic
    terms (6 rigid-body, 4 of the parallel axes; 24 with the noise) and 24 Jacobian
    blocks (36 with it). Its dynamics against Pinocchio's: tests/test_peers.py."""
    def counts(n):
        tables = chain(n).build().tables
        return np.array([tables.quad_c.size, tables.pattern_row.size])
    per_rod = (counts(8) - counts(4)) / 4
    assert np.array_equal(counts(256) - counts(8), 248 * per_rod)
    assert np.array_equal(per_rod, [10, 24])


def test_body_coordinates_within_the_frames_resolution_are_zero():
    """A direction along the third axis of a frame built from 300 rotations comes back
    with its first two body components exactly zero; a tilt larger than the frame's
    resolution is kept."""
    mech, R = nc.Mechanism(), np.eye(3)
    for k in range(300):
        R = R @ nc.models.families.rotation(np.eye(3)[k % 2], 0.3)
    mech.add_body("rod", mass=1.0, com=(0.0, 0.0, 0.0), inertia=np.eye(3), axes=R)
    body = mech.build().bodies[0]
    assert 1e-15 < body.resolution() < 1e-12
    local = body.to_local_direction(R[:, 2])
    assert np.array_equal(local[:2], [0.0, 0.0]) and local[2] == pytest.approx(1.0, abs=1e-13)
    tilted = body.to_local_direction(R[:, 2] + 1e-9 * R[:, 0])
    assert tilted[0] == pytest.approx(1e-9, rel=1e-5) and tilted[1] == 0.0
