"""Andrews' squeezing mechanism against the published data of the IVP test set
(problem "andrews": consistent initial values, initial accelerations, and the
reference solution at t = 0.03 computed with RADAU5 at tolerance 1e-14)."""
import numpy as np
import pytest

import natcoord as nc
from natcoord.models.andrews import (ACCELERATIONS0, ANGLE_RATES_END, ANGLES0, ANGLES_END, MOM,
                                     T_END, A, B, O, andrews, angles, points)

PROJ_TOL = 1e-10


@pytest.fixture(scope="module")
def model():
    return andrews().build()


def test_structure(model):
    """10 revolutes = 50 joint rows of rank 41 in 3D: 9 redundant, 1 DOF."""
    assert (model.n_bodies, len(model.joints)) == (7, 10)
    assert model.n_rows - 6 * model.n_bodies == 50
    assembly = nc.assemble(model)
    assert assembly.rank - 6 * model.n_bodies == 41
    assert assembly.dropped.size == 9 and assembly.dof == 1


def test_published_configuration_is_consistent(model):
    """The published angles close all loops of our geometry: assembly does not
    move them, and F, E are where docs/benchmarks.md says."""
    state = nc.assemble(model).state
    assert np.abs(state.p - model.p_reference).max() < 1e-14
    p = points()
    assert np.allclose(p["F"][:2], (0.006986674, -0.000431723), atol=1e-9)
    assert np.allclose(p["E"][:2], (-0.020960022, 0.001295169), atol=1e-9)


def _angle_rate(x, x_dot):
    """``d/dt ∠x = (x × ẋ)_z / |x|²``; at rest (ẋ = 0) the same form of ẍ is ``d²/dt² ∠x``."""
    return (x[0] * x_dot[1] - x[1] * x_dot[0]) / (x[:2] @ x[:2])


def test_initial_accelerations(model):
    """β''(0) and Θ''(0) to 1e-8 relative; γ'', Φ'', δ'', Ω'', ε'' vanish.

    Angles are those of body-fixed vectors (see ``angles``); at rest the second
    derivative of ∠(r_1 − r_2) is ``((r_1 − r_2) × (a_1 − a_2))_z / |r_1 − r_2|²``.
    """
    state = nc.assemble(model).state
    acc, _, info = nc.accelerations(model, state)
    assert len(info.dropped) == 9
    X, Acc = state.p.reshape(-1, 3), acc.reshape(-1, 3)
    p = points()

    def point(body, key):
        expr = model.point_expression(body, p[key])
        return expr.evaluate(X), expr.rate(Acc)

    (F, aF), (E, aE) = point("crank", "F"), point("link2", "E")
    (G, aG), (H, aH) = point("triangle5", "G"), point("triangle7", "H")
    beta = _angle_rate(F - O, aF)
    theta = _angle_rate(F - E, aF - aE) - beta
    delta = _angle_rate(G - A, aG)
    eps = _angle_rate(H - A, aH)
    others = [_angle_rate(E - B, aE), _angle_rate(E - G, aE - aG) - delta,
              delta, _angle_rate(E - H, aE - aH) - eps, eps]
    assert beta == pytest.approx(ACCELERATIONS0[0], rel=1e-8)
    assert theta == pytest.approx(ACCELERATIONS0[1], rel=1e-8)
    assert np.abs(others).max() < 1e-8 * abs(ACCELERATIONS0[0])


@pytest.fixture(scope="module")
def solution(model):
    return nc.simulate(model, T_END, rtol=1e-8, proj_tol=PROJ_TOL,
                       t_eval=np.linspace(0.0, T_END, 301))


def test_reference_solution(solution):
    """All seven angles and angular velocities at t = 0.03 against the published
    reference solution.

    The crank has turned 2.5 times by then (β: −0.06 → 15.8 rad); at rtol = 1e-8
    β and Θ are within ≈ 3e-7 rad, the others within 4e-9 rad; the rates within
    1.1e-4 rad/s (β' ≈ 1140 rad/s).
    """
    assert solution.success and solution.t[-1] == T_END
    result = angles(solution)
    assert np.abs(result[0] - ANGLES0).max() < 1e-14
    assert np.abs(result[-1] - ANGLES_END).max() < 2e-6
    assert np.abs(result[-1, 2:] - ANGLES_END[2:]).max() < 5e-8
    p = points()
    (F, vF), (E, vE), (G, vG), (H, vH) = (
        (solution.point(body, p[key])[-1], solution.point_velocity(body, p[key])[-1])
        for body, key in (("crank", "F"), ("link2", "E"), ("triangle5", "G"),
                          ("triangle7", "H")))
    beta, delta, eps = _angle_rate(F - O, vF), _angle_rate(G - A, vG), _angle_rate(H - A, vH)
    rates = [beta, _angle_rate(F - E, vF - vE) - beta, _angle_rate(E - B, vE),
             _angle_rate(E - G, vE - vG) - delta, delta, _angle_rate(E - H, vE - vH) - eps, eps]
    assert np.abs(np.subtract(rates, ANGLE_RATES_END)).max() < 1e-6 * ANGLE_RATES_END[0]


def test_residuals_and_energy_balance(solution):
    """Residuals at proj_tol, dropped rows stay dropped, and the driving torque's
    work equals the change of kinetic + spring energy: E(t) − E(0) = mom (β(t) − β(0)).
    At rtol = 1e-8 the balance holds to ≈ 7e-8 of the work done (0.52 J)."""
    assert solution.constraint_residual.max() <= PROJ_TOL
    assert solution.velocity_residual.max() <= PROJ_TOL
    assert len(solution.dropped) == 9 and solution.stats["active_set_changes"] == 0
    beta = angles(solution)[:, 0]
    work = MOM * (beta - beta[0])
    change = solution.energy - solution.energy[0]
    assert np.abs(change - work).max() < 3e-7 * np.abs(work).max()
