"""Trajectory sensitivities by internal numerical differentiation (issue 10, item 2;
docs/method.md#18-sensitivities).

Bock's internal numerical differentiation, done analytically: the exact
derivative of the discrete map that :func:`~natcoord.simulate` computes, with
its accepted step sizes frozen. One step of DOPRI5 from the projected state
``y = (p, v)`` and its derivative along a direction ``dy`` and a parameter ``θ``:

    Y_s = y + h Σ_j a_sj K_j,      K_s = (v_s, a(t + c_s h, Y_s; θ))
    dY_s = dy + h Σ_j a_sj dK_j,   dK_s = (dv_s, ∂a/∂(p, v) dY_s + ∂a/∂θ)

with, per stage and direction, one solve with the stage's factorization

    [[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ;  dγ − dG a].

The new state ``y + h Σ b_j K_j`` is projected onto ``g = 0``, ``G v + g_t = 0``;
its derivative is the projection of ``dp`` onto the tangent space and of ``dv`` onto
the linearized velocity constraint at the projected point ``p⁺``, along
``M⁻¹ G̃ᵀ``: the KKT matrix is stage 6's, factored at the unprojected end point (FSAL:
``Y_6 = y + h Σ b_j K_j``), a distance δ (the local error) from ``p⁺`` — the
factorization the integrator's simplified Newton projects with. Its right-hand sides
``G(p⁺) dp`` and ``G(p⁺) dv + ∂(G v + g_t)/∂p dp⁺`` are evaluated at ``p⁺``, so
``G(p⁺) dp⁺`` is O(δ) times the incoming ``G dp``, itself O(δ): the derivative is
that of a projection factored at ``p⁺`` up to O(δ²), below the O(δ) terms both
neglect (``∂G̃ᵀ/∂y μ``, see
:meth:`~natcoord.dynamics.linearization.LinearizationPoint.projection_derivative`);
measured, the same to round-off. A step whose projection factored again (its
Newton contracted too slowly on stage 6's factorization:
:data:`~natcoord.dynamics.core_run.FactorStore` ``refactored``), and the dense
output between steps, are projected with a factorization at their own point from
the dropped rows of the step's stage 6. FSAL as in the integrator: the next step's
``K_0`` is ``(v⁺, a)`` of the last stage, ``dK_0 = (dv⁺, da_6)``. Outputs between
steps differentiate the (linear) dense output formula and then the projection. Rows
dropped as redundant stay dropped: the dropped rows are the stepper's.

The sweep is the core's (``natcoord/core/src/sensitivity.c``, ``advance_swept``):
it rides along the forward run inside the stepper's compiled chunks, a few steps
behind, reusing the stage factorizations and multipliers the stepper kept for it
(:data:`STORE_BYTES` worth of steps at a time). The right-hand sides:

* ``dγ − dG a`` and ``dGᵀ λ`` (``dG v + dg_t`` for the projection): the
  constraint kernel's terms differentiated in one pass (bilinear, exact);
* the built-in applied forces' exact derivative (``nc_force_derivative``,
  natcoord/core/src/forces.c, beside their laws); gravity and constant point
  forces do not vary;
* parameters (:func:`natcoord.dynamics.linearization.parameter_direction`): a
  constant ``df`` and ``dJ4`` per column (mass, inertia, gravity, the scale of a
  constant point force), the tension's derivative ``∂T/∂k = l − l0``,
  ``∂T/∂c = l̇``, ``∂T/∂l0 = −k`` of a spring, or the scale of a constant torque,
  whose ``df = ½ τ × e_k`` moves with the body's axes.

What the core does not compile it takes through the hooks (:class:`SweepHooks`,
``nc_hooks``) as the forward step does: the weight table of drive laws written in
Python; the derivative of forces written in Python (central differences of their
``apply``, :func:`~natcoord.dynamics.linearization.python_force_derivative`, the
law :func:`~natcoord.linearize` uses); a drive parameter's ``∂W/∂θ``
(:func:`~natcoord.model.drives.parameter_weights`), whose kernel terms join the
stage's right-hand side and ``∂g/∂θ``, ``∂(G v + g_t)/∂θ`` the projection's; and a
reference backend's factor and solve (``solver="dense"|"superlu"|"cholmod"``), whose
stage factorizations the stepper does not keep: the sweep factors each stage again
at its point, from the dropped rows the stage had. A block solver that refines its
solves (a large mass spread) is swept as the core steps with it: without
refinement. Those columns go one at a time through the hooks' solve; built-in
models with the block solver pass no hooks.

A function beside ``simulate`` rather than an option of it: ``simulate`` only hands
its chunks to the sweep. A failed or interrupted run keeps what the sweep reached:
the exception's ``.sensitivities``.
"""
from __future__ import annotations

