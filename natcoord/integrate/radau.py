"""Radau IIA of order 5 with projection: the implicit index-1 integrator for stiff mechanisms.

The three-stage collocation method (Hairer & Wanner, *Solving ODEs II*, IV.5
and IV.8) integrates ``y' = F(t, y)``, ``y = (p, v)``, ``F = (v, a(t, p, v))``
(docs/method.md#15-descriptor-form); accepted steps are projected onto the
position and velocity constraints as DOPRI5's are (VII.2). The step runs in the
compiled core (natcoord/core/src/radau.c), and so do many steps per call with their
outputs, checks and records: DOPRI5's chunked advance loop (``nc_advance_with`` of
natcoord/core/src/dopri5.c) drives Radau's step through a small table, outputs
evaluated by the collocation polynomial. This module computes the method's
coefficients, sets up the buffers and wraps the step as a stepper object. The
pieces, as in IV.8 (the RADAU5 code):

* stage increments ``Z = (z1, z2, z3)``, ``z_i = Y_i − y0``, solve
  ``Z = h (A ⊗ I) F(Z)`` by simplified Newton with one Jacobian
  ``J = ∂F/∂y = [[0, I], [K, D]]``, ``K = ∂a/∂p``, ``D = ∂a/∂v``; in the variables
  ``W = (T⁻¹ ⊗ I) Z`` that diagonalize ``A⁻¹ = T Λ T⁻¹`` the iteration
  needs one real system ``(μ/h − J)`` and one complex system
  ``((α − iβ)/h − J)``. It starts from the last step's collocation polynomial,
  watches the contraction rate θ of the increments ``‖ΔW‖`` and stops when
  ``θ/(1 − θ) ‖ΔW‖ ≤ κ·Tol``; it gives up (a smaller ``h``) when θ ≥ 0.99 or when
  the rate predicts no convergence within ``NIT = 7`` iterations;
* each system is reduced to N × N as RADAU5 reduces second-order systems:
  eliminating ``x_v = γ x_p − r_p`` leaves ``(γ² − γ D − K) x_p = r_v + (γ − D) r_p``
  (a quarter of the 2N × 2N matrix, an eighth of its LU). ``K`` and ``D`` are dense
  (``a`` is ``M⁻¹`` projected onto the constraints, which couples the bodies of a
  loop or chain), but their stiff part has low rank: a stiff spring or damper acts
  on the relative motion of two points, 3 directions. With each Jacobian the core
  finds an orthonormal basis ``U`` of the columns of ``K`` and ``γ D`` (Gram–Schmidt
  with pivoting) until what is left, ``rK + γ rD`` (largest remaining columns), is
  3% of ``γ²``; Newton then iterates with ``J_s = [[0, I], [P K, P D]]``,
  ``P = U Uᵀ``, whose N × N matrices ``γ² − U Uᵀ(γ D + K)`` invert by Woodbury's
  identity through ``r × r`` ones (``r`` the least dimension that meets the 3% at
  the step's ``γ``), factored by the core's dense LU with partial pivoting. The
  fixed point, the collocation solution, is that of Newton with ``J``; the
  neglected part slows the contraction by about its share (measured on the elastic
  hexapod, N = 156, r = 18: 2e-6 to 7e-3). Up to N = 24 (two bodies) ``U`` spans all
  of ``K``'s and ``D``'s columns: ``J`` itself, one Newton iteration for a linear
  system;
* the error of the embedded order-3 formula ``ŷ1 − y1 = γ0 h f(y0) + Σ e_i z_i``,
  filtered by ``(I − h γ0 J)⁻¹``, filtered a second time (with ``f(y0 + err)``)
  when it fails after a rejection;
* the predictive (Gustafsson) step-size controller with the safety factor
  ``fac = min(0.9, 0.9 (2 NIT + 1)/(2 NIT + iterations))``, no growth right
  after a rejection, a tenth of the step after a rejected first step;
* the Jacobian is computed only when none is kept, at the middle of the step
  (``JACOBIAN_AT`` of radau.c): on the last step's collocation polynomial
  extrapolated to ``t + h/2`` (at ``y0`` before the first step). In natural
  coordinates a stiff spring's direction turns with the bodies, by ``φ̇ h`` within
  a step; simplified Newton contracts the slower the larger the angle between J's
  spring and a stage's, and from the middle that angle is halved (RADAU5 takes J
  at ``y0``; measured below). It is kept while Newton contracts with ``θ ≤ THET``
  (RADAU5's default 0.001 for small systems, its 0.1 for costly Jacobians:
  :func:`jacobian_rate`) and recomputed after a failed Newton iteration or slow
  convergence; the LU
  factorizations are kept with ``h`` when the proposed change ``h_new/h`` lies in
  ``[1, 1.2]`` and ``J`` is kept;
* the collocation polynomial as dense output (order 3 uniformly).

This is the logic of RADAU5 (IV.8 and radau5.f), with its constants, and four
departures measured on benchmarks/stiff.py: J at the middle of the step (above: on
the elastic pendulum 167 → 156 steps, 30 → 12 rejected, end error 4.9e-8 → 8.9e-9 m;
on the elastic hexapod 9 → 7 Jacobians; fractions 0.3, 0.65, 0.8, 1 of the step gave
the pendulum 169, 163, 166, 160 steps), slow convergence is predicted from
the third Newton iteration, not the second (RADAU5's second-iteration θ is a single
ratio, which a stiff component the first increment mostly corrects inflates: on the
elastic pendulum ratios 0.6, 0.08, 0.3, … where the iteration converges; 169 steps,
32 rejected instead of 233, 92), and a failed error test alone
does not discard a Jacobian under which Newton contracted fast (RADAU5 recomputes
it, which cost the hexapod 6 of its 14 Jacobians), and the first attempt's estimate is
not filtered a second time (RADAU5 does so on the first step as after a rejection; the
second filter removes the estimate's stiff components, taking them for a start off
the slow manifold that the step damps, which a weakly damped stiff oscillation is not:
radau.c error_estimate; the elastic pendulum's first step of 0.0225 s ended 5.1
tolerances from the reference with its estimate refined from 2.25 to 0.024, and the
spring it set ringing held h near 0.003 s for 20 steps: 156 → 148 steps, end error
8.9e-9 → 1.6e-8 m; the hexapod unchanged). RADAU5 also replaces the user's
tolerance by ``0.1 rtol^(2/3)`` (an order-3 estimate read as a global tolerance);
that is not done here, ``rtol`` means what it means for DOPRI5: with it the elastic
pendulum took 146 steps (THET = 0.1) but ended 3.4e-6 m from the reference instead
of 2.4e-8 m
(tests/test_radau.py asks for 1e-6 m at rtol = 1e-6).

Evaluations: ``F`` and the projection are the core's ``nc_rhs`` and ``nc_project``
(natcoord/core/src/dopri5.c) for every model and backend, with what the core does not
compile (forces and drive laws given as Python callables, forces without a law in the
core, the ``dense``, ``superlu`` or ``cholmod`` solver) called back through the
:class:`~natcoord.dynamics.core_run.Callbacks` that DOPRI5 uses — one projection rule,
one right-hand side. ``J`` is the core's where it knows every force law and factors
itself: column by column from one factorization at its point, by the derivative
the sensitivity sweep uses (natcoord/core/src/sensitivity.c), exact for the constraint,
spring and torque terms, without Baumgarte's stabilization terms (which only slows
Newton down), body by body: a column's right-hand side from the constraint terms and
forces that read its body only (the others' derivative along it is zero; the elastic
hexapod's run 16 % faster than with every term in every column). Otherwise (a force
law in Python, a reference backend) the step calls one Python function for ``J``:
:func:`natcoord.dynamics.linearization.linearize`, which differentiates the Python
force laws (central differences of their ``apply``) and
solves with the backend. Finite differences of the hooked ``nc_rhs`` in the core would
spare that callback but not be exact: columns accurate to ~√ε of ``a``'s scale (the
stiff spring's 10⁶ N/m turns that into Newton's contraction), at 2N evaluations, each
with a KKT factorization and the Python callbacks, against one factorization and 2N
solves.

In natural coordinates a stiff spring's direction turns with the bodies, so the
Jacobian of one stage is not that of another. On the elastic pendulum
(``models.spring_pendulum``, k = 10⁶ N/m, ω = 1000 s⁻¹, rtol = atol = 1e-6, 2 s;
benchmarks/stiff.py) the run takes 148 steps, 12 rejected, where the same problem
in polar coordinates (the spring's direction fixed) takes 90 and SciPy's Radau on
this module's right-hand side and Jacobian 271. Three limits, measured (the first
two with J at the step's start, 167 steps and 30 rejected; the same picture since):

* simplified Newton contracts slowly once the spring turns by a few hundredths of
  a radian within a step (h ≳ 0.01 s at the bottom of the swing): all 32 (of 169
  steps, when measured)
  rejections are Newton failures (none an error test), when the controller, seeing
  errors of 0.01–0.05, grows h past ≈ 0.011 s; a Jacobian kept from the previous
  step (THET = 0.1) makes it worse, 218 steps and 63 rejections;
* where Newton converges, the error estimate holds h near 0.012–0.014 s at
  err ≈ 0.25–0.4 over most of the swing (median of the accepted steps 0.25; the
  controller's safety factor, lowered by Newton's 4 iterations a step to 0.75, aims
  at 0.75⁴ ≈ 0.32): ≈ 150 steps for 2 s. The estimate is neither the
  Jacobian's point (filtered with J at the step's start, middle or end: medians 0.262,
  0.264, 0.269) nor the constraints' normal directions (the estimate projected onto
  the tangent space of the position and velocity constraints: 0.262; it lies along
  the spring, a free direction, and the projection of accepted steps moves nothing
  on this model). It is the velocity
  along the spring: at the turning point t = 1.09 s (h = 0.0129 s, err = 0.36) the
  filtered estimate is 1.9e-6 m/s along the spring (scaled 1.56 and 0.85 in x, y
  against atol + rtol |v| ≈ 1.1e-6) and 6e-9 m in position — the stiff mode
  turns a position error δ along the spring into a velocity ω δ. In polar
  coordinates that direction is a coordinate of its own, which J, the filter and
  the quasi-static r(t) follow exactly. The estimate is not pessimistic: one step
  from the polar reference's state at t = 1 s (on the slow manifold, no ringing)
  ends 3.5e-6 m/s along the spring from the reference with h = 0.0125 s (scaled
  RMS 0.52; its estimate 2.0e-6 m/s, 0.29) and 1.7e-6 m/s with h = 0.0104 s: ∝ h⁴,
  Radau IIA's stage order 3 plus one, its order reduced on stiff components (Hairer
  & Wanner IV.15), while across the spring the velocity is 1.8e-9 m/s off. In
  Cartesian coordinates the stages' O(h⁴) error has a component along the spring
  (circular motion's radial derivatives), which the spring turns into a velocity;
  in polar coordinates r is nearly constant and that component vanishes. The
  accepted steps' estimates are 99.9 % this component (squared, median; the ball's
  constraints read only its axes, whose estimate is zero);
* the first step (0.0225 s from ``initial_step``) ended with a velocity along the
  spring 2.8e-5 m/s off the polar solution's (5.1 tolerances) while RADAU5's
  refined estimate read 0.024, and the spring's ringing held h near 0.003 s until
  t ≈ 0.13 s, ≈ 20 steps; judged by the filtered estimate (2.25) the first attempt
  is rejected and the retry, 0.00225 s, starts no ringing: 0.15 s in 13 steps
  instead of 21 (the departure above).

RADAU5's tolerance transformation (above; measured with THET = 0.1) took it to
146 steps with a 140× larger error, and its Newton accuracy alone (κ·Tol of its
transformed tolerance expressed in the user's, ≈ 0.03 against 1e-3 here) to 143 steps
with the ball 1.1e-6 m off at 2 s instead of 8.9e-9 m; 120 steps are not reached
by RADAU5's logic in these coordinates (err at h = 0.0167 s, 2 s / 120, would be
≈ 0.33 (0.0167/0.0125)⁴ ≈ 1.1, and the true local error above ≈ 1.6 tolerances).
RADAU5's step-size freedom does not reach it either: with its largest safety factor,
0.9 (one Newton iteration), imposed on every step the run takes 139 steps (13 rejected),
and past it (1.0, 1.1: no longer RADAU5) 146 and 133 with 51 and 60 rejections, Newton
failing as h grows (below). Why J is formed on almost every step, and why that is
cheaper here than keeping it (measured with timers in radau.c, shares of the run): a
Jacobian costs 5.9 µs and its stiff basis 2.7 µs (together 45 % of the run), a Newton
iteration 2.4 µs (its three evaluations 1.4 µs; the iterations 50 %), so a J kept pays
only if it costs fewer than ≈ 3.5 extra iterations. With a fresh J from the middle of
the step Newton contracts with θ ≈ 0.04–0.06 over the swing (0.002 at the turning
points): the stages' spring directions differ from J's by ≈ φ̇ h/2, and an error along
the spring becomes, through J's error k/m·angle, one across it damped only by |γ²|, so
θ ≈ ω·angle·h/4 ∝ ω φ̇ h². Its first increment is 40–50 in the scaled norm (≈ 300 in
the velocity along the spring at the bottom of the swing): the last step's inner stage
values are off along the spring by ≈ 1e-5 m/s (stage order 3) and the extrapolated
collocation polynomial amplifies that; so 3.7 iterations an attempt at κ·Tol = 1e-3
(κ·Tol = 0.01: 3.2, and the ball ends 7.9e-7 m off). A J one step old triples the
angle (θ ≈ 0.15–0.2): with THET = 0.1 Newton fails at the third iteration's prediction
(211 steps, 52 rejected, 926 iterations); retried at the same h with a fresh J, 90 of
≈ 140 attempts with a kept J fail; predicting nothing before the last iteration, 182
steps, 18 rejected, 63 Jacobians, 837 iterations: 82 Jacobians fewer for 246
iterations and 34 steps more, no cheaper.

The coefficients ``T, Λ, e`` are computed from the Butcher tableau at import
(``T`` from the eigenvectors of ``A⁻¹``, ``e`` from the order conditions of
the embedded formula with ``γ0 = 1/μ``) and handed to the core.

    stepper = Radau(model, t_bound=1.0, rtol=1e-8)
    while stepper.status == "running":
        record = stepper.step()
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import engine
from ..dynamics import core_run as cc
from ..dynamics.assembly import assemble
from ..dynamics.linearization import linearize
from ..dynamics.workspace import Workspace
from ..linalg.base import DROP_TOL, HOLD_TOL
from ..model.core_tables import make_tables
from ..util.resources import check_memory
from .base import EPS_FLOOR, StepRecord, initial_step
from .stepper import SEGMENTS, CoreStepper

# ------------------------------------------------------------ coefficients (IV.5, Table 5.6)
S6 = np.sqrt(6.0)
A = np.array([[(88 - 7 * S6) / 360, (296 - 169 * S6) / 1800, (-2 + 3 * S6) / 225],
              [(296 + 169 * S6) / 1800, (88 + 7 * S6) / 360, (-2 - 3 * S6) / 225],
              [(16 - S6) / 36, (16 + S6) / 36, 1 / 9]])
C = A.sum(axis=1)                                       # (4 − √6)/10, (4 + √6)/10, 1


def _transformation(A):
    """``T, Λ`` with ``A⁻¹ = T Λ T⁻¹``, ``Λ = [[μ, 0, 0], [0, α, β], [0, −β, α]]``.

    Normalized as RADAU5's: the real eigenvector of unit length with positive
    entries, the complex one with last entry 1 (third row of ``T``: ``(T31, 1, 0)``).
    The Newton increments are measured in these variables ``W``, so the scaling
    fixes what the contraction rate and the stopping test see.
    """
    lam, V = np.linalg.eig(np.linalg.inv(A))
    real, upper = np.argmin(np.abs(lam.imag)), np.argmax(lam.imag)
    v_real = V[:, real].real / np.linalg.norm(V[:, real].real)
    v_real *= np.sign(v_real.sum())
    v_complex = V[:, upper] / V[2, upper]
    T = np.column_stack([v_real, v_complex.real, v_complex.imag])
    return T, np.linalg.inv(T) @ np.linalg.inv(A) @ T


T, LAMBDA = _transformation(A)
TI = np.linalg.inv(T)
MU = LAMBDA[0, 0]                                       # real eigenvalue of A⁻¹, 1/γ0
MU_COMPLEX = LAMBDA[1, 1] - 1j * LAMBDA[1, 2]           # α − iβ
#: ``e`` of the embedded formula: ``b̂`` of order 3 with ``b̂0 = γ0``, ``e = (b̂ − b)ᵀ A⁻¹``
E = (np.linalg.solve(np.vander(C, 3, increasing=True).T, [1 - 1 / MU, 1 / 2, 1 / 3])
     - A[2]) @ np.linalg.inv(A)
#: ``Z = V Q`` with ``V_ik = c_i^(k+1)``: the collocation polynomial ``u(t0 + θh) = y0 + Σ θ^(k+1) Q_k``
P = np.linalg.inv(np.vander(C, 4, increasing=True)[:, 1:])

#: status of an attempt the core returns (natcoord.dynamics.core_run's codes; −1: step-size
#: underflow)
ACCEPTED, REJECTED, MAX_ATTEMPTS, UNDERFLOW = cc.ACCEPTED, cc.REJECTED, cc.MAX_ATTEMPTS, -1

#: the method's coefficients as the core reads them (radau.h: coef): T, T⁻¹, μ, α, β,
#: e, P, c
COEFFICIENTS = np.concatenate([T.ravel(), TI.ravel(), [MU, LAMBDA[1, 1], LAMBDA[1, 2]], E,
                               P.ravel(), C])
#: Newton iterations per attempt (Hairer's NIT; radau.c's NEWTON_MAXITER)
NEWTON_MAXITER = 7
#: Newton contraction rate up to which J is kept for the next step (Hairer's THET):
#: RADAU5's default, 0.001, "for small systems", and its 0.1 "when Jacobian evaluations are
#: costly". Small here: a Jacobian (one evaluation and 2N directional solves on its
#: factorization, each about half an evaluation: 6 µs against 0.5 µs for one body) costs
#: no more than the 3 NIT evaluations of an attempt's Newton iterations, ``1 + N ≤ 21``,
#: and the core computes it. Measured (Radau's steps alone, rtol 1e-6): elastic pendulum
#: (N = 12) 0.001: 169 steps, 32 rejected, 169 Jacobians, 3.5 ms; 0.1: 218, 63, 90,
#: 4.9 ms (a Jacobian one step old has a spring direction turned by φ̇ h ≈ 0.03 rad);
#: driven hexapod (N = 156, 1 s) 0.001: 39 Jacobians in 40 steps, 0.37 s; 0.1: 1 in 42,
#: 0.067 s; six-bar (N = 60) 0.036 s against 0.017 s. Again with J at the middle of the
#: step (radau.c JACOBIAN_AT), the elastic pendulum's cost split: a Jacobian 8 µs (the
#: core's radau_jacobian: one evaluation and 24 directional derivatives with their
#: solves; its stiff basis ≈ 1.5 µs more), an evaluation ≈ 0.45 µs, a Newton iteration
#: three of them and the solves, an LU of the 3 × 3 matrices below 0.2 µs; THET 0.001,
#: 0.01, 0.02, 0.03, 0.05, 0.1: 156, 151, 151, 151, 177, 216 steps, 12, 13, 12, 12, 32,
#: 59 rejected, 152, 139, 133, 125, 100, 81 Jacobians, 2.20, 2.10, 2.09, 2.05, 2.18,
#: 2.40 ms (benchmarks/stiff.py's run): at most 7 % below 0.001, the size of the shared
#: machine's noise, and a cliff past 0.03, where Newton's failures return; 0.001 kept
JAC_RATE_SMALL, JAC_RATE_COSTLY = 0.001, 0.1


def jacobian_rate(n_coords, core):
    """THET for a model of ``n_coords`` coordinates (:data:`JAC_RATE_SMALL` where a
    Jacobian is as cheap as an attempt's Newton evaluations, :data:`JAC_RATE_COSTLY`
    otherwise, or where Python computes it, ``core`` False: 2N KKT solves from Python)."""
    small = core and 1 + n_coords <= 3 * NEWTON_MAXITER
    return JAC_RATE_SMALL if small else JAC_RATE_COSTLY


#: the buffers of a run (natcoord/core/src/radau.h)
RadauBuffers = namedtuple("RadauBuffers", [
    "ctrl", "counts", "coef", "y", "f", "yold", "Q", "K", "D", "lu", "piv", "luc", "pivc",
    "Z", "W", "F", "dW", "scale", "err", "point", "value", "b", "bc", "ja", "jlam", "jF",
    "js", "jmu", "je", "jzero", "jda", "basis", "Kb", "Db", "KU", "DU", "Mt", "cn", "res", "bw",
    "jlanes", "weights", "jterms"])
#: ctrl (float64), as radau.h numbers it
(T_NOW, H, RTOL, ATOL, PROJ_TOL, MAX_STEP, T_BOUND, NEWTON_TOL, JAC_RATE, H_LU, H_ACC,
 ERR_ACC, FACCON, THETA, T_OLD, H_OLD, ERR, HAVE_J, JAC_CURRENT, HAVE_LU, HAVE_DENSE,
 REJECTED_LAST, RANK, RANK_LU) = range(24)
N_CTRL = 24
#: counts (int64): Jacobians, LU decompositions, Newton iterations
N_JACOBIANS, N_LU, N_NEWTON = range(3)


#: bytes per N² of the buffers (float64): K, D, the LU factors (real; complex as real and
#: imaginary parts), the stiff subspace's basis, Uᵀ K, Uᵀ D, Uᵀ K U, Uᵀ D U and its
#: scratch (2 N²)
NEWTON_BYTES = 8 * (2 + 3 + 5 + 2)


def make_buffers(model):
    """A run's :data:`RadauBuffers` (N = ``model.n_coords``, m = ``model.n_rows``), the
    weight table's constant rows filled. The Newton matrices are dense N × N: a
    ``ValueError`` names the model's size if they would not fit in memory."""
    N, m = model.n_coords, model.n_rows
    check_memory(NEWTON_BYTES * N * N,
                 f"Radau's dense Newton matrices for model {model.name!r} ({N} coordinates)",
                 "their Jacobian (2 N KKT solves) and its stiff basis (O(N² r)) would also "
                 "take hours: integrate with method='dopri5'")
    z, L = np.zeros, engine.LANES           # the Jacobian's columns per directional pass
    tables = make_tables(model)             # one body's terms at most (jterms)
    R = RadauBuffers(ctrl=z(N_CTRL), counts=np.zeros(3, np.int64), coef=COEFFICIENTS.copy(),
                     y=z(2 * N), f=z(2 * N), yold=z(2 * N), Q=z((3, 2 * N)), K=z((N, N)),
                     D=z((N, N)), lu=z((N, N)), piv=np.zeros(N, np.int64),
                     luc=z((2, N, N)), pivc=np.zeros(N, np.int64), Z=z((3, 2 * N)),
                     W=z((3, 2 * N)), F=z((3, 2 * N)), dW=z((3, 2 * N)), scale=z(2 * N),
                     err=z(2 * N), point=z(2 * N), value=z(2 * N), b=z(N), bc=z((2, N)),
                     ja=z(N), jlam=z(m), jF=z((L, N)), js=z((L, m)), jmu=z(m), je=z((L, N)),
                     jzero=z((L, N)), jda=z((L, N)), basis=z((N, N)), Kb=z((N, N)),
                     Db=z((N, N)), KU=z((N, N)), DU=z((N, N)), Mt=z((2 * N, N)),
                     cn=z((2, 2 * N)), res=z((2, N + 1)), bw=z((4, N)),
                     jlanes=z(L * (3 * N + m)), weights=z((model.n_weights, 3)),
                     jterms=np.zeros(tables.quad_row.size + tables.lin_row.size
                                     + tables.force_kind.size, np.int64))
    model.tables.weight_table(0.0, R.weights)
    return R


