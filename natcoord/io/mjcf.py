"""Import MJCF (MuJoCo XML) through MuJoCo's own compiler (docs/model-format.md#mjcf).

MuJoCo (the optional ``mujoco`` package, ``pip install natcoord[mjcf]``)
compiles the file — defaults and classes, ``<include>``, ``<frame>``,
``childclass``, ``settotalmass``, ``inertiafromgeom``, mesh inertias and every
orientation convention are resolved as MuJoCo resolves them — and the
natcoord :class:`Mechanism` is read from the *compiled* ``MjModel`` at
``qpos0`` (``mj_kinematics``), which is the reference configuration:

* **Bodies.** A body with joints is a natcoord body, its frame the MuJoCo
  body frame at ``qpos0`` (``xpos``, ``xmat``), its mass, centre of mass and
  inertia ``body_mass``, ``body_ipos`` and ``body_inertia`` turned by
  ``body_iquat``. A body without joints is welded to its parent (MuJoCo's
  ``body_weldid``): its mass properties are lumped into the body it is welded
  to (exact: a rigid union) and it stays addressable as a named frame
  (``mech.frames``); bodies welded to the world are ground.
* **Joints** (:func:`body_joints`, the one dispatch of a body's joint list):
  one hinge, slide or ball joint; two hinges at one point with perpendicular
  axes (a universal joint, b relative to a ``Rot(axis₁, q₁) Rot(axis₂, q₂)`` —
  MuJoCo's order; two perpendicular hinge axes whose lines meet, as a hinge
  turns about its axis line wherever its anchor is on it); a hinge and a slide along one line (a cylindrical joint);
  a free joint (a free body). The axes and anchors are MuJoCo's ``xaxis`` and
  ``xanchor`` at ``qpos0``, so a hinge or slide coordinate *is* MuJoCo's
  ``qpos − qpos0`` (sign and zero), and joint space follows MuJoCo's qpos
  order (bodies depth first, a body's joints in order). Any other joint list is
  one ``Mechanism.add_compound`` (docs/model-format.md#6-compound-joints-several-joints-between-two-bodies),
  each DOF its own column; hinges and slides without one exact constraint set
  (dog's scapulae: three hinges on skew lines) are composed through massless
  bodies, one per split (:func:`_compound`); what else it cannot model exactly
  is refused.
* **Ball and free joints.** natcoord's spherical coordinate is the
  quaternion ``(x, y, z, w)`` of the child relative to its parent in the
  child's axes: MuJoCo's ball ``qpos`` ``(w, x, y, z)`` reordered, its
  ``qvel`` the same angular velocity. A free body's coordinates are relative
  to its reference placement ``(x₀, A)``: position ``Aᵀ (x − x₀)``,
  quaternion of ``Aᵀ R`` and ``q̇ = (Rᵀ ẋ, ω_body)`` (Pinocchio's), where
  MuJoCo's free ``qpos`` is the world position and quaternion and its
  ``qvel`` the world velocity and the body-frame angular velocity;
  :func:`from_mujoco` converts.
* **Forces.** ``opt.gravity`` (zero with ``<flag gravity="disable"/>``);
  gravity compensation ``body_gravcomp`` as the constant force
  ``−gravcomp · m g`` at each centre of mass; hinge and slide ``stiffness``
  (rest ``qpos_spring``) and ``damping`` as joint spring–dampers
  (:meth:`Mechanism.add_joint_spring`), unless the spring/damper flags
  disable them.
* **Loops.** ``<equality>`` ``connect`` and ``weld`` between bodies or sites
  become exact spherical and fixed joints (MuJoCo's are soft); a weld whose
  ``relpose`` is not the reference pose is refused.

* **Actuators.** Joint-transmission actuators on hinges and slides with a
  fixed gain and no or an affine bias (motor, position, velocity) are recorded
  (``import_report["actuators"]``) and applied as joint torques when a run asks for them
  (``nc.simulate(model, t_end, u=nc.actuator_torques(model, ctrl))``).

Everything else that acts in MuJoCo — contacts, joint limits, armature
(a constant mass matrix cannot hold it exactly: docs/model-format.md),
friction loss, tendons, other actuators, sensors, fluid forces, other equality
constraints, mocap motion, ball/free joint springs and dampers — is not
modelled: it is named, element by element, in one ``UserWarning`` per file
and kept on ``mech.import_report["not_modelled"]`` (and ``model.import_report``).
What cannot be built exactly (joint lists without a builder method, bodies
without mass) is refused with one ``ValueError`` naming every such element.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..model.mechanism import GROUND, Mechanism
from ..util.optional import require
from ..util.checks import number
from .xml_common import (MAX_XML_BYTES, combined_mass_properties, compound_exists,
                         read_regular_file, too_large)

#: two hinges meet at one point / a hinge and a slide share a line within this
#: (relative to the model's size); perpendicular or parallel axes within AXIS_TOL
POINT_TOL = 1e-9
AXIS_TOL = 1e-9
#: the not-modelled entry of the actuators a run applies only when given their
#: torques: a plain run is MuJoCo's with actuation disabled
APPLIED_ON_REQUEST = "actuators (applied only with u=nc.actuator_torques(model, ctrl))"


class Refusal(ValueError):
    """A body's joint list the builder cannot express exactly (:func:`body_joints`);
    the importer collects them into one ``ValueError`` per file."""


def _mujoco(purpose):
    return require("mujoco", "mjcf", purpose)


def _name(m, kind, i, fallback):
    name = m.__getattribute__(kind)(i).name
    return name if name else fallback


def load_mjcf(path, t_end=10.0) -> Mechanism:
    """A :class:`Mechanism` from an MJCF file, compiled by MuJoCo (module docstring).

    Raises ``ImportError`` naming the extra when MuJoCo is not installed,
    ``ValueError`` naming the file and, in one message, every element that
    cannot be imported exactly. Warns once (``UserWarning``) with every
    element that is imported but not modelled; the list is also
    ``mech.import_report["not_modelled"]``.
    """
    mujoco = _mujoco("reading MJCF files")
    path = Path(path)
    try:                            # as the URDF and model-file readers say it; a pipe
        read_regular_file(path, 0)  # would block MuJoCo's reader
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    if path.stat().st_size > MAX_XML_BYTES:
        raise too_large(path)
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except (ValueError, OSError) as err:      # MuJoCo's compiler error names the element
        raise ValueError(f"{path}: MuJoCo cannot compile the file: "
                         f"{' '.join(str(err).split())}") from None
    return _mechanism(m, path.stem, str(path), t_end)


def from_mjmodel(m, name="mjcf", source="<MjModel>", t_end=10.0) -> Mechanism:
    """A :class:`Mechanism` from a compiled ``mujoco.MjModel`` (see :func:`load_mjcf`)."""
    return _mechanism(m, name, source, t_end)


def _mechanism(m, name, source, t_end):
    """The import itself; its warning names the caller of load_mjcf/from_mjmodel."""
    mujoco = _mujoco("reading MuJoCo models")
    d = mujoco.MjData(m)
    mujoco.mj_kinematics(m, d)                   # qpos0: the reference configuration
    flags = m.opt.disableflags
    off = {f: bool(flags & int(getattr(mujoco.mjtDisableBit, f"mjDSBL_{f.upper()}")))
           for f in ("gravity", "spring", "damper", "contact", "limit", "equality",
                     "actuation", "frictionloss", "sensor", "constraint")}
    gravity = np.zeros(3) if off["gravity"] else np.array(m.opt.gravity, float)
    mech = Mechanism(gravity=gravity, name=name)
    mech.scenario = {"t_end": number(t_end, "t_end", source, "positive")}
    refused, not_modelled = [], {}

    def note(what, element):
        not_modelled.setdefault(what, []).append(element)

    body_names = [_name(m, "body", b, f"body{b}") for b in range(m.nbody)]
    weld = np.array(m.body_weldid)
    pose = {b: (np.array(d.xpos[b]), np.array(d.xmat[b]).reshape(3, 3)) for b in range(m.nbody)}
    # natcoord bodies: MuJoCo bodies with joints; the others are lumped into the
    # body they are welded to (ground for the world's)
    natcoord = {}                                # MuJoCo body -> natcoord body name or GROUND
    for b in range(m.nbody):
        root = int(weld[b])
        natcoord[b] = GROUND if root == 0 else body_names[root]
    welded = {}                                  # weld root -> its bodies, root first
    for c in range(1, m.nbody):
        welded.setdefault(int(weld[c]), []).append(c)
    for b in range(1, m.nbody):
        if weld[b] != b:
            continue
        members = welded[b]
        x, R = pose[b]
        parts = []
        for c in members:
            Ri = np.array(d.ximat[c]).reshape(3, 3)
            Ic = Ri @ np.diag(m.body_inertia[c]) @ Ri.T
            parts.append((float(m.body_mass[c]), R.T @ (d.xipos[c] - x), R.T @ Ic @ R))
        mass, com, inertia = combined_mass_properties(parts)
        try:
            mech.add_body(body_names[b], mass=mass, com=com, inertia=inertia, origin=x,
                          axes=R, local=True)
        except ValueError as err:
            refused.append(f"<body name=\"{body_names[b]}\">: {err}")
            for c in members:
                natcoord[c] = None
    for c in range(1, m.nbody):
        if weld[c] != c and natcoord[c] is not None:
            x, R = pose[c]
            owner = natcoord[c]
            mech.attach_frame(body_names[c], owner, origin=x, axes=R)
        if m.body_mocapid[c] >= 0:
            note("mocap motion (the body stays at its reference pose)", body_names[c])

    dofs = {}
    for b in range(1, m.nbody):
        if weld[b] != b or natcoord[b] is None:
            continue
        parent = natcoord[int(m.body_parentid[b])]
        if parent is None:              # its parent's refusal says why: not named twice
            continue
        joints = [_joint_spec(m, d, j, body_names) for j in
                  range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b])]
        try:
            added = body_joints(mech, parent, body_names[b], joints)
        except Refusal as err:
            refused.append(f"<body name=\"{body_names[b]}\">: {err}")
            continue
        for spec, (joint, coordinate, sign, column) in zip(joints, added):
            dofs[spec["name"]] = {"joint": joint, "coordinate": coordinate, "sign": sign,
                                  "column": column, "kind": spec["kind"],
                                  "qpos": spec["qpos"], "dof": spec["dof"]}
            _joint_passive(m, mech, spec, joint, coordinate, sign, off, note)

    _gravity_compensation(m, d, mech, natcoord, body_names, off)
    _equalities(m, d, mech, natcoord, body_names, off, refused, note)
    actuators = _actuators(m, dofs, off)
    _not_modelled(m, off, body_names, note, actuators)
    if not mech.bodies and not refused:
        refused.append("no body moves (every body is welded to the world); natcoord "
                       "needs at least one")
    if refused:
        raise ValueError(f"{source}: cannot be imported exactly ({len(refused)} "
                         f"element{'s' if len(refused) > 1 else ''}): " + "; ".join(refused))
    mech.import_report = {"source": source, "format": "mjcf", "dofs": dofs,
                          "qpos0": np.array(m.qpos0), "actuators": actuators,
                          "not_modelled": not_modelled}
    if not_modelled:
        warnings.warn(f"{source}: imported without " + "; ".join(
            f"{what}: {', '.join(items)}" for what, items in not_modelled.items())
            + " (mech.import_report['not_modelled'])", UserWarning, stacklevel=3)
    return mech


_KINDS = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}


def _joint_spec(m, d, j, body_names):
    """A MuJoCo joint at qpos0: name, kind, world anchor and axis, DOF indices."""
    body = body_names[m.jnt_bodyid[j]]
    return {"index": j, "name": _name(m, "joint", j, f"{body}.joint{j}"),
            "kind": _KINDS[int(m.jnt_type[j])], "point": np.array(d.xanchor[j]),
            "axis": np.array(d.xaxis[j]), "qpos": int(m.jnt_qposadr[j]),
            "dof": int(m.jnt_dofadr[j])}


def body_joints(mech, parent, body, joints):
    """Join ``body`` to ``parent`` by MuJoCo's joint list ``joints`` (parent → child).

    The one dispatch of a body's joints. Returns, per MuJoCo joint, the
    natcoord ``(joint name, coordinate, sign, column)`` its DOF became
    (coordinate None: the joint's only one; ``"free"``/``"ball"`` for those
    kinds; sign −1 where MuJoCo's axis is opposite natcoord's; column: its
    joint-space column, or the joint's name for a ball or free joint). Raises :class:`Refusal`
    with the reason for a list no builder method models exactly.
    """
    kinds = [j["kind"] for j in joints]
    scale = max(1.0, max((np.abs(j["point"]).max() for j in joints), default=1.0))
    if kinds == ["free"]:
        return [(body, "free", 1, body)]          # natcoord: a free body, named after it
    if len(joints) == 1:
        (j,) = joints
        name = j["name"]
        add = {"hinge": mech.add_revolute, "slide": mech.add_prismatic}.get(j["kind"])
        if add is not None:
            _built(lambda: add(parent, body, point=j["point"], axis=j["axis"], name=name))
            return [(name, None, 1, name)]
        _built(lambda: mech.add_spherical(parent, body, point=j["point"], name=name))
        return [(name, "ball", 1, name)]
    if len(joints) == 2:
        a, b = joints
        cosine = float(a["axis"] @ b["axis"])
        # a hinge is its axis line (any anchor on it turns the body alike): two
        # hinges whose perpendicular lines meet are a universal joint at that point
        (t, s), *_ = np.linalg.lstsq(np.column_stack([a["axis"], -b["axis"]]),
                                     b["point"] - a["point"], rcond=None)
        meet = a["point"] + t * a["axis"]
        lines_meet = np.abs(meet - b["point"] - s * b["axis"]).max() <= POINT_TOL * scale
        if kinds == ["hinge", "hinge"] and abs(cosine) <= AXIS_TOL and lines_meet:
            name = a["name"]
            _built(lambda: mech.add_universal(parent, body, point=meet, axis_a=a["axis"],
                                              axis_b=b["axis"], name=name))
            return [(name, "angle_a", 1, f"{name}.angle_a"),
                    (name, "angle_b", 1, f"{name}.angle_b")]
        if sorted(kinds) == ["hinge", "slide"] and abs(abs(cosine) - 1.0) <= AXIS_TOL:
            hinge, slide = (a, b) if a["kind"] == "hinge" else (b, a)
            name = a["name"]
            _built(lambda: mech.add_cylindrical(parent, body, point=hinge["point"],
                                                axis=hinge["axis"], name=name))
            sign = 1 if cosine > 0 else -1
            out = {hinge["name"]: (name, "angle", 1, f"{name}.angle"),
                   slide["name"]: (name, "slide", sign, f"{name}.slide")}
            return [out[j["name"]] for j in joints]
    return _compound(mech, parent, body, joints)


def _compound(mech, parent, body, joints):
    """Several joints in one body: ``Mechanism.add_compound`` with the DOF in MuJoCo's
    order (the exact constraint set of their motion set). Each DOF is its own
    joint-space column.

    A sequence of hinges and slides without such a set (dog's scapulae: three
    hinges on skew lines) is MuJoCo's composition through frames: its longest
    leading run that has a set (at least its first joint) joins the parent to a
    massless body, named ``<body>.<last joint of the run>``, which moves as that
    frame (placed as ``body`` at the reference configuration, where every
    coordinate is zero), and the rest joins it to ``body`` (split again if
    needed). Exact: a massless body has no inertia and so adds no term to the
    equations of motion, and the block factorization pivots on it with its
    neighbours' (natcoord.linalg.blockldl). Other lists (ball or free joints with
    more) are refused, naming the joints."""
    name = "+".join(j["name"] for j in joints)
    dofs = [(j["name"], j["kind"], j["point"], j["axis"]) for j in joints]
    if not compound_exists(dofs) and {j["kind"] for j in joints} <= {"hinge", "slide"}:
        head = next(k for k in range(len(joints) - 1, 0, -1)
                    if k == 1 or compound_exists(dofs[:k]))
        frame = f"{body}.{joints[head - 1]['name']}"
        placed = mech.body(body)
        _built(lambda: mech.add_body(frame, 0.0, com=placed.origin, inertia=np.zeros((3, 3)),
                                     origin=placed.origin, axes=placed.axes))
        return body_joints(mech, parent, frame, joints[:head]) \
            + body_joints(mech, frame, body, joints[head:])
    _built(lambda: mech.add_compound(parent, body, dofs, name=name))
    return [(name, j["name"], 1, j["name"]) for j in joints]


def _built(action):
    """``action()``, with a builder's ``ValueError`` turned into a refusal."""
    try:
        return action()
    except ValueError as err:
        raise Refusal(str(err)) from None


