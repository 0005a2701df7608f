"""Per-run data and the forward dynamics call, as MuJoCo's ``mj_forward(m, d)`` and
Pinocchio's ``aba(model, data, q, v, tau)``.

A :class:`Data` holds everything one evaluation writes — the state, the
accelerations, the multipliers, the block factorization and the dropped rows
with their hysteresis — allocated once, and the model's constant arrays
unpacked once for the compiled core. Inputs are checked where they enter (the
``t``, ``p``, ``v`` setters); :func:`forward` then only calls the core::

    data = nc.Data(model, nc.assemble(model).state)
    nc.forward(model, data)          # fills data.a (12 n,) and data.lam (m,)
    data.v = new_v                   # checked here, not in forward

The right-hand side is the core's (``engine.rhs``: constraints, built-in forces
and drives, the block LDLᵀ with constraint partitioning and its solve), the
one the DOPRI5 stepper evaluates; forces given as Python callables are called
back from it (:class:`~natcoord.dynamics.core_run.Callbacks`), as in a run.
"""
from __future__ import annotations

import numpy as np

from ..core import engine
from ..linalg import make_solver
from ..linalg.base import DROP_TOL, HOLD_TOL
from ..dynamics.joint_space import joint_space, joint_state
from ..model import validate
from ..dynamics import core_run as cc
from ..dynamics.core_run import CoreRun
from ..model.frozen import State


class Data:
    """The per-run data of ``model`` (see the module docstring).

    ``t``, ``p`` (12 n,), ``v`` (12 n,): the state (setters check shape and
    finiteness); ``a`` (12 n,) and ``lam`` (m,): what :func:`forward` computed
    (read-only views, overwritten by the next call); ``dropped``: the rows the
    last factorization dropped as redundant. In joint space: ``q``, ``qd``,
    ``qdd`` (read) and :meth:`set_joints` (write).
    """

    def __init__(self, model, state=None, drop_tol=DROP_TOL, hold_tol=HOLD_TOL):
        validate.model(model)
        drop_tol, hold_tol = validate.partitioning(drop_tol, hold_tol)
        state = validate.state(model, state) if state is not None else None
        self.model = model
        n = model.n_coords
        # forces given as Python callables are called back (drive laws: the t setter's
        # table)
        self._run = run = CoreRun(model, make_solver(model, "block", drop_tol, hold_tol))
        self._S = S = run.S
        self._y, self._out = np.zeros(2 * n), np.zeros(2 * n)
        self._weights = model.tables.weight_table(0.0, np.zeros((model.n_weights, 3)))
        # y, weights and out are written in place only (the setters): packed once, they
        # skip a buffer request each per call, a tenth of forward's cost on small models
        self._call = (*run.packed, run.hooks,
                      engine.pack(self._y, "d"), engine.pack(self._weights, "d"),
                      engine.pack(self._out, "d"))
        self._t = 0.0
        self.a = self._out[n:].view()
        self.lam = S.lam.view()
        for array in (self.a, self.lam):
            array.flags.writeable = False
        state = state if state is not None else State(0.0, model.p_guess, model.v_guess)
        self.t, self.p, self.v = state.t, state.p, state.v

    # -------------------------------------------------------------- state
    @property
    def t(self):
        return self._t

    @t.setter
    def t(self, value):
        self._t = validate.finite("t", value)
        if self.model.n_weights > 1:                  # drives: their weights at t
            self.model.tables.weight_table(self._t, self._weights)

    @property
    def p(self):
        return self._y[:self.model.n_coords]

    @p.setter
    def p(self, value):
        self._y[:self.model.n_coords] = validate.coordinates(self.model, "p", value)

    @property
    def v(self):
        return self._y[self.model.n_coords:]

    @v.setter
    def v(self, value):
        self._y[self.model.n_coords:] = validate.coordinates(self.model, "v", value)

    # -------------------------------------------------------- joint space
    @property
    def q(self):
        """Joint positions (``nc.joint_space(model).q_names``, Pinocchio's conventions)."""
        return joint_space(self.model).positions(self.p)

    @property
    def qd(self):
        """Joint velocities (``nc.joint_space(model).qd_names``)."""
        return joint_space(self.model).velocities(self.p, self.v)

    @property
    def qdd(self):
        """Joint accelerations of the last :func:`forward` (``qd_names`` order)."""
        return joint_space(self.model).accelerations(self.p, self.v, self.a)

    def set_joints(self, q, qd=None):
        """Set ``p``, ``v`` from joint positions and rates (:func:`natcoord.joint_state`
        at this data's ``t``: loops closed, the change reported there)."""
        state = joint_state(self.model, q, qd, t=self._t)
        self.p, self.v = state.p, state.v

    @property
    def dropped(self):
        """Rows dropped as redundant at the last factorization (sorted)."""
        return np.flatnonzero(self._S.mask)

    def failure(self, status):
        """The message of a failed evaluation, naming the body or joint as the block
        solver's own error does (:meth:`CoreRun.message
        <natcoord.dynamics.core_run.CoreRun.message>`)."""
        callbacks = self._run.callbacks
        failure, callbacks.failure = callbacks.failure, ""   # read once: the next is its own
        if status == cc.NON_FINITE:     # a callable's NaN names it (as nc.accelerations)
            return f"forward: {failure or 'the state or a force is not finite'}"
        return "forward: " + self._run.message(status, self._t)


def forward(model, data):
    """Accelerations ``data.a`` and multipliers ``data.lam`` at ``data``'s state:
    ``[[M, Gᵀ], [G, 0]] [a; λ] = [f; γ]`` (docs/method.md#15-descriptor-form) in
    one call of the core. Raises ``numpy.linalg.LinAlgError`` naming the body
    when the state is degenerate (a :class:`~natcoord.linalg.base.MassSpreadError`
    naming the joint whose rows the spread of the masses makes unpivotable)."""
    try:                          # costs nothing on the way of a Data
        T, S, P, W, hooks, y, weights, out = data._call
    except AttributeError:
        raise TypeError(f"forward: data must be a natcoord.Data (nc.Data(model)), got "
                        f"{type(data).__name__}") from None
    if data.model is not model:
        raise ValueError("forward: data was made for another model (Data(model))")
    status = engine.rhs(T, S, P, W, hooks, data._t, y, weights, 0, out)
    if status:
        raise data._run.error(status, data._t, data.failure(status))