def make_segments(model, capacity):
    """The segments of :meth:`Radau.advance` (``engine.radau_advance``) for ``capacity``
    steps' collocation polynomials: ``(t_old, h)`` (c, 2), ``y_old`` (c, 1, 2 N) and
    ``Q`` (c, 3, 2 N)."""
    n2 = 2 * model.n_coords
    return np.zeros((capacity, 2)), np.zeros((capacity, 1, n2)), np.zeros((capacity, 3, n2))


class DenseOutput:
    """The collocation polynomial of one Radau step (order 3, IV.8), evaluated by the
    core (``radau_interpolate``: what the core's outputs evaluate)."""

    def __init__(self, t_old, h, y_old, Q):
        self.t_old, self.t, self.h = t_old, t_old + h, h
        self.y_old, self.Q = y_old, Q

    def __call__(self, t):
        """``y`` (2 N,) at time ``t``, (k, 2 N) at times (k,) (unprojected; extrapolates
        outside the step): ``y_old + Σ θ^(k+1) Q_k``, ``θ = (t − t_old)/h``."""
        theta = (np.asarray(t, float) - self.t_old) / self.h
        out = np.empty(theta.shape + self.y_old.shape)
        engine.radau_interpolate(self.y_old, self.Q, np.ascontiguousarray(theta.reshape(-1)), out)
        return out