def _joint_passive(m, mech, spec, joint, coordinate, sign, off, note):
    """Stiffness (rest ``qpos_spring``) and damping of one MuJoCo joint."""
    j = spec["index"]
    k = 0.0 if off["spring"] else float(m.jnt_stiffness[j])
    nv = {"free": 6, "ball": 3}.get(spec["kind"], 1)
    c = 0.0 if off["damper"] else m.dof_damping[spec["dof"]:spec["dof"] + nv]
    if not (k or np.any(c)):
        return
    if spec["kind"] in ("free", "ball"):
        note(f"{spec['kind']} joint stiffness and damping", spec["name"])
        return
    available = dict(next(j for j in mech.joints if j.name == joint).coordinates)
    if (coordinate if coordinate is not None else next(iter(available), None)) \
            not in available:                  # a DOF of a compound joint: no quadratic form
        note("stiffness and damping of DOF without a joint coordinate", spec["name"])
        return
    rest = sign * float(m.qpos_spring[spec["qpos"]] - m.qpos0[spec["qpos"]])
    mech.add_joint_spring(joint, stiffness=k, rest=rest, damping=float(c[0]),
                          coordinate=coordinate, name=f"{spec['name']}.spring")


def _actuators(m, dofs, off):
    """MuJoCo's actuators that natcoord applies exactly as joint torques, when a run
    asks for them (``nc.actuator_torques(model, ctrl)``): a joint transmission on a
    hinge or slide DOF, no activation dynamics, a fixed gain and no or an affine bias —
    ``<motor>``, ``<position>``, ``<velocity>``, ``<general>`` of that form. MuJoCo's
    force is ``f = gain · ctrl + b₀ + b₁ · gear · qpos + b₂ · gear · qvel`` (ctrl
    clamped to ``ctrlrange`` when ``ctrllimited`` and clamping is on, f to
    ``forcerange`` when ``forcelimited``) and the joint force ``gear · f`` (MuJoCo's
    ``mj_fwdActuation`` for a joint transmission, whose length is ``gear · qpos``).
    ``{actuator: {"joint", "gear", "gain", "bias": (b₀, b₁, b₂), "ctrlrange",
    "forcerange"}}``, a range None where MuJoCo does not clamp."""
    mujoco = _mujoco("reading MuJoCo models")
    if off["actuation"]:
        return {}
    clamp_ctrl = not m.opt.disableflags & int(mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL)
    out = {}
    for u in range(m.nu):
        if not (m.actuator_trntype[u] == mujoco.mjtTrn.mjTRN_JOINT
                and m.actuator_gaintype[u] == mujoco.mjtGain.mjGAIN_FIXED
                and int(m.actuator_biastype[u]) in (int(mujoco.mjtBias.mjBIAS_NONE),
                                                    int(mujoco.mjtBias.mjBIAS_AFFINE))
                and m.actuator_dyntype[u] == mujoco.mjtDyn.mjDYN_NONE):
            continue
        joint = m.joint(int(m.actuator_trnid[u, 0])).name
        if dofs.get(joint, {}).get("kind") not in ("hinge", "slide"):
            continue
        affine = m.actuator_biastype[u] == mujoco.mjtBias.mjBIAS_AFFINE
        out[_name(m, "actuator", u, f"actuator{u}")] = {
            "joint": joint, "gear": float(m.actuator_gear[u, 0]),
            "gain": float(m.actuator_gainprm[u, 0]),
            "bias": tuple(float(b) for b in m.actuator_biasprm[u, :3]) if affine
            else (0.0, 0.0, 0.0),
            "ctrlrange": tuple(map(float, m.actuator_ctrlrange[u]))
            if m.actuator_ctrllimited[u] and clamp_ctrl else None,
            "forcerange": tuple(map(float, m.actuator_forcerange[u]))
            if m.actuator_forcelimited[u] else None}
    return out