import time
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..core import engine
from ..dynamics.linearization import (drive_parameter_weights, linearization_point,
                                      parameter_direction, python_force_derivative)
from ..dynamics.workspace import Workspace
from ..dynamics import core_run as cc
from ..integrate.base import IntegrationError, SimulationInterrupted
from ..integrate.simulate import simulate
from ..dynamics.core_run import Callbacks
from ..linalg.base import DROP_TOL, HOLD_TOL
from ..linalg.blockldl import block_plan, make_work
from ..model.core_tables import make_tables
from ..model.forces import Torque
from ..model.parameters import loads, parameter_value

#: directions of the initial state (columns: a basis of the tangent space)
INITIAL = ("p0", "v0")

#: memory for the stage factorizations of one round of steps (``advance_swept``):
#: small enough to be read back from the cache (L2), and to stay mapped between runs:
#: at 1 MiB every six-bar run faulted its pages in afresh (3 % of its sweep). On the
#: sprung hexapod (251 KB a step: one step a round) rounds of 2 or 4 steps (512 KiB,
#: 1 MiB) made the one-column run slower, by 3 and 4 % of a forward run (2026-11-29)
STORE_BYTES = 2 ** 18

#: spring parameters: index in ``Directions.spring_kind`` (sensitivity.c's enum)
SPRING_KINDS = ("stiffness", "damping", "rest_length")

#: per column: constant ``df`` (4 n, 3), the body of ``dJ4`` (−1: none) and
#: ``dJ4`` (4, 4), the spring (−1: none) and which of its parameters, the
#: constant torque whose scale it is (−1: none; its force moves with the axes),
#: 1 for a drive parameter (its ``∂W/∂θ`` from :class:`SweepHooks`).
#: Field order as the core's (``natcoord/core/src/sensitivity.h``, ``D_*``).
Directions = namedtuple("Directions", ["df", "body", "dJ4", "spring", "spring_kind",
                                       "torque", "drive"])

#: the sweep's buffers: the weight table, a stage point ``y`` (2N,), the stage
#: derivatives ``dK`` (c, 7, 2N), directions (c, 2N): ``dy`` at the last step's end,
#: ``dyold`` at its start, the stage's ``dys``, the step's ``dynew`` before projection,
#: the dense output's ``dout``; the right-hand sides ``F`` (c, 4 n, 3), ``s`` (c, m) of
#: all columns of a stage and the multipliers' scratch ``mu``; the ``clock``; scratch
#: ``lanes`` of the directional pass (two directions or more) and of the projection's
#: solves; the drive columns' weight tables ``dW`` (c, n_weights, 3) and their
#: kernel's scratch ``Gw`` (nnz, 3), ``gw`` (4, m), ``fw`` (4 n, 3). The stage's
#: accelerations and multipliers are read where the stepper left them (segments, store).
#: Field order as the core's (``sensitivity.h``, ``K_*``).
Work = namedtuple("Work", [
    "W", "y", "dK", "dy", "dys", "dyold", "dynew", "dout",
    "F", "s", "mu", "clock", "lanes", "dW", "Gw", "gw", "fw"])

#: directions side by side in the core's directional pass (sensitivity.h, NC_LANES)
LANES = engine.LANES

#: ``Work.clock``: the last step's start, size and end; 1 once the first step is swept
T_OLD, STEP, T_NEW, STARTED = range(4)


