"""The descriptor form (docs/method.md#15-descriptor-form) evaluated into a preallocated workspace.

    ṗ = v,   [[M, Gᵀ], [G, 0]] [a; λ] = [f(p, v, t); γ(p, v, t)]
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import engine
from ..model import validate
from ..model.core_tables import packed_tables, python_forces
from ..model.forces import SpringDamper
from ..util.checks import NonFiniteValue
from ..model.kernels import constraint_kernel, jacobian_times
from ..linalg import make_solver
from ..linalg.base import DROP_TOL, HOLD_TOL
from ..model.frozen import State
from .core_run import CoreRun


class Workspace:
    """Per-run buffers and the solver instance (MuJoCo's ``mjData``).

    ``g, g_t, gamma`` (m,), Jacobian blocks ``G`` (nnz, 3), generalized
    force ``f`` (4 n, 3), weights ``W`` (n_w, 3); counters of evaluations.
    """

    def __init__(self, model, solver=None, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        self.model = model
        m, nnz = model.n_rows, model.tables.pattern_row.size
        self.g, self.g_t, self.gamma = np.zeros(m), np.zeros(m), np.zeros(m)
        self.Gv = np.zeros(m)
        self.G = np.zeros((nnz, 3))
        self.f = np.zeros((4 * model.n_bodies, 3))
        self.W = np.zeros((model.n_weights, 3))
        self.W_time = None          # the time W was last evaluated at
        self.solver = make_solver(model, solver, drop_tol, hold_tol)
        #: forces of the run beside the model's (simulate's joint torques u)
        self.extra_forces = ()
        #: the model's forces without a law in the core, applied in Python
        self.python_forces = python_forces(model)
        self._core_tables = packed_tables(model)
        self._springs = any(type(force) is SpringDamper for force in model.forces)
        self.n_rhs = 0
        self.n_factorizations = 0
        self._core = None

    def coordinates(self, name, x):
        """``x`` as this workspace's model's ``12 n`` coordinates (:func:`validate.coordinates
        <natcoord.model.validate.coordinates>`): a shorter array was read past its end by
        the compiled kernels. Not checked for finiteness: the runs evaluate failed
        (non-finite) states on purpose."""
        return validate.coordinates(self.model, name, x, finite=False)

    def constraints(self, t, p, v):
        """Evaluate ``g, g_t, γ, G`` at ``(t, p, v)`` (eq. 8–10)."""
        self._constraints(t, self.coordinates("p", p), self.coordinates("v", v))

    def _constraints(self, t, p, v):
        constraint_kernel(self.model.tables.terms, p.reshape(-1, 3), v.reshape(-1, 3),
                          self.weights(t), self.g, self.g_t, self.gamma, self.G)

    def weights(self, t):
        """The weight table ``W`` at ``t``. A run evaluates it several times at one t
        (an output's projection, its check and its record), and drive functions in
        Python cost far more than the kernels they feed: evaluated once per t."""
        if t != self.W_time:
            self.model.tables.weight_table(t, self.W)
            self.W_time = t
        return self.W

    @property
    def core(self):
        """The core's run (:class:`~natcoord.dynamics.core_run.CoreRun`) on this
        workspace's solver, whose factorization it overwrites: the velocity projection
        of :mod:`natcoord.dynamics.projection`. Built on first use."""
        if self._core is None:
            self._core = CoreRun(self.model, self.solver)
        return self._core

    def velocity_residual(self, v):
        """``G v + g_t`` for the Jacobian last evaluated."""
        return self._velocity_residual(self.coordinates("v", v))

    def _velocity_residual(self, v):
        tables = self.model.tables
        jacobian_times(self.G, tables.pattern_row, tables.pattern_slot, v.reshape(-1, 3),
                       self.Gv)
        return self.Gv + self.g_t

    def forces(self, t, p, v):
        """Generalized force ``f`` (12 n,) (§1.2): gravity and the built-in forces by
        the core's laws (natcoord/core/src/forces.c, as in every step), then the
        forces written in Python (callables, the run's joint torques) by their
        ``apply``."""
        return self._forces(t, self.coordinates("p", p), self.coordinates("v", v))

    def _forces(self, t, p, v):
        engine.generalized_forces(self._core_tables, p, v, self.f)
        if self._springs and not np.isfinite(self.f).all():
            _name_coincident_spring(self.model, t, p)
        if self.python_forces or self.extra_forces:
            state = State(t, p, v)
            X, V = p.reshape(-1, 3), v.reshape(-1, 3)
            for force in (*self.python_forces, *self.extra_forces):
                force.apply(t, state, X, V, self.f)
        return self.f.ravel()

    def factor(self):
        """Factor the KKT matrix at the Jacobian last evaluated (finds the dropped rows)."""
        self.solver.factor(self.G)
        self.n_factorizations += 1

    def solve(self, r, s):
        """``(x, λ)`` of ``[[M, Gᵀ], [G, 0]] [x; λ] = [r; s]`` with the last factorization."""
        return self.solver.solve(r, s)

    @property
    def dropped(self):
        """Rows dropped as redundant at the last factorization (sorted indices; the
        solver's array, which a later factorization may replace: copy it to keep it)."""
        return self.solver.dropped

    @dropped.setter
    def dropped(self, rows):
        """Adopt the dropped rows of a factorization made elsewhere (a stepper's),
        for the checks and reports that read them."""
        self.solver.dropped = rows

    @property
    def solver_name(self):
        """Name of the KKT backend (``"block"``, ``"dense"``, …)."""
        return self.solver.name

    def accelerations(self, t, p, v, baumgarte=None):
        """``(a, λ)`` of the index-1 system; ``baumgarte=(α, β)`` stabilizes γ."""
        return self._accelerations(t, self.coordinates("p", p), self.coordinates("v", v),
                                   baumgarte)

    def _accelerations(self, t, p, v, baumgarte=None):
        """:meth:`accelerations` of arrays already checked (:meth:`coordinates`)."""
        self._constraints(t, p, v)
        f = self._forces(t, p, v)
        gamma = self.gamma
        if baumgarte is not None:
            alpha, beta = baumgarte
            gamma = gamma - 2.0 * alpha * self._velocity_residual(v) - beta**2 * self.g
        self.factor()
        self.n_rhs += 1
        return self.solve(f, gamma)


def workspace_of(model, workspace, solver=None):
    """``workspace`` if it was made for ``model`` (``TypeError``/``ValueError`` otherwise:
    another model's buffers do not fit its kernels), else a new :class:`Workspace`."""
    if workspace is None:
        return Workspace(model, solver)
    if not isinstance(workspace, Workspace):
        raise TypeError(f"workspace must be a natcoord.Workspace (nc.Workspace(model)), got "
                        f"{type(workspace).__name__}")
    if workspace.model is not model:
        raise ValueError(f"workspace was made for model {workspace.model.name!r}, not for "
                         f"the model {model.name!r} given: make it with nc.Workspace(model)")
    return workspace


def _name_coincident_spring(model, t, p):
    """Raise the error naming a spring–damper whose end points coincide at ``p`` (the
    direction of its force is undefined: the core's law gave NaN)."""
    X = p.reshape(-1, 3)
    for spring in model.forces:
        if type(spring) is SpringDamper and not np.any(spring.b.evaluate(X)
                                                        - spring.a.evaluate(X)):
            raise NonFiniteValue(f"{spring.where}: its end points coincide at t = {t:g}, so "
                                 f"the direction of the spring force is undefined")


@dataclass(frozen=True)
class AccelerationInfo:
    """What one evaluation found: dropped rows and the residuals at the state."""

    dropped: np.ndarray          # row indices
    dropped_labels: list
    constraint_residual: float   # ‖g‖∞
    velocity_residual: float     # ‖G v + g_t‖∞
    solver: str


def accelerations(model, state, solver=None, workspace=None):
    """Accelerations ``a`` (12 n,) and multipliers ``λ`` (m,) at ``state``.

    Solves ``[[M, Gᵀ], [G, 0]] [a; λ] = [f; γ]`` (docs/method.md#15-descriptor-form) with the given
    backend; returns ``(a, λ, info)``. Pass a :class:`Workspace` to reuse
    buffers and the symbolic phase across calls. ``state`` must be a
    :class:`State` with finite ``(12 n,)`` arrays (``TypeError``/``ValueError``), at
    most ``validate.COORDINATE_MAX`` in magnitude (their squares would overflow).
    """
    state = validate.state(validate.model(model), state)
    ws = workspace_of(model, workspace, solver)
    p, v = state.p, state.v
    a, lam = ws._accelerations(state.t, p, v)
    dropped = ws.dropped.copy()
    info = AccelerationInfo(dropped, [model.row_labels[r] for r in dropped],
                            float(np.abs(ws.g).max(initial=0.0)),
                            float(np.abs(ws._velocity_residual(v)).max(initial=0.0)),
                            ws.solver_name)
    return a, lam, info