def _gravity_compensation(m, d, mech, natcoord, body_names, off):
    """``−gravcomp · m g`` at the centre of mass of each body that has it."""
    if off["gravity"]:
        return
    for b in range(1, m.nbody):
        gc = float(m.body_gravcomp[b])
        owner = natcoord[b]
        if gc == 0.0 or owner is GROUND or owner is None or m.body_mass[b] == 0.0:
            continue
        mech.add_force(owner, point=np.array(d.xipos[b]),
                       force=-gc * float(m.body_mass[b]) * np.array(m.opt.gravity),
                       name=f"{body_names[b]}.gravcomp")


def _equalities(m, d, mech, natcoord, body_names, off, refused, note):
    """``connect`` → spherical joint, ``weld`` → fixed joint, both exact."""
    mujoco = _mujoco("reading MuJoCo models")
    eq = mujoco.mjtEq
    for e in range(m.neq):
        label = _name(m, "equality", e, f"equality{e}")
        kind = int(m.eq_type[e])
        what = {int(eq.mjEQ_CONNECT): "connect", int(eq.mjEQ_WELD): "weld"}.get(kind)
        where = f"<equality><{what or 'equality'} name=\"{label}\">"
        if off["equality"] or off["constraint"]:
            note("equality constraints (disabled by a flag)", label)
            continue
        if what is None:
            note("equality constraints other than connect and weld", label)
            continue
        if not m.eq_active0[e]:
            note("inactive equality constraints", label)
            continue
        sites = int(m.eq_objtype[e]) == int(mujoco.mjtObj.mjOBJ_SITE)
        o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        b1, b2 = (int(m.site_bodyid[o1]), int(m.site_bodyid[o2])) if sites else (o1, o2)
        a, b = natcoord[b1], natcoord[b2]
        if a is None or b is None:
            continue                                   # its body is refused already
        if a is b:
            note("equality constraints within one rigid body", label)
            continue
        data = np.array(m.eq_data[e])
        x1, R1 = np.array(d.xpos[b1]), np.array(d.xmat[b1]).reshape(3, 3)
        x2, R2 = np.array(d.xpos[b2]), np.array(d.xmat[b2]).reshape(3, 3)
        if sites:
            p1, p2 = np.array(d.site_xpos[o1]), np.array(d.site_xpos[o2])
        elif what == "connect":
            p1, p2 = x1 + R1 @ data[0:3], x2 + R2 @ data[3:6]
        else:                      # weld: body1's relpos point meets body2's anchor
            p1, p2 = x1 + R1 @ data[3:6], x2 + R2 @ data[0:3]
        scale = max(1.0, np.abs(p1).max())
        problem = None
        if np.abs(p1 - p2).max() > POINT_TOL * scale:
            problem = (f"its two points are {np.linalg.norm(p1 - p2):.3g} m apart at qpos0; "
                       f"an exact joint needs them to coincide")
        elif what == "weld" and not sites:
            rel = np.zeros(4)
            mujoco.mju_mat2Quat(rel, (R1.T @ R2).ravel())
            if 1.0 - abs(float(rel @ data[6:10]) / np.linalg.norm(data[6:10])) > 1e-12:
                problem = ("its relpose is not the bodies' relative pose at qpos0; an exact "
                           "weld keeps the reference pose")
        if problem:
            refused.append(f"{where}: {problem}")
            continue
        add = mech.add_spherical if what == "connect" else mech.add_fixed
        try:
            add(a, b, point=p2, name=label)
        except ValueError as err:
            refused.append(f"{where}: {err}")