@dataclass(frozen=True)
class Sensitivities:
    """A solution and the derivatives of its outputs.

    ``solution``: the :class:`~natcoord.Solution` at the outputs (k of them);
    ``dp``, ``dv`` (k, 12 n, c): ``∂p(t)/∂θ_j``, ``∂v(t)/∂θ_j`` for the columns
    ``columns`` (c labels: ``"p0[i]"``, ``"v0[i]"`` and the parameter names);
    ``basis``: for ``"p0"``/``"v0"`` the (12 n, d) tangent directions ``Z`` the
    columns start from (see :func:`sensitivities`); ``stats``: ``time`` (wall
    time of the forward run and its sweep) and ``steps``.
    """

    solution: object
    columns: tuple
    dp: np.ndarray
    dv: np.ndarray
    basis: dict
    stats: dict

    def point(self, body, point, local=False):
        """``∂r/∂θ`` (k, 3, c) of a body point (``r = C(r̄) p``, §1.1)."""
        expr = self.solution.model.point_expression(body, point, local)
        dX = self.dp.reshape(self.dp.shape[0], -1, 3, self.dp.shape[2])
        return sum(c * dX[:, s] for s, c in expr.terms.items())


def sensitivities(model, t_end, params=INITIAL, t_eval=None, **options):
    """Solution of ``simulate(model, t_end, t_eval=t_eval, **options)`` and
    ``∂(p, v)(t)/∂θ`` at its outputs (module docstring).

    ``params``: names among ``"p0"``, ``"v0"`` and the model parameters of
    :func:`~natcoord.dynamics.linearization.parameter_direction` (``mass:<body>``,
    ``inertia:<body>``, ``gravity:x|y|z``, ``stiffness:<k>``, ``damping:<k>``,
    ``rest_length:<k>``, ``load:<k>``, ``drive:<joint>:<parameter>``). The
    initial state (``initial_state`` or ``assemble(model).state``) is held fixed
    for model parameters; a drive parameter moves the constraint manifold, so
    its initial direction is that of the initial state's projection onto it.

    ``"p0"`` gives d columns, d = dim ker G(p0) (kept rows): the initial
    direction ``(dp0, dv0) = (z_i, w_i)`` with ``Z = (z_1 … z_d)`` an
    M-orthonormal basis of the tangent space (``Zᵀ M Z = 1``) and ``w_i`` the
    M-smallest velocity change that keeps ``G v + g_t = 0`` to first order (the
    derivative of the projection). ``"v0"`` gives d columns ``(0, z_i)``. A
    tangent perturbation ``δp0`` has the coordinates ``Zᵀ M δp0``.

    Only ``method="dopri5"`` with ``projection="position+velocity"`` (the
    defaults) is differentiated, for every model and KKT backend: the core's sweep
    rides along the one forward run, in the same compiled call, a few steps behind
    it (module docstring). Returns :class:`Sensitivities`. A failed or interrupted
    run raises as ``simulate`` does, the exception also carrying
    ``.sensitivities``, those of its partial solution (NaN at a record the sweep
    did not reach; None if no step was taken).
    """
    if options.get("projection", "position+velocity") != "position+velocity":
        raise ValueError(f"sensitivities: projection={options['projection']!r} is not "
                         f"supported; only 'position+velocity' is differentiated")
    if options.get("u") is not None:
        raise ValueError("sensitivities: joint torques u= are not differentiated; model "
                         "the load as a force of the model")
    if options.get("method", "dopri5") != "dopri5":
        raise ValueError(f"sensitivities: method={options['method']!r} is not supported; "
                         f"only the steps of 'dopri5' are differentiated")
    params = _checked(model, params)
    tols = options.get("drop_tol", DROP_TOL), options.get("hold_tol", HOLD_TOL)
    tangent = _Tangent(Workspace(model, options.get("solver"), *tols), params)
    start = time.perf_counter()
    try:
        solution = simulate(model, t_end, t_eval=t_eval, _sweep=tangent, **options)
    except (IntegrationError, SimulationInterrupted) as exc:
        exc.sensitivities = tangent.partial(exc.solution, start)
        if exc.sensitivities is not None:
            exc.args = (f"{exc.args[0]}; the sensitivities reached on .sensitivities",)
        raise
    stats = {"time": time.perf_counter() - start, "steps": solution.stats["steps"]}
    return _sensitivities(solution, tangent.columns, tangent.result(solution), tangent.basis,
                          stats)


def _sensitivities(solution, columns, d_out, basis, stats):
    """:class:`Sensitivities` from the derivatives ``d_out`` (k, c, 2N) at the records."""
    n = solution.model.n_coords
    return Sensitivities(solution, columns, d_out[:, :, :n].transpose(0, 2, 1),
                         d_out[:, :, n:].transpose(0, 2, 1), basis, stats)


