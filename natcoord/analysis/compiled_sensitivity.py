"""Compiled sensitivity sweep: the derivative of the DOPRI5 run inside the forward
run's chunk call (issue 10; docs/method.md#18-sensitivities), in the core
(``natcoord/core/src/sensitivity.c``).

The sweep of :mod:`natcoord.analysis.sensitivity` — at each stage of every
accepted step, with the stage factorization the forward run kept, solve per
direction

    [[M, Gᵀ], [G, 0]] [da; dλ] = [df − dM a − dGᵀ λ;  dγ − dG a],

then differentiate the projection (one factorization at the projected point)
and the dense output (linear in the step's data) — with these right-hand sides:

* ``dγ − dG a`` and ``dGᵀ λ`` (``dG v + dg_t`` for the projection): the
  constraint kernel's terms differentiated in one pass (bilinear, exact);
* the built-in applied forces' exact derivative (``nc_force_derivative``,
  natcoord/core/src/forces.c, beside their laws: the one the workspace's
  linearization and Radau's Jacobian use); gravity and constant point forces do
  not vary;
* parameters (:func:`natcoord.dynamics.linearization.parameter_direction`): a constant
  ``df`` and ``dJ4`` per column (mass, inertia, gravity, the scale of a
  constant point force), the tension's derivative ``∂T/∂k = l − l0``,
  ``∂T/∂c = l̇``, ``∂T/∂l0 = −k`` of a spring, or the scale of a constant
  torque, whose ``df = ½ τ × e_k`` moves with the body's axes.

For models :func:`natcoord.model.core_tables.compilable` accepts, the block solver
without refinement, and drives that are absent or compiled; the parameters of
:data:`PARAMETERS` (``stiffness``, ``damping``, ``rest_length`` name the linear
spring–dampers: joint and Cartesian springs' are not sensitivity parameters in
either sweep, only their state derivatives enter). :func:`natcoord.analysis.sensitivity.sensitivities` keeps its
Python sweep for everything else.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import engine
from ..integrate import compiled as cc
from ..dynamics.linearization import parameter_direction
from ..model.core_tables import compilable, make_tables
from ..model.parameters import loads
from ..model.forces import Torque
from ..linalg.blockldl import make_work

#: memory for the stage factorizations of one round of steps (``advance_swept``):
#: small enough to be read back from the cache (L2), and to stay mapped between runs:
#: at 1 MiB every six-bar run faulted its pages in afresh (3 % of its sweep)
STORE_BYTES = 2 ** 18

#: parameter kinds the compiled sweep differentiates (besides p0, v0)
PARAMETERS = ("mass", "inertia", "gravity", "stiffness", "damping", "rest_length", "load")
#: spring parameters: index in ``Directions.spring_kind`` (sensitivity.c's enum)
SPRING_KINDS = ("stiffness", "damping", "rest_length")

#: per column: constant ``df`` (4 n, 3), the body of ``dJ4`` (−1: none) and
#: ``dJ4`` (4, 4), the spring (−1: none) and which of its parameters, the
#: constant torque whose scale it is (−1: none; its force moves with the axes).
#: Field order as the core's (``natcoord/core/src/sensitivity.h``, ``D_*``).
Directions = namedtuple("Directions", ["df", "body", "dJ4", "spring", "spring_kind",
                                       "torque"])

#: the sweep's buffers: the weight table, a stage point ``y`` (2N,), the stage
#: derivatives ``dK`` (c, 7, 2N), directions (c, 2N): ``dy`` at the last step's end,
#: ``dyold`` at its start, the stage's ``dys``, the step's ``dynew`` before projection,
#: the dense output's ``dout``; the right-hand sides ``F`` (c, 4 n, 3), ``s`` (c, m) of
#: all columns of a stage and the multipliers' scratch ``mu``; the ``clock``; scratch
#: ``lanes`` of the directional pass (two directions or more) and of the projection's
#: solves. The stage's accelerations and multipliers are read where the stepper left
#: them (segments, store).
#: Field order as the core's (``sensitivity.h``, ``K_*``).
Work = namedtuple("Work", [
    "W", "y", "dK", "dy", "dys", "dyold", "dynew", "dout",
    "F", "s", "mu", "clock", "lanes"])

#: directions side by side in the core's directional pass (sensitivity.h, NC_LANES)
LANES = engine.LANES

#: ``Work.clock``: the last step's start, size and end; 1 once the first step is swept
T_OLD, STEP, T_NEW, STARTED = range(4)


def supported(model, solver, params):
    """True if the compiled sweep covers ``model`` solved by ``solver`` (a
    :class:`~natcoord.linalg.base.KKTSolver`) and the parameter names ``params``."""
    return (solver.name == "block" and not solver.refine
            and compilable(model)
            and (model.n_weights == 1 or model.tables.laws is not None)
            and all(name in ("p0", "v0") or name.partition(":")[0] in PARAMETERS
                    for name in params))


def directions(model, T, thetas):
    """:data:`Directions` of the columns' parameters (None: an initial-state column);
    ``T`` the model's compiled tables."""
    c, rows = len(thetas), 4 * model.n_bodies
    D = Directions(np.zeros((c, rows, 3)), np.full(c, -1, np.int64), np.zeros((c, 4, 4)),
                   np.full(c, -1, np.int64), np.zeros(c, np.int64), np.full(c, -1, np.int64))
    for j, name in enumerate(thetas):
        if name is None:
            continue
        kind, _, key = name.partition(":")
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


