"""The model as the compiled core reads it, and the core's force laws for the Python side.

The core (natcoord/core/src) evaluates the constraints, gravity and the built-in
applied forces from one named tuple of constant arrays per model, :data:`Tables`
(field layout ``src/nc_fields.h``), built here once per model (:func:`make_tables`).
The built-in force kinds — constant point forces and torques, spring–dampers,
joint and Cartesian spring–dampers — are flattened into arrays
(:func:`flatten_forces`); their law, energy and directional derivative exist only
in natcoord/core/src/forces.c. Everything above the model layer evaluates them
through the core: the steppers and the sensitivity sweep directly, the
:class:`~natcoord.dynamics.workspace.Workspace` (``nc.accelerations``, inverse
dynamics, assembly), :func:`~natcoord.dynamics.linearization.linearize` and the
energy reports (:meth:`~natcoord.model.frozen.Model.energy`) through
:func:`generalized_forces`, :func:`force_derivative`, :func:`energy` and
:func:`spring_parameter_force` here.

What users write in Python — point forces and torques given as callables of
``(t, state)``, force classes of their own (``apply`` and, if conservative,
``potential``), joint torque inputs — has no law in the core
(:func:`python_forces`): the core calls it back at every stage, the workspace
calls its ``apply``, linearization differentiates it by central differences.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core import engine
from .derived import derived
from .drives import NO_LAWS
from .forces import CartesianSpringDamper, JointSpringDamper, PointForce, SpringDamper, Torque

#: force kinds in the flattened force list (natcoord/core/src/dopri5.h, ``NC_POINT_FORCE`` …)
POINT_FORCE, TORQUE, SPRING, JOINT_SPRING, CARTESIAN_SPRING = range(5)

Tables = namedtuple("Tables", [
    "quad_row", "quad_a", "quad_b", "quad_c", "quad_w", "quad_ga", "quad_gb",
    "lin_row", "lin_a", "lin_d", "lin_w", "lin_g", "const_row", "const_c", "const_w",
    "pattern_row", "pattern_slot", "J4", "gravity_force",
    "force_kind", "force_index", "aff_ptr", "aff_slot", "aff_coef", "aff_const",
    "pf_aff", "pf_vec", "tq_body", "tq_vec", "sp_a", "sp_b", "sp_k", "sp_l0", "sp_c",
    "js_f0", "js_f1", "js_k", "js_rest", "js_c", "cs_form", "cs_k", "cs_c", "cs_rest",
    "form_qptr", "form_qa", "form_qb", "form_qc", "form_lptr", "form_la", "form_ld",
    "form_const", "laws", "size_factor"])


def compiled_form(force):
    """True if the core has a law for ``force`` (constant point forces and torques,
    spring–dampers, joint and Cartesian spring–dampers)."""
    return ((type(force) is PointForce and not callable(force.force))
            or (type(force) is Torque and not callable(force.torque))
            or type(force) in (SpringDamper, JointSpringDamper, CartesianSpringDamper))


def python_forces(model):
    """The applied forces of ``model`` the core calls back (no compiled form), in order
    (a tuple, built once per model)."""
    return derived(model, "python forces",
                   lambda: tuple(f for f in model.forces if not compiled_form(f)))


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


def size_factor(model):
    """``min(1, L)`` for the mechanism's size ``L`` in metres (the diagonal of the box
    around its bodies' origins and centres of mass in the reference configuration;
    1 if that is 0): the projection converges the kept rows to ``MARGIN · proj_tol``
    times this factor (the core's ``nc_project``, natcoord/core/src/dopri5.c, reads it
    from :data:`Tables`).

    Why: rows mix units, points in metres and angles (parallel axes, rigid-body
    rows) without, and a dropped row that is an angle is a combination of point
    rows with coefficients ~1/L; its velocity residual also grows with the
    relative position error δp/L. Held to ``MARGIN · proj_tol`` in metres, kept
    rows left the dropped axis row of ``six_bar(length=1e-3)`` above ``proj_tol``
    (positions at 5e-12 m, ``G v + g_t`` of the dropped row 1.03e-10 at
    ``rtol=1e-10``). A mechanism of a metre or more is unchanged.
    """
    return derived(model, "projection size factor", lambda: _size_factor(model))


def _size_factor(model):
    X = np.asarray(model.p_reference, float).reshape(-1, 4, 3)
    J4 = np.asarray(model.J4, float)
    mass = J4[:, :1, 0]
    com = X[:, 0] + np.einsum("ik,ikj->ij", J4[:, 0, 1:] / np.where(mass > 0.0, mass, 1.0),
                              X[:, 1:])             # a massless body's: its origin
    points = np.concatenate([X[:, 0], com])
    size = float(np.linalg.norm(np.ptp(points, axis=0))) if points.size else 0.0
    return min(1.0, size) if size > 0.0 else 1.0


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


def packed_tables(model):
    """:func:`make_tables` unpacked for the core once (``engine.pack``): a call with it
    skips asking ~50 arrays for their buffers."""
    return derived(model, "packed tables", lambda: engine.pack(make_tables(model), "T"))


# ------------------------------------------------- the core's laws, for Python
def generalized_forces(model, p, v, out):
    """``out`` (4 n, 3) = gravity plus the built-in applied forces at ``(p, v)``
    (the core's ``nc_generalized_forces``); the forces of :func:`python_forces` are
    not included. ``p, v`` are C-contiguous float arrays of 12 n entries."""
    engine.generalized_forces(packed_tables(model), p, v, out)
    return out


def force_derivative(model, p, v, dp, dv, out):
    """``out`` (4 n, 3) = ``∂f/∂p dp + ∂f/∂v dv`` of the built-in applied forces at
    ``(p, v)``, exact (the core's ``nc_force_derivative``, which Radau's Jacobian and
    the sensitivity sweep use); gravity is constant."""
    engine.force_derivative(packed_tables(model), p, v, dp, dv, out)
    return out


def energy(model, p, v):
    """``½ vᵀ M v − f_g·p`` plus the built-in springs' energy (the core's ``nc_energy``);
    :meth:`~natcoord.model.frozen.Model.energy` adds the ``potential`` of the forces of
    :func:`python_forces` that have one."""
    return engine.energy(packed_tables(model), p, v)


def spring_parameter_force(model, index, parameter, p, v, out):
    """``out`` (4 n, 3) = ``∂f/∂θ`` at ``(p, v)`` of spring–damper ``index`` (0-based among
    the spring–dampers) for its ``"stiffness"``, ``"damping"`` or ``"rest_length"``, by
    the core's law evaluated for that spring alone.

    The tension ``T = k (l − l0) + c l̇`` is linear in each parameter, so the law with
    ``(k, c) = (1, 0)`` is ``∂f/∂k``, with ``(0, 1)`` it is ``∂f/∂c``, and ``k`` times its
    change as ``l0`` grows by one is ``∂f/∂l0`` (``∂T/∂l0 = −k``).
    """
    if parameter not in ("stiffness", "damping", "rest_length"):
        raise ValueError(f"spring parameter must be 'stiffness', 'damping' or 'rest_length', "
                         f"got {parameter!r}")
    T = make_tables(model)
    damping = parameter == "damping"
    k, c, l0 = (np.zeros_like(a) for a in (T.sp_k, T.sp_c, T.sp_l0))
    k[index], c[index], l0[index] = float(not damping), float(damping), T.sp_l0[index]
    alone = T._replace(force_kind=np.array([SPRING], np.int64),
                       force_index=np.array([index], np.int64),
                       gravity_force=np.zeros_like(T.gravity_force), sp_k=k, sp_c=c, sp_l0=l0)
    engine.generalized_forces(alone, p, v, out)
    if parameter == "rest_length":
        stretched = np.zeros_like(out)
        l0[index] += 1.0                  # the table reads this array: the law at l0 + 1
        engine.generalized_forces(alone, p, v, stretched)
        out *= -T.sp_k[index]
        out += T.sp_k[index] * stretched
    return out