class _Tangent:
    """The sweep riding along the forward run (``simulate``'s ``_sweep``): the
    initial directions at its first state (:meth:`start`), then the stepper's rounds
    of steps, each differentiated with the stage factorizations the stepper kept
    (:meth:`advance`, in place of the stepper's own chunk call)."""

    def __init__(self, ws, params):
        self.ws, self.params = ws, params
        self.sweep = None                          # until start()
        self._parts = []

    def start(self, t, y):
        self.t0 = t
        self.columns, self.dy0, thetas, self.basis = _initial_directions(self.ws, t, y,
                                                                         self.params)
        self.sweep = Sweep(self.ws, self.dy0, thetas)

    def advance(self, args, repeat=True):
        """:meth:`Sweep.advance`, keeping the derivatives."""
        out = self.sweep.advance(args, repeat)
        self._parts.append(out[-2])
        return out

    def result(self, solution):
        """The derivatives (k, c, 2N) at ``solution``'s records: ``dy0`` at an initial
        record (recorded before the first step), then the swept ones."""
        initial = solution.t.size - sum(part.shape[0] for part in self._parts)
        if initial not in (0, 1):
            raise RuntimeError(f"sensitivities: {solution.t.size - initial} derivatives for "
                               f"{solution.t.size} records")
        parts = [self.dy0[None]] * initial + self._parts
        # one copy at most (each new array of a long run faults its pages in)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def partial(self, solution, start):
        """:class:`Sensitivities` of a failed run's partial ``solution``, or None if it
        failed before the first step: the swept records, then the last accepted
        state (where the sweep stands), NaN at any record it did not reach."""
        if self.sweep is None:
            return None
        swept = self._swept()
        if solution.t.size and solution.t[0] == self.t0:      # recorded before any step
            swept = np.concatenate([self.dy0[None], swept])
        d_out = np.full((solution.t.size,) + self.dy0.shape, np.nan)
        k = min(swept.shape[0], solution.t.size)
        d_out[:k] = swept[:k]
        for t, dy in self.sweep.last_step():       # a final record at the last step's ends
            if k < solution.t.size and solution.t[k] == t:
                d_out[k] = dy
        stats = {"time": time.perf_counter() - start, "steps": solution.stats["steps"]}
        return _sensitivities(solution, self.columns, d_out, self.basis, stats)

    def _swept(self):
        return np.concatenate(self._parts) if self._parts else np.zeros((0,) + self.dy0.shape)


