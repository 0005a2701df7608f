"""N-four-bar (IFToMM A02): redundant rows away from and at the singular
configuration, and a motion through it against the equivalent 1-DOF pendulum."""
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import natcoord as nc
from natcoord.model.body import rod_inertia
from natcoord.models.four_bar import GRAVITY, LENGTH, MASS, SECTION, four_bar, n_four_bar

PROJ_TOL = 1e-10
N = 2
T = 1.5     # s: the cranks pass horizontal (φ = π/2, 3π/2) at ≈ 0.7 s and ≈ 1.25 s


def test_four_bar_is_the_planar_case():
    model = four_bar().build()
    assert (model.n_bodies, len(model.joints)) == (3, 4)
    assembly = nc.assemble(model)
    assert assembly.dropped.size == 3 and assembly.dof == 1


@pytest.mark.parametrize("n", [1, 3])
def test_redundancy_away_from_singularity(n):
    """Each planar loop repeats its 3 out-of-plane equations in 3D: 3N dropped, 1 DOF."""
    model = n_four_bar(n).build()
    assembly = nc.assemble(model)
    assert assembly.dropped.size == 3 * n and assembly.dof == 1


@pytest.mark.parametrize("n", [1, 3])
def test_redundancy_at_singularity(n):
    """Cranks horizontal: every bar on the x-axis; each loop may fold (parallelogram
    or antiparallelogram), one more redundant row per loop: 4N dropped, N + 1 DOF."""
    mech = n_four_bar(n)
    turn = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])   # −90° about z
    for body in mech.bodies:
        if body.name.startswith("crank"):
            mech.set_initial(body.name, origin=body.origin, axes=turn @ body.axes)
        else:   # translated with the top of the crank before it
            mech.set_initial(body.name, origin=body.origin + (LENGTH, -LENGTH, 0.0),
                             axes=body.axes)
    # the family's initial velocities were set for the upright pose: assembly says it changed them
    with pytest.warns(UserWarning, match="assembly changed requested initial velocities"):
        assembly = nc.assemble(mech.build())
    assert assembly.dropped.size == 4 * n and assembly.dof == n + 1


def crank_angle(t_end, n):
    """φ(t) of the equivalent 1-DOF pendulum (parallelogram motion), φ from the
    upward vertical towards +x: all cranks turn by φ, couplers translate;
    ``J φ̈ = m g L ((N + 1)/2 + N) sin φ`` with ``J = (N + 1) I_O + N m L²``."""
    I_O = rod_inertia(MASS, LENGTH, SECTION, axis=0)[2, 2] + MASS * (LENGTH / 2) ** 2
    J = (n + 1) * I_O + n * MASS * LENGTH**2
    k = MASS * GRAVITY * LENGTH * ((n + 1) / 2 + n) / J
    return solve_ivp(lambda t, y: [y[1], k * np.sin(y[0])], (0.0, t_end), [0.0, 1.0 / LENGTH],
                     rtol=1e-12, atol=1e-12, dense_output=True).sol


@pytest.fixture(scope="module")
def motion():
    model = n_four_bar(N).build()
    return nc.simulate(model, T, rtol=1e-8, proj_tol=PROJ_TOL, t_eval=np.linspace(0, T, 301))


def test_passes_singular_positions(motion):
    """All N + 1 cranks follow the 1-DOF pendulum through both horizontal passes
    (the parallelogram branch is kept) with residuals at proj_tol."""
    assert motion.success
    assert motion.constraint_residual.max() <= PROJ_TOL
    assert motion.velocity_residual.max() <= PROJ_TOL
    phi = crank_angle(T, N)(motion.t)[0]
    assert phi[-1] > 3 * np.pi / 2 + 0.5          # both singular positions passed
    for k in range(N + 1):
        top = motion.point(f"crank{k}", (k, LENGTH, 0.0)) - (k, 0.0, 0.0)
        angle = np.unwrap(np.arctan2(top[:, 0], top[:, 1]))
        assert np.abs(angle - phi).max() < 1e-6


def test_energy_conserved_through_singularities(motion):
    """At rtol = 1e-8 the drift is ≈ 4e-6 J of E ≈ 35.8 J (1.1e-7 relative), most of
    it accumulated while the cranks pass horizontal."""
    drift = np.abs(motion.energy - motion.energy[0]).max()
    assert drift < 3e-7 * abs(motion.energy[0])
