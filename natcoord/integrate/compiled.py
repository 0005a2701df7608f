"""Set-up of the compiled DOPRI5 step (docs/method.md#17-integration).

The step itself — stages, error estimate, controller, projection, dense output
and the chunked advance with outputs — runs in the compiled core
(:mod:`natcoord.core`, natcoord/core/src/dopri5.c and forces.c), called by
:class:`natcoord.integrate.stepper.DOPRI5`. This module prepares what the core
reads: the model's constant arrays (:data:`Tables`, :func:`make_tables`), the
per-run buffers (:data:`Buffers`, :func:`make_buffers`), the dense-output
segments and the factorization store of the sensitivity sweep, and it names the
core's codes (statuses, projection modes, force kinds, record kinds, counter and
``ctrl`` indices, as natcoord/core/src/dopri5.h numbers them).

Built-in forces are flattened into arrays (:func:`flatten_forces`): gravity
and constant point forces as constant slot forces, constant torques
(``½ τ × e_k``), linear spring–dampers, joint spring–dampers and Cartesian
spring–dampers (their coordinates' or components' quadratic forms). The others — callable forces and torques, force
classes without a law in the core (:func:`python_forces`) — are called back
from the core at each stage (:class:`~natcoord.integrate.stepper.Callbacks`).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import engine
from ..model.forces import (CartesianSpringDamper, JointSpringDamper, PointForce,
                             SpringDamper, Torque)
from ..model.derived import derived
from ..model.drives import NO_LAWS
from ..dynamics.projection import size_factor

EPS = float(np.finfo(float).eps)

#: status codes of a step attempt (−1: step-size underflow), as dopri5.h numbers
#: them; SOLVER_FAILED: a reference backend could not factor (its LinAlgError, a
#: smaller step may cure it), CALLBACK: a callback raised (the run's exception). Every core function that factors returns these, never the block
#: factorization's own codes (``factor`` in dopri5.c translates them): a
#: factorization code read as a step code took a singular frame for an error
#: rejection and an unpivotable joint's node for a body (an ``IndexError`` in the
#: message)
ACCEPTED, REJECTED, SINGULAR_FRAME, NOT_POSITIVE_DEFINITE, NON_FINITE, \
    POSITION_PROJECTION, VELOCITY_PROJECTION, MAX_ATTEMPTS, CHECK, FULL, FINISHED, \
    UNPIVOTABLE_JOINT, SOLVER_FAILED, CALLBACK = range(14)

#: projection modes, in the order of ``natcoord.integrate.base.PROJECTIONS``
PROJECT_POSITIONS_AND_VELOCITIES, PROJECT_VELOCITIES, NO_PROJECTION, BAUMGARTE = range(4)
MODES = {"position+velocity": PROJECT_POSITIONS_AND_VELOCITIES,
         "velocity": PROJECT_VELOCITIES, "none": NO_PROJECTION, "baumgarte": BAUMGARTE}

#: force kinds in the flattened force list
POINT_FORCE, TORQUE, SPRING, JOINT_SPRING, CARTESIAN_SPRING = 0, 1, 2, 3, 4

#: kinds of the records nc_advance writes (the :class:`~natcoord.integrate.base.Chunk`'s)
from .base import OUTPUT_RECORD, STEP_RECORD  # noqa: E402,F401

#: counters (int64 array): evaluations, factorizations, projection iterations,
#: active-set changes, where the last failure happened (body or node), and the
#: factorizations and projection iterations of those spent on :func:`advance`'s outputs
N_RHS, N_FACT, N_PROJ, N_ACTIVE, FAIL_WHERE, OUT_FACT, OUT_PROJ = range(7)

Tables = namedtuple("Tables", [
    "quad_row", "quad_a", "quad_b", "quad_c", "quad_w", "quad_ga", "quad_gb",
    "lin_row", "lin_a", "lin_d", "lin_w", "lin_g", "const_row", "const_c", "const_w",
    "pattern_row", "pattern_slot", "J4", "gravity_force",
    "force_kind", "force_index", "aff_ptr", "aff_slot", "aff_coef", "aff_const",
    "pf_aff", "pf_vec", "tq_body", "tq_vec", "sp_a", "sp_b", "sp_k", "sp_l0", "sp_c",
    "js_f0", "js_f1", "js_k", "js_rest", "js_c", "cs_form", "cs_k", "cs_c", "cs_rest",
    "form_qptr", "form_qa", "form_qb", "form_qc", "form_lptr", "form_la", "form_ld",
    "form_const", "laws", "size_factor"])

Buffers = namedtuple("Buffers", [
    "g", "g_t", "gamma", "Gv", "G", "F", "s", "x", "lam", "zero",
    "K", "Kacc", "ystage", "ynew", "ynewacc", "yproj", "yprev", "y", "f",
    "threshold", "dropped", "mask", "rhs_mask", "counts", "ctrl", "tmp", "comb", "stack", "vals", "scale",
    "held"])

#: The stage factorizations of accepted steps, kept for the sensitivity sweep
#: (:mod:`natcoord.analysis.compiled_sensitivity`): at ``[m, s − 1]`` for step ``m`` and
#: stage ``s = 1 … 6`` the block factor (``B, inv, E, F, Gj`` of
#: :data:`~natcoord.linalg.blockldl.WorkBuffers`) and the multipliers λ.
FactorStore = namedtuple("FactorStore", ["B", "inv", "E", "F", "Gj", "lam"])

#: ctrl (float64 array): t, h, err_old, last_rejected, err of the last attempt,
#: h of the last accepted step, t before it, proj_tol, rtol, atol, max_step,
#: t_bound, drop_tol, hold_tol, baumgarte α, β, residual and target of a failed
#: projection, 1 while outputs are projected from the dropped set in ``held``
(T_NOW, H, ERR_OLD, LAST_REJECTED, ERR, H_ACC, T_PREV, PROJ_TOL, RTOL, ATOL, MAX_STEP,
 T_BOUND, DROP_TOL, HOLD_TOL, ALPHA, BETA_B, FAIL_RESIDUAL, FAIL_TARGET, HOLDING) = range(19)
N_CTRL = 19

# ------------------------------------------------------------------ set-up
def compiled_form(force):
    """True if the core has a law for ``force`` (constant point forces and torques,
    spring–dampers, joint and Cartesian spring–dampers)."""
    return ((type(force) is PointForce and not callable(force.force))
            or (type(force) is Torque and not callable(force.torque))
            or type(force) in (SpringDamper, JointSpringDamper, CartesianSpringDamper))


def python_forces(model):
    """The applied forces of ``model`` the core calls back (no compiled form), in order."""
    return [force for force in model.forces if not compiled_form(force)]


def compilable(model):
    """True if every applied force of ``model`` has a compiled form (no callback)."""
    return not python_forces(model)


def flatten_forces(model):
    """The applied forces with a compiled form (:func:`compiled_form`) as arrays, in
    ``model.forces`` order.

    A point is an :class:`~natcoord.model.expressions.Affine` ``Σ c_s x_s + d``; point
    ``e`` has terms ``aff_slot/aff_coef[aff_ptr[e]:aff_ptr[e+1]]`` and constant
    ``aff_const[e]``. Quadratic forms ``Q(p) = Σ c x_a·x_b + Σ d·x_a + c0`` are pooled:
    form ``f`` has the quadratic terms ``form_qa/form_qb/form_qc[form_qptr[f]:form_qptr[f+1]]``,
    the linear terms ``form_la/form_ld[form_lptr[f]:form_lptr[f+1]]`` and the constant
    ``form_const[f]``. A joint spring's coordinate is one form (a slide, ``js_f1 = −1``) or
    two (``θ = atan2(Q[js_f1], Q[js_f0])``); Cartesian spring ``i``'s components ``d_k``
    are forms ``cs_form[i] + k``, ``k = 0, 1, 2``, with stiffness, damping and rest
    ``cs_k/cs_c/cs_rest[i, k]``.
    """
    kinds, index = [], []
    js_f, js_k, js_rest, js_c, forms = [], [], [], [], []
    affines, pf_aff, pf_vec, tq_body, tq_vec = [], [], [], [], []
    sp_a, sp_b, sp_k, sp_l0, sp_c = [], [], [], [], []
    cs_form, cs_k, cs_c, cs_rest = [], [], [], []

    def affine(expr):
        affines.append(expr)
        return len(affines) - 1

    for force in model.forces:
        if type(force) is PointForce and not callable(force.force):
            kinds.append(POINT_FORCE)
            index.append(len(pf_aff))
            pf_aff.append(affine(force.point))
            pf_vec.append(np.asarray(force.force, float).reshape(3))
        elif type(force) is Torque and not callable(force.torque):
            kinds.append(TORQUE)
            index.append(len(tq_body))
            tq_body.append(force.index)
            tq_vec.append(np.asarray(force.torque, float).reshape(3))
        elif type(force) is SpringDamper:
            kinds.append(SPRING)
            index.append(len(sp_a))
            sp_a.append(affine(force.a))
            sp_b.append(affine(force.b))
            sp_k.append(force.k)
            sp_l0.append(force.l0)
            sp_c.append(force.c)
        elif type(force) is JointSpringDamper:
            kinds.append(JOINT_SPRING)
            index.append(len(js_k))
            js_f.append([len(forms), len(forms) + 1 if force.angle else -1])
            forms.extend(force.forms)
            js_k.append(force.k)
            js_rest.append(force.rest)
            js_c.append(force.c)
        elif type(force) is CartesianSpringDamper:
            kinds.append(CARTESIAN_SPRING)
            index.append(len(cs_form))
            cs_form.append(len(forms))
            forms.extend(force.components)
            cs_k.append(force.k)
            cs_c.append(force.c)
            cs_rest.append(force.rest)
    ptr = np.cumsum([0] + [len(a.terms) for a in affines]).astype(np.int64)
    slots = np.array([s for a in affines for s in a.terms], np.int64)
    coefs = np.array([c for a in affines for c in a.terms.values()], float)
    consts = np.array([a.const for a in affines], float).reshape(-1, 3)

    def i64(x):
        return np.array(x, np.int64)

    def f64(x, shape=(-1,)):
        return np.array(x, float).reshape(shape)

    return dict(force_kind=i64(kinds), force_index=i64(index), aff_ptr=ptr, aff_slot=slots,
                aff_coef=coefs, aff_const=consts, pf_aff=i64(pf_aff), pf_vec=f64(pf_vec, (-1, 3)),
                tq_body=i64(tq_body), tq_vec=f64(tq_vec, (-1, 3)), sp_a=i64(sp_a),
                sp_b=i64(sp_b), sp_k=f64(sp_k), sp_l0=f64(sp_l0), sp_c=f64(sp_c),
                js_f0=i64([f[0] for f in js_f]), js_f1=i64([f[1] for f in js_f]),
                js_k=f64(js_k), js_rest=f64(js_rest), js_c=f64(js_c),
                cs_form=i64(cs_form), cs_k=f64(cs_k, (-1, 3)), cs_c=f64(cs_c, (-1, 3)),
                cs_rest=f64(cs_rest, (-1, 3)),
                form_qptr=i64(np.cumsum([0] + [len(q.quad) for q in forms])),
                form_qa=i64([a for q in forms for a, _ in q.quad]),
                form_qb=i64([b for q in forms for _, b in q.quad]),
                form_qc=f64([c for q in forms for c in q.quad.values()]),
                form_lptr=i64(np.cumsum([0] + [len(q.lin) for q in forms])),
                form_la=i64([a for q in forms for a in q.lin]),
                form_ld=f64([d for q in forms for d in q.lin.values()], (-1, 3)),
                form_const=f64([q.const for q in forms]))


def make_tables(model):
    """The model's constant arrays for the kernels (a :data:`Tables`); built
    once per model (:func:`~natcoord.model.derived.derived`: every run and sweep reads them)."""
    return derived(model, "compiled tables", lambda: _build_tables(model))


def _build_tables(model):
    forces = flatten_forces(model)
    tables = model.tables
    return Tables(*tables.kernel_args(), tables.pattern_row, tables.pattern_slot,
                  np.ascontiguousarray(model.J4), np.ascontiguousarray(model.gravity_force),
                  **forces, laws=NO_LAWS if tables.laws is None else tables.laws,
                  size_factor=size_factor(model))


def make_buffers(model, solver):
    """A run's :data:`Buffers`, with the partitioning tolerances of the block
    ``solver`` (drop_tol on every joint row until a factorization drops one, as
    ``KKTSolver._update_thresholds`` starts)."""
    n, m, nnz = model.n_coords, model.n_rows, model.tables.pattern_row.size
    n_joint_rows = m - 6 * model.n_bodies
    z = np.zeros
    S = Buffers(g=z(m), g_t=z(m), gamma=z(m), Gv=z(m), G=z((nnz, 3)),
                   F=z((4 * model.n_bodies, 3)), s=z(m), x=z(n), lam=z(m), zero=z(n),
                   K=z((7, 2 * n)), Kacc=z((7, 2 * n)), ystage=z(2 * n), ynew=z(2 * n),
                   ynewacc=z(2 * n), yproj=z(2 * n), yprev=z(2 * n), y=z(2 * n), f=z(2 * n),
                   threshold=z(n_joint_rows), dropped=np.zeros(n_joint_rows, np.int64),
                   mask=np.zeros(m, np.bool_), rhs_mask=np.zeros(m, np.bool_),
                   counts=np.zeros(7, np.int64), ctrl=z(N_CTRL), tmp=z((5, 3)),
                   comb=z(2 * n), stack=np.zeros((64, 3), np.int64), vals=z(64),
                   scale=z(m), held=np.zeros(m, np.bool_))
    S.ctrl[DROP_TOL], S.ctrl[HOLD_TOL] = solver.drop_tol, solver.hold_tol
    S.threshold[:] = solver.drop_tol
    return S


def pack_run(tables, buffers, plan, work):
    """The four tuples of a run — the model's tables, the run's buffers, the block
    solver's plan and work buffers — unpacked for the core once (``engine.pack``),
    in the order its step, rhs and projection take them."""
    return (engine.pack(tables, "T"), engine.pack(buffers, "S"),
            engine.pack(plan.arrays, "P"), engine.pack(work, "W"))


def make_segments(model, capacity):
    """Buffers of :func:`advance` for ``capacity`` steps' dense-output data:
    ``(t_old, h)``, ``(y_old, y_new)``, the stages ``K``."""
    n2 = 2 * model.n_coords
    return np.zeros((capacity, 2)), np.zeros((capacity, 2, n2)), np.zeros((capacity, 7, n2))


def make_store(Wk, n_rows, capacity):
    """A :data:`FactorStore` for ``capacity`` steps of the solver with work buffers ``Wk``
    (``capacity`` 0: nothing is kept). Not zeroed: a factorization writes all it
    solves with, and zeroing megabytes would cost a short run more than its sweep."""
    return FactorStore(*(np.empty((capacity, 6) + a.shape) for a in (Wk.B, Wk.inv, Wk.E,
                                                                      Wk.F, Wk.Gj)),
                       np.empty((capacity, 6, n_rows)))


def store_bytes(Wk, n_rows):
    """Bytes of one step of a :data:`FactorStore`."""
    return Wk.B.itemsize * 6 * (n_rows + sum(a.size for a in (Wk.B, Wk.inv, Wk.E, Wk.F,
                                                               Wk.Gj)))