def _control(index, doc=None):
    return property(lambda self: float(self._R.ctrl[index]), doc=doc)


class Radau(CoreStepper):
    """Radau IIA (order 5) with projection, one accepted step per :meth:`step`, many per
    :meth:`advance` (the core's chunked loop, DOPRI5's).

    Arguments as :func:`natcoord.integrate.simulate.simulate` (``solver`` names the KKT
    backend, or is a :class:`~natcoord.linalg.base.KKTSolver` of the model to share);
    ``state``: a consistent initial :class:`~natcoord.model.frozen.State`
    (default ``assemble(model, t=t0).state``). The
    :class:`~natcoord.integrate.base.Stepper` interface (``advance`` the core's, as
    :class:`~natcoord.integrate.stepper.DOPRI5`'s):
    ``t``, ``y`` ((2 N,) = (p, v), read-only view), ``h``, ``status``, ``message``,
    :meth:`rhs`, :meth:`project`, :meth:`observe` (the core's, with what it does not
    compile called back, as :class:`~natcoord.integrate.stepper.DOPRI5`'s), ``dropped``,
    counters ``n_steps n_rejected n_rhs n_factorizations n_projection_iterations
    n_active_set_changes`` and ``n_jacobians``, ``n_lu`` (LU decompositions of the r × r
    Newton matrices, real and
    complex counted apart), ``n_newton_iterations``; ``n_rejected`` counts failed error
    tests and Newton iterations that did not converge. ``compiled``: nothing is called
    back; ``failure``: the status of a failed step.
    """

    def __init__(self, model, t_bound, rtol=1e-6, atol=None, proj_tol=1e-10, state=None,
                 t0=0.0, first_step=None, max_step=np.inf, projection="position+velocity",
                 baumgarte=(10.0, 10.0), drop_tol=DROP_TOL, hold_tol=HOLD_TOL, solver="block",
                 forces=()):
        self._R = R = make_buffers(model)            # refused first if it cannot fit
        self._set_up(model, solver, forces, projection, proj_tol, baumgarte, drop_tol,
                     hold_tol)
        self.n = n = model.n_coords
        hooks = self._hooks
        # J from Python where the core misses a force law or does not factor itself
        python_jacobian = hooks is not None and (hooks.forces is not None or
                                                 hooks.solver is not None)
        if python_jacobian:
            self.ws = Workspace(model, self.solver.name, drop_tol, hold_tol)
            self.ws.extra_forces = tuple(forces)       # the run's joint torques, in J too
        self._jacobian = self._python_jacobian if python_jacobian else None
        if state is None:
            state = assemble(model, t=t0).state
        t0 = float(state.t)
        if not t_bound > t0:
            raise ValueError(f"t_bound ({t_bound}) must be greater than t0 ({t0})")
        atol = rtol if atol is None else atol
        self.rtol, self.atol = rtol, atol
        self.max_step, self.t_bound = max_step, float(t_bound)
        self._R_packed = engine.pack(R, "R")
        c = R.ctrl
        c[RTOL], c[ATOL], c[PROJ_TOL], c[MAX_STEP], c[T_BOUND] = rtol, atol, proj_tol, \
            max_step, t_bound
        # Hairer's Newton tolerance (fnewt) relative to the error scale
        c[NEWTON_TOL] = max(10 * np.finfo(float).eps / rtol, min(0.03, rtol ** 0.5))
        c[JAC_RATE] = jacobian_rate(n, not python_jacobian)
        c[FACCON], c[THETA] = 1.0, c[JAC_RATE]
        c[T_NOW] = c[T_OLD] = t0
        R.y[:n], R.y[n:] = state.p, state.v
        self.n_steps = self.n_rejected = 0
        self.status, self.message, self.failure = "running", "", None
        R.f[:] = self.rhs(t0, R.y)
        h = first_step or initial_step(self.rhs, t0, R.y.copy(), R.f.copy(), rtol, atol,
                                        t_bound - t0)
        c[H] = min(h, max_step)
        self._y_view = R.y.view()
        self._y_view.flags.writeable = False

    # ------------------------------------------------------------ state
    t = _control(T_NOW)
    t_old = _control(T_OLD, "Start of the last accepted step.")
    h = _control(H, "Step size the next attempt starts from.")

    @property
    def y(self):
        return self._y_view

    n_jacobians = property(lambda self: int(self._R.counts[N_JACOBIANS]))
    n_lu = property(lambda self: int(self._R.counts[N_LU]))
    n_newton_iterations = property(lambda self: int(self._R.counts[N_NEWTON]))

    @property
    def n_factorizations(self):
        """KKT factorizations (evaluations, Jacobians and projections)."""
        python = self.ws.n_factorizations if self._jacobian is not None else 0
        return int(self._S.counts[cc.N_FACT]) + python

    # ------------------------------------------------------------ Jacobian
    def jacobian(self, t, y):
        """``J = [[0, I], [∂a/∂p, ∂a/∂v]]`` (2 N, 2 N) at ``(t, y)``, as the step computes it
        (the core's, or :func:`~natcoord.dynamics.linearization.linearize`)."""
        R, n = self._R, self.n
        R.point[:] = y
        if self._hooks is not None:
            self._hooks.failure = ""
        status = engine.radau_jacobian(*self._packed, self._hooks, self._R_packed, self._mode,
                                       float(t), self._jacobian)
        if status:
            raise self._error(status, t)
        J = np.zeros((2 * n, 2 * n))
        J[:n, n:] = np.eye(n)
        J[n:, :n], J[n:, n:] = R.K, R.D
        return J

    def _python_jacobian(self, t):
        """The core's Jacobian callback (radau.c) for a model with force laws written in
        Python or a reference backend: ``R.K, R.D`` at ``(t, R.point)`` by
        :func:`~natcoord.dynamics.linearization.linearize` (which differentiates the Python
        force laws and solves with the backend), with the rows the core dropped last;
        0, or a step failure a smaller step may cure (its reason in the hooks' ``failure``)."""
        R, n = self._R, self.n
        y = R.point.copy()
        self.ws.dropped = self.dropped
        try:
            lin = linearize(self.model, (t, y[:n], y[n:]), workspace=self.ws)
        except FloatingPointError as exc:          # a force's NaN, as the hooks' forces
            self._hooks.failure = str(exc)
            return cc.NON_FINITE
        except np.linalg.LinAlgError as exc:       # the backend could not factor
            self._hooks.failure = str(exc)
            return cc.SOLVER_FAILED
        R.K[:], R.D[:] = lin.da_dp, lin.da_dv
        return 0

    # ------------------------------------------------------------ stepping
    def step(self, max_attempts=1_000_000):
        """Advance by one accepted step (rejected attempts retried inside).

        Returns a :class:`~natcoord.integrate.base.StepRecord`; on failure (step-size
        underflow, an evaluation that keeps failing, ``max_attempts``
        attempts) ``status`` becomes ``"failed"`` and the state stays at the
        last accepted step. A callback's exception propagates.
        """
        if self.status != "running":
            raise RuntimeError(f"step() on a {self.status} stepper")
        t, c = self.t, self._R.ctrl
        if self._hooks is not None:
            self._hooks.failure = ""
        status, rejected = engine.radau_step(*self._packed, self._hooks, self._R_packed,
                                             self._mode, max_attempts, EPS_FLOOR,
                                             self._jacobian)
        self.n_rejected += rejected
        err = float(c[ERR])
        if status == ACCEPTED:
            self.n_steps += 1
            if self.t >= self.t_bound:
                self.status = "finished"
            return StepRecord(t, self.t, float(c[H_OLD]), err, rejected, "accepted")
        self._failed(status, max_attempts)
        return StepRecord(t, t, 0.0, err, rejected, "failed", self.message)

    # ------------------------------------------------------------ many steps
    def _check_sweep(self, sweep):
        if sweep is not None:
            raise ValueError("the sensitivity sweep differentiates the DOPRI5 stepper's "
                             "steps")

    def _make_segments(self, steps):
        return make_segments(self.model, steps)

    def _advance(self, options, dense, capacity, sweep):
        """``engine.radau_advance``: the chunked loop of DOPRI5 (``nc_advance_with``)
        with Radau's steps and collocation polynomial."""
        segments = self._segment_space(min(capacity, SEGMENTS) * dense)
        *progress, error = engine.radau_advance(
            *self._packed, self._hooks, self._R_packed, self._mode, self._jacobian, self._W1,
            *options, *segments)
        return (*progress, segments, None, error)

    @staticmethod
    def _piece(seg_t, seg_y, seg_Q, k):
        return DenseOutput(float(seg_t[k, 0]), float(seg_t[k, 1]), seg_y[k, 0].copy(),
                           seg_Q[k].copy())

    def _previous(self):
        return self.t_old, self._R.yold.copy()

    def dense_output(self):
        """The collocation polynomial of the last accepted step (a :class:`DenseOutput`)."""
        R = self._R
        if R.ctrl[HAVE_DENSE] == 0:
            raise RuntimeError("dense_output() needs an accepted step")
        return DenseOutput(float(R.ctrl[T_OLD]), float(R.ctrl[H_OLD]), R.yold.copy(),
                           R.Q.copy())