class Sweep:
    """The sweep of :func:`sensitivities`, riding along the forward run:
    :meth:`advance` takes the place of the stepper's ``engine.advance``.

    ``ws``: the sweep's workspace (its solver's plan and tolerances are shared with
    the sweep's buffers; a reference backend's solver factors the sweep's stages
    through :class:`SweepHooks`; its dropped rows at the initial state, where the sweep
    factors its first stage; later factorizations of the sweep start from the
    stepper's dropped rows); ``dy`` (c, 2N) the directions at
    the initial state, ``thetas`` the parameter of each column (None: an
    initial-state column). The stage factorizations (a reference backend's: the
    stages' dropped rows) come from the stepper, kept for :data:`STORE_BYTES` worth
    of steps at a time.
    """

    def __init__(self, ws, dy, thetas):
        model, solver = ws.model, ws.solver
        # work buffers of its own on the block solver's plan: no second symbolic phase
        # (~1 ms on the six-bar, most of a short run's sweep overhead); a reference
        # backend's runs lay the block buffers out unused, as the stepper's do
        work = make_work(solver.plan if solver.name == "block" else block_plan(model))
        S = cc.make_buffers(model, solver)
        dropped = ws.dropped                      # the first stage's (hysteresis continues)
        S.threshold[dropped - 6 * model.n_bodies] = solver.hold_tol
        S.mask[dropped] = True                    # (a reference backend's: its mask)
        self._B = B = _work(model, len(thetas))
        model.tables.weight_table(0.0, B.W)              # constant rows (all, without drives)
        B.dy[:] = dy
        hooks = SweepHooks(model, solver, thetas)
        self._hooks = hooks if hooks.needed else None
        steps = max(1, STORE_BYTES // cc.store_bytes(work, model.n_rows))
        self._segments = cc.make_segments(model, steps)
        store = cc.make_store(work, model.n_rows, steps)
        # the sweep's tuples unpacked for the core once, not at every round
        self._packed = (engine.pack(store, "F"), engine.pack(S, "S"), engine.pack(work, "W"),
                        engine.pack(directions(model, make_tables(model), thetas), "D"),
                        engine.pack(B, "K"))

    def advance(self, args, repeat=True):
        """The core's ``advance_swept`` (``natcoord/core/src/sensitivity.c``) with the
        stepper's arguments ``args`` (those of its ``advance`` up to the records);
        ``repeat`` False: one round only (the caller reads the steps' dense output
        from the returned segments). Returns ``advance``'s values as the stepper's
        ``_advance`` does: status, records, next output, steps, rejected, the last
        round's steps ``m``, the segments, the derivatives (n, c, 2N) at the ``n``
        records and the run's callback exception (or None)."""
        # a fresh buffer per call, returned as a view: the core writes each record's
        # derivatives, and a copy of a hexapod run's faulted ~80 new pages in (2 % of it)
        derivatives = np.empty((args[-1].shape[0],) + self._B.dy.shape)
        *out, error, swept = engine.advance_swept(*args, *self._segments, *self._packed,
                                                  derivatives, repeat, self._hooks)
        if swept != 0:
            reason = self._hooks.failure if self._hooks and self._hooks.failure else \
                f"factorization status {swept}"
            raise np.linalg.LinAlgError(f"sensitivity sweep: {reason}")
        return (*out, self._segments, derivatives[:out[1]], error)

    def last_step(self):
        """``(t, derivatives)`` at the start and at the end of the last step swept (none
        before the first)."""
        B = self._B
        if B.clock[STARTED] == 0.0:
            return ()
        return (B.clock[T_OLD], B.dyold.copy()), (B.clock[T_NEW], B.dy.copy())


class SweepHooks(Callbacks):
    """What the sweep calls back (``nc_hooks``): the run's :class:`Callbacks` for
    ``model`` with the sweep's own ``solver`` (a reference backend factors and solves
    the sweep's stages), the drive laws written in Python, and for the columns
    ``thetas``: ``force_derivative(t)``, the forces written in Python differentiated
    along the c directions ``dy`` (c, 2N) at ``y`` into ``dF`` (c, N)
    (:func:`~natcoord.dynamics.linearization.python_force_derivative`), and
    ``drive_weights(t)``, the drive parameters' ``∂W/∂θ`` into ``dW``
    (c, n_weights, 3; :func:`~natcoord.dynamics.linearization.drive_parameter_weights`)."""

    def __init__(self, model, solver, thetas):
        super().__init__(model, solver)
        c, n = len(thetas), model.n_coords
        self._drives = []                # (column, its t ↦ ∂W/∂θ)
        for j, name in enumerate(thetas):
            if (name or "").startswith("drive:"):
                self._drives.append((j, drive_parameter_weights(model, name)))
        self.dy, self.dF = np.zeros((c, 2 * n)), np.zeros((c, n))
        self.dW = np.zeros((c, model.n_weights, 3))
        self.force_derivative = self._force_derivative if self.python_forces else None
        self.drive_weights = self._drive_weights if self._drives else None

    def _force_derivative(self, t):
        n = self.model.n_coords
        X, V = self.y[:n].reshape(-1, 3), self.y[n:].reshape(-1, 3)
        self.dF[:] = 0.0
        try:
            for d, F in zip(self.dy, self.dF):
                python_force_derivative(self.python_forces, t, X, V, d[:n].reshape(-1, 3),
                                        d[n:].reshape(-1, 3), F.reshape(-1, 3))
        except FloatingPointError as exc:        # a force's NaN, as in the forward step
            self.failure = str(exc)
            return cc.NON_FINITE
        return 0

    def _drive_weights(self, t):
        for j, table in self._drives:
            self.dW[j] = table(t)
        return 0


def directions(model, T, thetas):
    """:data:`Directions` of the columns' parameters (None: an initial-state column);
    ``T`` the model's compiled tables."""
    c, rows = len(thetas), 4 * model.n_bodies
    D = Directions(np.zeros((c, rows, 3)), np.full(c, -1, np.int64), np.zeros((c, 4, 4)),
                   np.full(c, -1, np.int64), np.zeros(c, np.int64), np.full(c, -1, np.int64),
                   np.zeros(c, np.int64))
    for j, name in enumerate(thetas):
        if name is None:
            continue
        kind, _, key = name.partition(":")
        if kind == "drive":                # ∂W/∂θ at each point from the hooks
            D.drive[j] = 1
            continue
        if kind in SPRING_KINDS:
            D.spring[j], D.spring_kind[j] = int(key), SPRING_KINDS.index(kind)
            continue
        if kind == "load":                 # a constant point force's df is constant
            load = loads(model)[int(key)]
            if isinstance(load, Torque):
                D.torque[j] = T.force_index[model.forces.index(load)]
            else:
                load.apply(0.0, None, None, None, D.df[j])
            continue
        theta = parameter_direction(model, name, None)        # constant in the state
        D.df[j] = theta.get("df", 0.0)
        for body, dJ4 in theta.get("dM", ()):
            D.body[j], D.dJ4[j] = body, dJ4
    return D


def _work(model, c):
    n, m, rows = model.n_coords, model.n_rows, 4 * model.n_bodies
    z = np.zeros
    return Work(W=z((model.n_weights, 3)), y=z(2 * n), dK=z((c, 7, 2 * n)), dy=z((c, 2 * n)),
                dys=z((c, 2 * n)), dyold=z((c, 2 * n)), dynew=z((c, 2 * n)),
                dout=z((c, 2 * n)), F=z((c, rows, 3)), s=z((c, m)), mu=z(m),
                clock=np.array([0.0, 0.0, -np.inf, 0.0]), lanes=z(LANES * (3 * n + m)),
                dW=z((c, model.n_weights, 3)), Gw=z((model.tables.pattern_row.size, 3)),
                gw=z((4, m)), fw=z((rows, 3)))


def _checked(model, params):
    if isinstance(params, str):
        params = (params,)
    if not params:
        raise ValueError("sensitivities: params names no parameter; give e.g. ['p0'] or "
                         "['mass:<body>']")
    for name in params:
        if name not in INITIAL:
            parameter_value(model, name)         # KeyError naming the parameter
    if len(set(params)) != len(params):
        raise ValueError(f"sensitivities: params {list(params)} name a parameter twice")
    return tuple(params)


def _initial_directions(ws, t, y, params):
    """Column labels, initial ``dy`` (c, 2N), the parameter of each column (or
    None) and the tangent basis, at the initial state ``(t, y = (p, v))``: the
    derivative of the initial state's projection (not a step of the sweep)."""
    model, n = ws.model, ws.model.n_coords
    # only initial-state and drive columns start off zero: the rest need no solve here
    moved = any(name in INITIAL or name.startswith("drive:") for name in params)
    at = linearization_point(model, (t, y[:n], y[n:]), workspace=ws) if moved else None
    Z = tangent_basis(ws, at.G) if set(params) & set(INITIAL) else None
    columns, dy, thetas, basis = [], [], [], {}
    zero = np.zeros(n)
    for name in params:
        if name in INITIAL:
            basis[name] = Z
            for i, z in enumerate(np.ascontiguousarray(Z.T)):   # the core takes C order
                columns.append(f"{name}[{i}]")
                dy.append(np.concatenate(at.projection_derivative(z, zero)
                                         if name == "p0" else (zero, z)))
                thetas.append(None)
        else:                      # a drive parameter moves the initial state's manifold
            columns.append(name)
            dy.append(np.concatenate(at.projection_derivative(zero, zero, name))
                      if name.startswith("drive:") else np.zeros(2 * n))
            thetas.append(name)
    return tuple(columns), np.array(dy).reshape(len(columns), 2 * n), thetas, basis


def tangent_basis(ws, G):
    """M-orthonormal basis ``Z`` (N, d) of ``ker G`` (kept rows): ``Z = Z₀ L⁻ᵀ`` with
    ``Z₀`` orthonormal (SVD) and ``L Lᵀ = Z₀ᵀ M Z₀``."""
    model = ws.model
    kept = np.setdiff1d(np.arange(model.n_rows), ws.dropped)
    Z0 = scipy.linalg.null_space(model.tables.csr(G).toarray()[kept])
    L = np.linalg.cholesky(Z0.T @ (model.mass_matrix @ Z0))
    return scipy.linalg.solve_triangular(L, Z0.T, lower=True).T
