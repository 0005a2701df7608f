"""Stewart–Gough platform: structure, passive energy conservation, driven path
tracking, drive forces and the energy balance of the drives."""
import numpy as np
import pytest
from scipy.integrate import cumulative_simpson

import natcoord as nc
from natcoord.models.hexapod import (BASE_POINTS, PLATFORM_CENTRE, PLATFORM_POINTS, hexapod,
                                     leg_drive, leg_frame, leg_motion,
                                     platform_path)

PROJ_TOL = 1e-10
T = 0.5            # s; short runs keep the suite fast (full scenarios: T_END)
LEGS = [f"P{k}" for k in range(1, 7)]


@pytest.fixture(scope="module")
def passive():
    model = hexapod("passive").build()
    return nc.simulate(model, T, rtol=1e-8, proj_tol=PROJ_TOL, t_eval=np.linspace(0, T, 51))


@pytest.fixture(scope="module")
def driven():
    model = hexapod("driven").build()
    return nc.simulate(model, T, rtol=1e-8, proj_tol=PROJ_TOL, t_eval=np.linspace(0, T, 401),
                       multipliers=True)


@pytest.mark.parametrize("scenario, dof", [("passive", 6), ("driven", 0)])
def test_structure(scenario, dof):
    """Grübler: 6·13 − 6·(4 + 5 + 3) = 6, no redundant row; six drives leave 0 DOF."""
    model = hexapod(scenario).build()
    assert model.n_bodies == 13 and len(model.joints) == 18
    assert model.n_rows - 6 * 13 == 6 * (4 + 5 + 3) + (6 if scenario == "driven" else 0)
    assembly = nc.assemble(model)
    assert assembly.dof == dof and assembly.dropped.size == 0


def test_reference_geometry():
    """Legs from B_k to P_k; universal axes t_k ⊥ ẑ, u_k and cylinder axis u_k × t_k."""
    for k in range(6):
        axes = leg_frame(k)
        assert np.allclose(axes.T @ axes, np.eye(3), atol=1e-14)
        assert abs(axes[2, 0]) < 1e-15                          # t_k horizontal
        leg = PLATFORM_POINTS[k] - BASE_POINTS[k]
        assert np.allclose(np.cross(axes[:, 2], leg), 0.0, atol=1e-15)
    assert np.allclose(np.linalg.norm(BASE_POINTS[:, :2], axis=1), 1.0)
    assert np.allclose(PLATFORM_POINTS[:, 2], 1.0)


def test_passive_residuals_and_energy(passive):
    """Released at rest, no dissipation: E conserved. At rtol = 1e-8 over 0.5 s the
    drift is ≈ 6e-7 J of |E| ≈ 172 J (4e-9 relative); the bound leaves 5× margin."""
    assert passive.success and passive.dropped == []
    assert passive.constraint_residual.max() <= PROJ_TOL
    assert passive.velocity_residual.max() <= PROJ_TOL
    drift = np.abs(passive.energy - passive.energy[0]).max()
    assert drift < 2e-8 * abs(passive.energy[0])
    # it did move: the platform fell (so the check above is not trivially at rest)
    assert passive.point("platform", PLATFORM_CENTRE)[-1, 2] < 0.9


def test_drive_derivatives_match_finite_differences():
    """ṡ and s̈ of the closed-form inverse kinematics against central differences."""
    h = 1e-4
    for k in range(6):
        drive = leg_drive(k)
        for t in (0.0, 0.3, 0.77):
            (sm, dm, _), (s0, d0, a0), (sp, dp, _) = drive(t - h), drive(t), drive(t + h)
            assert abs((sp - sm) / (2 * h) - d0) < 1e-7
            assert abs((dp - dm) / (2 * h) - a0) < 1e-6
            assert abs((sp - 2 * s0 + sm) / h**2 - a0) < 1e-6


def test_fourier_drive_is_the_closed_form():
    """The declarative (Fourier) drive equals the closed-form inverse kinematics
    at times off its sampling grid, to round-off."""
    for k in range(6):
        closed, fourier = leg_motion(k), leg_drive(k)
        for t in np.random.default_rng(k).uniform(0.0, 10.0, 20):
            exact = np.array(closed(t))
            assert np.abs(np.array(fourier(t)) - exact).max() < 1e-12 * max(np.abs(exact).max(),
                                                                            1.0)


def test_driven_platform_follows_path(driven):
    """Forward kinematics through the constraints reproduces the prescribed pose."""
    assert driven.constraint_residual.max() <= PROJ_TOL
    assert driven.velocity_residual.max() <= PROJ_TOL
    centre = driven.point("platform", PLATFORM_CENTRE)
    path = np.array([platform_path(t)[0] for t in driven.t])
    assert np.abs(centre - path).max() < PROJ_TOL
    velocity = driven.point_velocity("platform", PLATFORM_CENTRE)
    assert np.abs(velocity - np.array([platform_path(t)[1] for t in driven.t])).max() < 1e-9
    axes = driven.p.reshape(driven.t.size, -1, 4, 3)[:, 0, 1:]   # platform is body 0
    assert np.abs(axes - np.eye(3)).max() < PROJ_TOL          # constant orientation


def test_drive_power_integrates_to_energy_change(driven):
    """∫ Σ F_k ṡ_k dt = E(t) − E(0) to 1e-6 relative.

    The driven motion is fully prescribed (0 DOF), so the drive forces are
    smooth functions of t, sampled at 401 dense outputs over 0.5 s; composite
    Simpson's error there (~h⁴ P⁗) is far below 1e-6.
    """
    power = sum(driven.drive_power(leg) for leg in LEGS)
    work = cumulative_simpson(power, x=driven.t, initial=0.0)
    change = driven.energy - driven.energy[0]
    assert np.abs(work - change).max() < 1e-6 * np.abs(change).max()


def test_drive_forces_act_along_the_legs():
    """The passive platform with each leg's drive force applied as a pair of
    forces (+F_k u_k on the piston, −F_k u_k on the cylinder, at P_k) has the
    accelerations of the driven platform at t = 0."""
    model = hexapod("driven").build()
    sol = nc.simulate(model, 1e-3, t_eval=[0.0], multipliers=True)
    forces = [sol.drive_force(leg)[0] for leg in LEGS]
    state = nc.State(0.0, sol.p[0], sol.v[0])
    a_driven, _, _ = nc.accelerations(model, state)
    mech = hexapod("passive")
    for k, F in enumerate(forces):
        u = leg_frame(k)[:, 2]
        mech.add_force(f"piston{k + 1}", point=PLATFORM_POINTS[k], force=F * u)
        mech.add_force(f"cylinder{k + 1}", point=PLATFORM_POINTS[k], force=-F * u)
    a_passive, _, _ = nc.accelerations(mech.build(), state)
    assert np.abs(a_passive - a_driven).max() < 1e-8 * np.abs(a_driven).max()
    assert min(forces) < 0 < max(forces)        # a real test of the sign convention