def _not_modelled(m, off, body_names, note, applicable):
    """Name every element that acts in MuJoCo but not in the natcoord model (the
    ``applicable`` actuators act only in a run given their torques)."""
    if not (off["contact"] or off["constraint"]):
        for g in range(m.ngeom):
            if m.geom_contype[g] or m.geom_conaffinity[g]:
                note("contacts", _name(m, "geom", g, f"geom{g} of {body_names[m.geom_bodyid[g]]}"))
    for j in range(m.njnt):
        name = _name(m, "joint", j, f"{body_names[m.jnt_bodyid[j]]}.joint{j}")
        dof = slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + {0: 6, 1: 3}.get(int(m.jnt_type[j]), 1))
        if m.jnt_limited[j] and not (off["limit"] or off["constraint"]):
            note("joint limits", name)
        if np.any(m.dof_armature[dof]):
            note("armature (rotor inertia: not a constant natural-coordinate mass)", name)
        if np.any(m.dof_frictionloss[dof]) and not (off["frictionloss"] or off["constraint"]):
            note("friction loss", name)
        if m.jnt_actgravcomp[j] and np.any(m.body_gravcomp):
            note("gravity compensation routed through actuators", name)
    for t in range(m.ntendon):
        note("tendons", _name(m, "tendon", t, f"tendon{t}"))
    if not off["actuation"]:
        for u in range(m.nu):
            name = _name(m, "actuator", u, f"actuator{u}")
            note(APPLIED_ON_REQUEST if name in applicable else "actuators", name)
    if not off["sensor"]:
        for s in range(m.nsensor):
            note("sensors", _name(m, "sensor", s, f"sensor{s}"))
    if m.opt.density > 0 or m.opt.viscosity > 0:
        note("fluid forces", f"<option density=\"{m.opt.density:g}\" "
                             f"viscosity=\"{m.opt.viscosity:g}\">")
    for f in range(m.nflex):
        note("flexes", _name(m, "flex", f, f"flex{f}"))
    if m.nplugin:
        note("plugins", f"{m.nplugin} plugin instance(s)")