class Sweep:
    """The compiled sweep of :func:`natcoord.analysis.sensitivity.sensitivities`, riding along the
    forward run: :meth:`advance` takes the place of :func:`natcoord.integrate.compiled.advance`.

    ``solver``: the run's block solver (its plan and tolerances are shared,
    its buffers not); ``dropped``: the rows the sweep's workspace dropped
    last, whose hysteresis its own factorizations (at the initial state and at
    the projected points) continue; ``dy`` (c, 2N) the directions at the
    initial state, ``thetas`` the parameter of each column (None: an
    initial-state column). The stage factorizations
    come from the stepper, kept for :data:`STORE_BYTES` worth of steps at a time.
    """

    def __init__(self, solver, dropped, dy, thetas):
        # work buffers of its own on the run's block solver's plan: no second symbolic
        # phase (~1 ms on the six-bar, most of a short run's sweep overhead)
        model, work = solver.model, make_work(solver.plan)
        S = cc.make_buffers(model, solver)
        S.threshold[dropped - 6 * model.n_bodies] = solver.hold_tol   # hysteresis continues
        self._B = B = _work(model, len(thetas))
        model.tables.weight_table(0.0, B.W)              # constant rows (all, without drives)
        B.dy[:] = dy
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
        from the returned segments). Returns ``advance``'s six values with ``m``
        counting the last round's steps, the segments, and the derivatives
        (n, c, 2N) at the ``n`` records."""
        # a fresh buffer per call, returned as a view: the core writes each record's
        # derivatives, and a copy of a hexapod run's faulted ~80 new pages in (2 % of it)
        derivatives = np.empty((args[-1].shape[0],) + self._B.dy.shape)
        *out, swept = engine.advance_swept(*args, *self._segments, *self._packed,
                                          derivatives, repeat)
        if swept != 0:
            raise np.linalg.LinAlgError(f"compiled sensitivity sweep: factorization status "
                                        f"{swept}")
        return (*out, self._segments, derivatives[:out[1]])

    def last_step(self):
        """``(t, derivatives)`` at the start and at the end of the last step swept (none
        before the first)."""
        B = self._B
        if B.clock[STARTED] == 0.0:
            return ()
        return (B.clock[T_OLD], B.dyold.copy()), (B.clock[T_NEW], B.dy.copy())


def _work(model, c):
    n, m, rows = model.n_coords, model.n_rows, 4 * model.n_bodies
    z = np.zeros
    return Work(W=z((model.n_weights, 3)), y=z(2 * n), dK=z((c, 7, 2 * n)), dy=z((c, 2 * n)), dys=z((c, 2 * n)), dyold=z((c, 2 * n)),
                dynew=z((c, 2 * n)), dout=z((c, 2 * n)), F=z((c, rows, 3)),
                s=z((c, m)), mu=z(m), clock=np.array([0.0, 0.0, -np.inf, 0.0]),
                lanes=z(LANES * (3 * n + m)))
