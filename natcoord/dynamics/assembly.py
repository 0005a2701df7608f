"""Assembly: the consistent initial state of a model and what it reveals
(docs/method.md#17-integration).

:func:`assemble` finds the state on the constraint manifold nearest (in the
mass norm) to a guess, applies the mechanism's prescribed joint rates and
reports the rank of the constraint Jacobian there: the rows dropped as
redundant and the degrees of freedom. The model itself holds data only; the
default assembly is computed once per model (:mod:`natcoord.model.derived`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..model import validate
from ..model.derived import derived
from .workspace import Workspace
from ..model.kinematics import angular_velocity, rate_row
from ..model.frozen import State
from .projection import describe_rows, project_velocities

#: residual tolerance of assembly (consistent initial values)
ASSEMBLY_TOL = 1e-12
#: constraint residuals below ``ROUND_OFF · max(1, |p|∞)`` are round-off
ROUND_OFF = 1000 * np.finfo(float).eps


class AssemblyError(ValueError):
    """Consistent initial values could not be found."""


@dataclass(frozen=True)
class Assembly:
    """A consistent state and the constraint rank found there.

    ``dropped``: rows dropped as redundant (sorted indices, read-only; labels
    are ``model.row_labels[r]``); ``rank`` of the constraint Jacobian,
    ``dof = 12 n − rank``.
    """

    state: State
    dropped: np.ndarray
    rank: int
    dof: int


def assemble(model, p=None, v=None, t=0.0, solver=None, proj_tol=None) -> Assembly:
    """Consistent :class:`Assembly` from an approximate ``(p, v)`` at time ``t``.

    Defaults to the mechanism's reference/``set_initial`` data, whose joint
    rates and requested velocities then apply (a changed requested velocity
    warns); that default assembly is computed once per model. ``p`` and ``v``
    must be finite arrays of shape ``(12 n,)``, ``t`` finite, ``proj_tol``
    positive and ``model`` a built Model (``ValueError``/``TypeError`` naming
    the argument otherwise).
    Raises :class:`AssemblyError` naming the joints when assembly fails.
    """
    model, t = validate.model(model), validate.finite("t", t)
    if p is None and v is None and t == 0.0 and solver is None and proj_tol is None:
        return derived(model, "assembly", lambda: _assemble(model, model.p_guess,
                                                            model.v_guess, 0.0))
    defaults = v is None
    p = model.p_guess if p is None else validate.coordinates(model, "p", p)
    v = model.v_guess if v is None else validate.coordinates(model, "v", v)
    proj_tol = ASSEMBLY_TOL if proj_tol is None else validate.positive("proj_tol", proj_tol)
    return _assemble(model, p, v, t, solver, proj_tol, defaults)


def _assemble(model, p, v, t, solver=None, proj_tol=ASSEMBLY_TOL, defaults=True):
    """:func:`assemble` of checked arguments (``defaults``: ``v`` is the mechanism's)."""
    state, dropped = consistent_state(model, p, v, t, solver, proj_tol)
    state = _prescribe(model, state, solver) if defaults else state
    dropped.setflags(write=False)
    rank = model.n_rows - dropped.size
    return Assembly(state, dropped, rank, model.n_coords - rank)


def consistent_state(model, p, v, t=0.0, solver=None, proj_tol=ASSEMBLY_TOL, max_iter=50):
    """Consistent ``(State, dropped rows)`` nearest (in the M-norm) to ``(p, v)``.

    Full Newton (refactored every iteration, with step halving) because the
    guess may be far from the constraint manifold. Convergence is judged on
    every row, dropped ones included: a dropped row is implied by the kept
    rows only if the constraints are consistent (at a singular configuration
    an unsatisfiable row can look redundant).
    """
    ws = Workspace(model, solver)
    p = np.array(p, float).ravel()
    v = np.array(v, float).ravel()
    zero = np.zeros_like(v)
    ws.constraints(t, p, zero)
    for _ in range(max_iter):
        ws.factor()
        residual = np.abs(ws.g).max(initial=0.0)
        if residual <= proj_tol:
            break
        dp, _ = ws.solve(zero, -ws.g)
        step = 1.0
        while True:
            ws.constraints(t, p + step * dp, zero)
            if np.abs(ws.g).max(initial=0.0) < residual or step < 1e-3:
                break
            step *= 0.5
        p = p + step * dp
    else:
        worst = np.argsort(-np.abs(ws.g))[:5]
        # a residual at round-off cannot shrink further: the tolerance is the problem
        hint = (f"‖g‖∞ is at round-off: proj_tol = {proj_tol:.1e} cannot be reached; use a "
                f"larger one (default {ASSEMBLY_TOL:.0e})"
                if residual <= ROUND_OFF * max(1.0, np.abs(p).max()) else
                "Check that these joints can be closed from the given configuration "
                "(points, axes, lengths)")
        raise AssemblyError(
            f"assembly of {model.name!r} did not converge in {max_iter} Newton iterations: "
            f"‖g‖∞ = {residual:.3e} (tolerance {proj_tol:.1e}). Largest residuals:\n"
            f"{describe_rows(model, ws.g, worst)}\n{hint}.")
    dropped = ws.dropped.copy()                   # the projection factors in the core
    return State(t, p, project_velocities(ws, t, p, v, proj_tol)), dropped


def _prescribe(model, state, solver=None):
    """Apply the model's prescribed joint rates and check requested velocities."""
    if model.joint_rates:
        v = impose_joint_rates(model, state.t, state.p, state.v, model.joint_rates, solver)
        state = State(state.t, state.p, v)
    if model.velocity_requests:
        check_requested_velocities(model, state, model.velocity_requests)
    return state


def impose_joint_rates(model, t, p, v, rates, solver=None):
    """Consistent ``v`` nearest (M-norm) to ``v`` with the prescribed joint rates.

    ``v`` must satisfy ``G v + g_t = 0`` (the assembled velocity). With the rate
    rows ``C v = r``: ``Z = P M⁻¹ Cᵀ`` from KKT solves ``[[M, Gᵀ], [G, 0]] [Z; ·] =
    [Cᵀ; 0]`` (so ``G Z = 0``) and ``v ← v + Z (C Z)⁻¹ (r − C v)``, the M-orthogonal
    projection onto ``{G v + g_t = 0, C v = r}``. Raises ``AssemblyError`` when a
    rate is fixed by the constraints (a locked or driven joint).
    """
    keys = list(rates)
    target = np.array([rates[k] for k in keys], float)
    X = p.reshape(-1, 3)
    C = np.array([rate_row(model, joint, X, coordinate) for joint, coordinate in keys])
    ws = Workspace(model, solver)
    ws.constraints(t, p, v)
    ws.factor()
    zero = np.zeros(model.n_rows)
    Z = np.column_stack([ws.solve(c, zero)[0] for c in C])
    S = C @ Z
    # Is C independent of the constraints on their null space? Z spans the part
    # of null(G) that C sees, so C Z is singular iff some rate is fixed by G.
    # Rows and columns normalized in the Euclidean norm: a geometric test (not
    # relative to C M⁻¹ Cᵀ, which bodies of very different mass make tiny).
    unit = S / np.outer(np.linalg.norm(C, axis=1), np.linalg.norm(Z, axis=0))
    if not np.linalg.svd(unit, compute_uv=False).min() > 1e-8:
        names = ", ".join(f"{j!r} ({c})" for j, c in keys)
        raise AssemblyError(f"joint rates of {names} cannot be prescribed: the constraints "
                            f"(or the other prescribed rates) already determine them")
    # Correct the rates, then re-project onto G v + g_t = 0: with bodies of very
    # different mass Z is in null(G) only to ~1e-4 relative, and the projection
    # (M-orthogonal, so it barely moves the rates) restores the constraints.
    for _ in range(3):
        v = v + Z @ np.linalg.solve(S, target - C @ v)
        v = project_velocities(ws, t, p, v, ASSEMBLY_TOL)
    return v


def check_requested_velocities(model, state, requests, rtol=1e-6):
    """Warn (``UserWarning``) when assembly changed a ``set_initial`` velocity.

    ``requests``: ``{body index: {"velocity": (3,), "angular_velocity": (3,)}}``.
    A change larger than ``rtol (1 + |requested|)`` is reported.
    """
    X, V = state.p.reshape(-1, 3), state.v.reshape(-1, 3)
    changes = []
    for index, request in sorted(requests.items()):
        name = model.bodies[index].name
        got = {"velocity": V[4 * index], "angular_velocity": angular_velocity(X, V, index)}
        for what, wanted in request.items():
            wanted = np.asarray(wanted, float)
            if np.linalg.norm(got[what] - wanted) > rtol * (1.0 + np.linalg.norm(wanted)):
                changes.append(f"body {name!r} {what} {np.round(wanted, 6).tolist()} -> "
                               f"{np.round(got[what], 6).tolist()}")
    if changes:
        warnings.warn("assembly changed requested initial velocities (they violate the "
                      "velocity constraints; the consistent velocity nearest in the mass "
                      "norm was taken): " + "; ".join(changes) + ". Give consistent velocities "
                      "of all bodies, or prescribe joint rates with "
                      "Mechanism.set_joint_rate(joint, rate).", UserWarning, stacklevel=3)


def describe(model):
    """Text summary (what ``natcoord info`` prints): :meth:`Model.describe
    <natcoord.model.frozen.Model.describe>` plus the rank, DOF and dropped constraints
    of the default assembly."""
    a = assemble(model)
    return "\n".join([model.describe(),
                      f"Jacobian rank at the initial state: {a.rank} of {model.n_rows}",
                      f"degrees of freedom: {a.dof}",
                      f"dropped (redundant) constraints: {a.dropped.size}"]
                     + [f"  {model.row_labels[r]}" for r in a.dropped])