def from_mujoco(model, qpos, qvel=None, qacc=None):
    """natcoord joint-space ``q``, ``q̇`` (and ``q̈``) of MuJoCo's ``qpos``, ``qvel``, ``qacc``.

    ``model``: the natcoord model (or Mechanism) of :func:`load_mjcf` (its
    ``import_report["dofs"]`` maps MuJoCo's joints). Returns dicts keyed by
    natcoord joint-space column names (``nc.joint_state`` takes them): hinge
    and slide values as they are (sign as the axis), a ball's quaternion
    reordered to ``(x, y, z, w)``, a free body's position, orientation and
    velocities relative to its reference placement (module docstring); ``q̈``
    of a free body is the derivative of ``(Rᵀ ẋ, ω_body)``.
    """
    report = model.import_report
    bodies = {b.name: b for b in model.bodies}
    q, qd, qdd = {}, {}, {}
    mujoco = _mujoco("converting MuJoCo joint positions")
    for entry in report["dofs"].values():
        joint, coordinate, sign, column = (entry[k] for k in ("joint", "coordinate", "sign",
                                                               "column"))
        iq, iv = entry["qpos"], entry["dof"]
        if coordinate == "free":
            body = bodies[joint]
            A, x0 = body.axes, body.origin
            R = np.zeros(9)
            mujoco.mju_quat2Mat(R, np.asarray(qpos[iq + 3:iq + 7], float))
            R = R.reshape(3, 3)
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, (A.T @ R).ravel())
            q[column] = np.concatenate([A.T @ (np.asarray(qpos[iq:iq + 3]) - x0),
                                       quat[[1, 2, 3, 0]]])
            if qvel is not None:
                v_body = R.T @ np.asarray(qvel[iv:iv + 3])
                w = np.asarray(qvel[iv + 3:iv + 6], float)
                qd[column] = np.concatenate([v_body, w])
                if qacc is not None:
                    qdd[column] = np.concatenate([R.T @ np.asarray(qacc[iv:iv + 3])
                                                 - np.cross(w, v_body),
                                                 np.asarray(qacc[iv + 3:iv + 6])])
        elif coordinate == "ball":
            q[column] = np.asarray(qpos[iq:iq + 4], float)[[1, 2, 3, 0]]
            for out, values in ((qd, qvel), (qdd, qacc)):
                if values is not None:
                    out[column] = np.asarray(values[iv:iv + 3], float)
        else:
            q[column] = sign * (qpos[iq] - report["qpos0"][iq])
            for out, values in ((qd, qvel), (qdd, qacc)):
                if values is not None:
                    out[column] = sign * values[iv]
    return (q, qd) if qacc is None else (q, qd, qdd)
