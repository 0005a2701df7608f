"""Import URDF robot descriptions as Pinocchio and KDL read them (docs/model-format.md).

The URDF tree at zero joint positions is the reference configuration of the
natcoord mechanism (body frame = link frame, points and axes in world
coordinates). As in Pinocchio and KDL, a link on a ``fixed`` joint is no body
of its own: its mass properties are lumped into its parent's, exactly (the
parallel-axis theorem, rotated into the parent frame), so the zero or planar
inertias of sensor, tool and dummy links disappear — and the link stays a
named frame of the body it was lumped into (``Mechanism.frames``). The root
link is ground, or with ``floating_base=True`` a free body.

Joints: ``revolute``/``continuous`` (revolute), ``prismatic``, ``fixed``
(lumped), ``floating`` (a free body). A link without mass after lumping
with one moving joint leaving it is an intermediate frame: the chain of
moving joints through such links, from the last link with mass to the next,
is one compound joint (``Mechanism.add_compound``: three revolutes through a
point a spherical joint, two a universal joint, …), each URDF joint a DOF
keeping its name, the massless links frames that move with the chain; a chain
without an exact constraint set runs through massless bodies (``join`` in
:func:`load_urdf`).
Loops: ``<loop_joint>`` elements (revolute, continuous, prismatic, fixed,
spherical) inside ``<robot>``, with
``<parent link>``, ``<child link>``, ``<origin>`` (in the parent link frame)
and ``<axis>``. Every link natcoord cannot take as a body is named in one
error. Inertias: positive principal moments that violate the triangle
inequality (romeo_small's shoulders: no mass distribution has them) are
simulated as given, as Pinocchio reads them — the dynamics are defined, every
solve uses the spatial inertia — and named in the file's warning and on
``import_report["non_physical_inertia"]``; a negative principal moment is
refused. ``inertia_repair=True`` projects both to the nearest physical
inertias instead, with a warning giving each change.

Forces: ``<dynamics damping="c">`` of a revolute, continuous or prismatic
joint is the joint damper ``τ = −c q̇`` (:meth:`Mechanism.add_joint_spring`).
Everything else that would act on the robot — collision geometry (contacts),
joint limits, effort and velocity limits, ``<dynamics friction>``, ``<mimic>``,
``<safety_controller>``, ``<calibration>``, ``<transmission>``, ``<gazebo>``,
``<sensor>``, damping inside compound joints and of floating joints, elements
outside the URDF specification — is named, element by element, in one
``UserWarning`` per file and on ``mech.import_report["not_modelled"]`` (and
``model.import_report``), with the MJCF importer's wording where the meaning
is the same. Visual geometry and materials are rendering only and left out
silently, as MuJoCo's URDF compiler discards them.
"""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..model.body import physical_inertia, validate_mass_properties
from ..model.mechanism import GROUND, Mechanism
from ..util.checks import number
from .xml_common import (combined_mass_properties, compound_exists, floats, located, parse_xml,
                         rpy_matrix)

TREE_JOINTS = ("revolute", "continuous", "prismatic", "fixed", "floating")
LOOP_JOINTS = ("revolute", "continuous", "prismatic", "fixed", "spherical", "ball")
#: a repaired inertia keeps each principal second moment ``∫ x_k² dm`` at least
#: this fraction of the polar one ``∫ |r − c|² dm``: a thickness of about 1 % of the
#: body's extent, so that ``J4`` is regular and well conditioned (§1.2)
REPAIR_MARGIN = 1e-4
#: a link whose principal moments are all below this times its mass (m², radii of
#: gyration under 1 µm) is a point mass: its inertia is zero, not a non-physical one
#: (icub's right leg: inertias of 1e-18 kg m², rounding of zero, with masses of 0.5-2 kg)
POINT_MASS = 1e-12


def _joint(elem, path, tag):
    name = elem.get("name")
    where = f"{path}: <{tag} name=\"{name}\">"
    if not name:
        raise ValueError(f"{path}: a <{tag}> has no name attribute")
    kind = elem.get("type")
    allowed = TREE_JOINTS if tag == "joint" else LOOP_JOINTS
    if kind not in allowed:
        raise ValueError(f"{where}: type {kind!r} is not supported; use one of {allowed}")
    links = []
    for role in ("parent", "child"):
        e = elem.find(role)
        if e is None or not e.get("link"):
            raise ValueError(f"{where}: needs <{role} link=\"…\"/>")
        links.append(e.get("link"))
    origin = elem.find("origin")
    xyz = floats(origin, "xyz", 3, (0, 0, 0), f"{where} <origin>")
    rpy = floats(origin, "rpy", 3, (0, 0, 0), f"{where} <origin>")
    axis = floats(elem.find("axis"), "xyz", 3, (1, 0, 0), f"{where} <axis>")
    return dict(name=name, kind=kind, parent=links[0], child=links[1], xyz=xyz,
                R=rpy_matrix(rpy), axis=axis, where=where, loop=tag == "loop_joint",
                element=elem)


def _link_inertial(link, where):
    """``(mass, com, inertia about com)`` in the link frame, or None without ``<inertial>``."""
    inertial = link.find("inertial")
    if inertial is None:
        return None
    mass_elem = inertial.find("mass")
    mass = floats(mass_elem, "value", 1, None, f"{where} <inertial><mass>")[0] \
        if mass_elem is not None else 0.0
    origin = inertial.find("origin")
    com = floats(origin, "xyz", 3, (0, 0, 0), f"{where} <inertial><origin>")
    R = rpy_matrix(floats(origin, "rpy", 3, (0, 0, 0), f"{where} <inertial><origin>"))
    e = inertial.find("inertia")
    if e is None:
        raise ValueError(f"{where}: <inertial> needs <inertia ixx iyy izz ixy ixz iyz/>")
    i = {k: floats(e, k, 1, (0.0,) if k[1] != k[2] else None,
                   f"{where} <inertial><inertia>")[0]
         for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    I = np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]],
                  [i["ixz"], i["iyz"], i["izz"]]])
    return mass, com, R @ I @ R.T


def _loop_joint_element(spec, path):
    """A ``<loop_joint>`` element from a dict (``load_urdf(loop_joints=…)``)."""
    known = {"name", "type", "parent", "child", "xyz", "rpy", "axis"}
    if not isinstance(spec, dict) or not known >= set(spec):
        raise ValueError(f"{path}: loop_joints entries are dicts with keys {sorted(known)}, "
                         f"got {spec!r}")
    e = ET.Element("loop_joint", {k: str(spec[k]) for k in ("name", "type") if k in spec})
    for role in ("parent", "child"):
        if role in spec:
            ET.SubElement(e, role, link=str(spec[role]))
    ET.SubElement(e, "origin", {k: " ".join(repr(float(x)) for x in spec[k])
                                for k in ("xyz", "rpy") if k in spec})
    if "axis" in spec:
        ET.SubElement(e, "axis", xyz=" ".join(repr(float(x)) for x in spec["axis"]))
    return e


def nearest_physical_inertia(inertia, margin=REPAIR_MARGIN):
    """The physical central inertia tensor nearest to ``inertia`` (Frobenius norm).

    A central inertia is physical when the second moments along its principal
    axes, ``s_k = ∫ x_k² dm = ½(λ_i + λ_j − λ_k)`` from the principal moments
    ``λ``, are non-negative: the positivity and triangle inequalities of the
    ``λ`` (the density-weighted covariance ``Σ ⪰ 0`` of Wensing, Kim & Slotine,
    "Linear matrix inequalities for physically consistent inertial parameter
    identification", IEEE RA-L 3(1), 2018). That set of ``λ`` is the cone
    ``λ = B s``, ``s ≥ 0``, ``B = 11ᵀ − 1``, invariant under permutations, so
    the nearest tensor keeps the principal axes and projects ``λ`` onto the
    cone (Lewis, "Convex analysis on the Hermitian matrices", 1996): a
    non-negative least-squares problem in ``s``. natcoord needs a volume (a
    line or plane distribution has a singular ``J4``): every ``s_k`` is kept
    at least ``margin`` times the polar moment ``Σ s = ½ tr I``.

    ``inertia``: symmetric 3×3 with a positive trace (else ``ValueError``).
    """
    I = np.asarray(inertia, float)
    principal, axes = np.linalg.eigh(0.5 * (I + I.T))
    if not principal.sum() > 1e-9 * np.abs(principal).sum():
        raise ValueError(f"principal moments {principal} have no positive sum: a point mass "
                         f"has no inertia to repair; give the link the inertia of its shape")
    floor = margin * 0.5 * principal.sum()
    B = np.ones((3, 3)) - np.eye(3)
    from scipy.optimize import nnls     # here: scipy.optimize is a quarter of natcoord's import time
    excess, _ = nnls(B, principal - floor * B.sum(axis=1))
    return axes @ np.diag(B @ (floor + excess)) @ axes.T


def load_urdf(path, gravity=(0.0, 0.0, -9.81), loop_joints=(), t_end=10.0,
              floating_base=False, inertia_repair=False) -> Mechanism:
    """A :class:`Mechanism` from a URDF file, with links lumped as Pinocchio and KDL do.

    Every link on a ``fixed`` joint is lumped into its parent: the bodies are
    the links that move (``floating_base=True`` makes the root link one, on
    no joint: a free root; else the root is ground), and every other link is
    a named frame, ``mech.frames[link]``, of the body it was lumped into.
    URDF has no gravity: ``gravity`` gives it (world frame).

    Closed loops are ``<loop_joint>`` elements in the file (see the module
    docstring) and/or ``loop_joints``: dicts with the same content,
    ``{"name", "type", "parent", "child", "xyz", "rpy", "axis"}`` (xyz/rpy of
    the joint frame in the parent link frame, axis in the joint frame).

    Chains of moving joints through massless links become compound joints
    (module docstring); their massless links are frames with ``after = (joint,
    k)`` (``nc.joint_space(model).frame_placement``). Links that cannot be
    bodies after lumping (no mass and not between two moving joints, a
    negative principal moment of inertia, a numerically singular spatial
    inertia) are all named in one ``ValueError``, and so are chains without an
    exact constraint set. An
    inertia that violates only the triangle inequality is simulated as given
    (module docstring) and named in the file's ``UserWarning``;
    ``inertia_repair=True`` replaces each non-physical inertia by the nearest
    physical one (:func:`nearest_physical_inertia`) and names the links and
    the size of each change in one ``UserWarning``.

    Joint ``<dynamics damping>`` becomes a joint damper; every element that is
    not modelled is named in one ``UserWarning`` and on
    ``mech.import_report["not_modelled"]`` (what → element names; module
    docstring).
    """
    path, robot = parse_xml(path, "robot")
    t_end = number(t_end, "t_end", str(path), "positive")
    for spec in loop_joints:
        robot.append(_loop_joint_element(spec, path))
    links = {}
    for link in robot.findall("link"):
        name = link.get("name")
        if not name:
            raise ValueError(f"{path}: a <link> has no name attribute")
        if name in links:
            raise ValueError(f"{path}: <link name=\"{name}\"> is defined twice")
        links[name] = link
    if not links:                    # example-robot-data's ur3.urdf: a xacro left unexpanded
        raise ValueError(f"{path}: <robot> has no <link>: the file describes no robot")
    joints = [_joint(e, path, "joint") for e in robot.findall("joint")]
    loops = [_joint(e, path, "loop_joint") for e in robot.findall("loop_joint")]
    parent_joint, children = {}, {name: [] for name in links}
    for j in joints + loops:
        for role in ("parent", "child"):
            if j[role] not in links:
                raise ValueError(f"{j['where']}: {role} link {j[role]!r} is not a <link>")
    for j in joints:
        if j["child"] in parent_joint:
            raise ValueError(f"{j['where']}: link {j['child']!r} already has parent joint "
                             f"{parent_joint[j['child']]['name']!r}; a URDF tree gives each "
                             f"link one parent; close loops with <loop_joint>")
        parent_joint[j["child"]] = j
        children[j["parent"]].append(j)
    roots = [name for name in links if name not in parent_joint]
    if len(roots) != 1:
        raise ValueError(f"{path}: the joints must form one tree with a single root link "
                         f"(ground); root links found: {roots}")
    root = roots[0]
    # forward kinematics at zero joint positions: world pose of every link frame
    pose = {root: (np.zeros(3), np.eye(3))}
    order = [root]
    for name in order:
        x, R = pose[name]
        for j in children[name]:
            pose[j["child"]] = (x + R @ j["xyz"], R @ j["R"])
            order.append(j["child"])
    unreached = [name for name in links if name not in pose]
    if unreached:
        raise ValueError(f"{path}: links {unreached} are not connected to the root link "
                         f"{root!r} (a cycle of <joint>s? close loops with <loop_joint>)")

    host, placement, mass_properties = _lump_fixed_links(path, links, parent_joint, order)
    leaving = {h: [] for h in mass_properties}     # moving joints from a host or its lumped links
    for j in joints:
        if j["kind"] != "fixed":
            leaving[host[j["parent"]]].append(j)
    # A massless link (after lumping) with one moving joint leaving it is an
    # intermediate frame: the joints into and out of it join one compound joint.
    massless = {h for h, (m, _, _) in mass_properties.items()
                if m == 0.0 and h != root and parent_joint[h]["kind"] != "floating"}
    intermediate = {h for h in massless if len(leaving[h]) == 1}
    moving = [h for h in links                      # bodies in the file's order
              if h in mass_properties and h not in intermediate
              and (h != root or floating_base)]
    if not moving:
        raise ValueError(f"{path}: every link is fixed to the root link {root!r} (ground): "
                         f"nothing moves; pass floating_base=True for a free-flying robot")

    mech = Mechanism(gravity=gravity, name=robot.get("name") or path.stem)
    problems, repairs, repairable, as_given = [], [], False, []
    for name in moving:
        mass, com, inertia = mass_properties[name]
        where = f"<link name=\"{name}\">"
        if mass == 0.0:
            problems.append(
                f"{where}: has no <inertial> (or zero mass), nor links with mass fixed to it, "
                f"and {len(leaving[name])} moving joints leave it; natcoord needs a mass with "
                f"a volume. A massless link is accepted between two moving joints (one in, "
                f"one out, a link with mass further on), folded into a compound joint; a "
                f"massless link at the end of a chain has no inertia to determine its motion "
                f"(the mass matrix is singular in its joints)")
            continue
        if np.abs(np.linalg.eigvalsh(inertia)).max() <= POINT_MASS * mass:
            inertia = np.zeros((3, 3))       # rounding of zero: a point mass, exactly
        # an inertia that only violates the triangle inequality is simulated as given, as
        # Pinocchio reads it (reported below), unless inertia_repair asks to project it
        non_physical = not inertia_repair and not physical_inertia(inertia)
        try:
            validate_mass_properties(name, mass, inertia, non_physical=non_physical)
        except ValueError as err:
            if not inertia_repair:
                problems.append(f"{where}: {err}")
                repairable = True
                continue
            try:
                repaired = nearest_physical_inertia(inertia)
            except ValueError as why:
                problems.append(f"{where}: {err}; inertia_repair: {why}")
                continue
            repairs.append((name, inertia, repaired))
            inertia = repaired
        x, R = pose[name]
        try:
            mech.add_body(name, mass=mass, com=com, inertia=inertia, origin=x, axes=R,
                          local=True, non_physical_inertia=non_physical)
        except ValueError as err:
            problems.append(f"{where}: {err}")
            continue
        if non_physical:
            as_given.append(name)
    if problems:
        hint = "" if not repairable else (
            "\ninertia_repair=True replaces each non-physical inertia by the nearest "
            "physical one (with a warning giving the change)")
        raise ValueError(f"{path}: {len(problems)} link(s) cannot be bodies (after lumping "
                         f"the links on fixed joints into their parents):\n  "
                         + "\n  ".join(problems) + hint)
    if repairs:
        warnings.warn(_repair_report(path, repairs), UserWarning, stacklevel=2)

    def side(link):
        """The body a link belongs to (``GROUND`` for the root of a fixed base)."""
        return GROUND if host[link] == root and not floating_base else host[link]

    for j in loops:
        for role in ("parent", "child"):
            if host[j[role]] in intermediate:
                raise ValueError(f"{j['where']}: {role} link {j[role]!r} is a massless link "
                                 f"inside a compound joint; attach the loop to a body")

    def dof(j):
        """A joint of a chain as a compound joint's DOF: (name, kind, point, axis)."""
        x, R = pose[j["parent"]]
        return (j["name"], "slide" if j["kind"] == "prismatic" else "hinge",
                x + R @ j["xyz"], R @ j["R"] @ j["axis"])

    chains = []
    for j in _depth_first(root, children):
        if j["kind"] in ("fixed", "floating") or host[j["parent"]] in intermediate:
            continue                     # lumped; a free body; inside a chain
        chain = [j]
        while host[chain[-1]["child"]] in intermediate:
            chain.append(leaving[host[chain[-1]["child"]]][0])
        chains.append(chain)
    bodies = set(moving)
    for name in links:
        if name not in bodies and host[name] not in intermediate:
            local_origin, local_axes = placement[name]
            mech.attach_frame(name, side(name), origin=local_origin, axes=local_axes,
                              local=True)
    def join(chain, a, b):
        """Join body a to b by a chain of moving joints through massless links: one
        joint, one compound joint (its massless links frames moving with it), or —
        without an exact constraint set — its longest leading run that has one up to
        a massless link made a massless body (zero mass and inertia: the link as
        Pinocchio models it), and the rest from there (docs/model-format.md)."""
        if len(chain) == 1:
            _add_joint(mech, chain[0], a, b, pose)
            return
        dofs = [dof(j) for j in chain]
        if not compound_exists(dofs):
            k = next(k for k in range(len(chain) - 1, 0, -1)
                     if k == 1 or compound_exists(dofs[:k]))
            frame = host[chain[k - 1]["child"]]
            x, R = pose[frame]
            mech.add_body(frame, 0.0, com=x, inertia=np.zeros((3, 3)), origin=x, axes=R)
            for link in links:
                if host[link] == frame and link != frame:
                    mech.attach_frame(link, frame, *pose[link])
            join(chain[:k], a, frame)
            join(chain[k:], frame, b)
            return
        name = mech.add_compound(a, b, dofs)
        for k, j in enumerate(chain[:-1], start=1):    # the massless links
            for link in links:
                if host[link] == host[j["child"]]:
                    mech.attach_frame(link, a, *pose[link], after=(name, k))

    for chain in chains:             # depth first: the joint space's order is Pinocchio's
        join(chain, side(chain[0]["parent"]), side(chain[-1]["child"]))
    for j in loops:
        _add_joint(mech, j, side(j["parent"]), side(j["child"]), pose)
    if any(b.point_mass for b in mech.bodies):
        try:                # a point mass whose rotation nothing determines (icub's head)
            mech.build()
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
    not_modelled = {}

    def note(what, element):
        listed = not_modelled.setdefault(what, [])
        if element not in listed:    # several <gazebo reference="x">: x named once
            listed.append(element)

    _joint_dampers(mech, chains, joints, loops, note)
    _not_modelled(robot, joints + loops, note)
    mech.scenario = {"t_end": t_end}
    mech.import_report = {"source": str(path), "format": "urdf",
                          "not_modelled": not_modelled, "non_physical_inertia": as_given}
    told = []                        # one warning for the file, worded as the MJCF importer's
    if not_modelled:
        told.append("imported without " + "; ".join(
            f"{what}: {', '.join(items)}" for what, items in not_modelled.items())
            + " (mech.import_report['not_modelled'])")
    if as_given:
        told.append(f"links {', '.join(as_given)} have inertias no mass distribution has "
                    f"(principal moments violating the triangle inequality), simulated as "
                    f"given, as Pinocchio reads them (mech.import_report"
                    f"['non_physical_inertia']); inertia_repair=True projects them to the "
                    f"nearest physical ones")
    if told:
        warnings.warn(f"{path}: " + "; ".join(told), UserWarning, stacklevel=2)
    return mech


def _damping(j):
    """``<dynamics damping>`` of a joint: N·m·s/rad (revolute) or N·s/m (prismatic), 0
    without one."""
    where = f"{j['where']} <dynamics>"
    c = float(floats(j["element"].find("dynamics"), "damping", 1, (0.0,), where)[0])
    if c < 0.0:
        raise ValueError(f"{where}: damping=\"{c:g}\" must be non-negative (a damper "
                         f"takes energy out)")
    return c


def _joint_dampers(mech, chains, joints, loops, note):
    """``<dynamics damping="c">`` as the joint damper ``τ = −c q̇``
    (:meth:`Mechanism.add_joint_spring`) on each joint with a joint coordinate: a
    revolute, continuous or prismatic tree joint of its own and such loop joints.
    A DOF inside a compound joint (a chain through massless links) has no
    coordinate that is a quadratic form of the natural coordinates, and a floating
    or spherical joint no single coordinate: their damping is listed as not
    modelled (the MJCF importer's wording). A fixed joint does not move: its
    damping does nothing."""
    def damper(j):
        c = _damping(j)
        if c:
            located(j["where"], lambda: mech.add_joint_spring(
                j["name"], damping=c, name=f"{j['name']}.spring"))

    for chain in chains:
        if len(chain) == 1:
            damper(chain[0])
            continue
        for j in chain:
            if _damping(j):
                note("stiffness and damping of DOF without a joint coordinate", j["name"])
    for j in joints:
        if j["kind"] == "floating" and _damping(j):
            note("free joint stiffness and damping", j["name"])
    for j in loops:
        if j["kind"] in ("spherical", "ball"):
            if _damping(j):
                note("ball joint stiffness and damping", j["name"])
        elif j["kind"] != "fixed":
            damper(j)


#: the children of ``<joint>`` the importer reads, or weighs in :func:`_not_modelled`
JOINT_CHILDREN = {"parent", "child", "origin", "axis", "dynamics", "limit",
                  "safety_controller", "calibration", "mimic"}
#: URDF's joint elements that do nothing here, by what they are
JOINT_EXTRAS = {"safety_controller": "safety controllers (soft limits)",
                "calibration": "calibration (reference positions)",
                "mimic": "mimic joints (a coupling of two joint coordinates)"}
UNREAD = "elements natcoord does not read"


def _not_modelled(robot, joints, note):
    """Name every element of the file that would act on the robot but is not modelled.

    Left out silently, as MuJoCo's URDF compiler discards them (``discardvisual``
    is on for URDF): ``<visual>`` geometry and ``<material>``, rendering only. On a
    fixed joint (lumped) nothing can act. Everything else the importer does not read
    — ``<collision>`` (contacts), position limits, effort and velocity limits,
    ``<dynamics friction>`` (friction loss), the joint extras of
    :data:`JOINT_EXTRAS`, ``<transmission>`` and ``<ros2_control>`` (actuators),
    ``<sensor>``, ``<gazebo>`` and any element or ``<dynamics>`` attribute outside
    the URDF specification (panda's ``mu_viscous``) — is named, with the MJCF
    importer's wording where the meaning is the same."""
    for k, e in enumerate(robot):
        if e.tag in ("link", "joint", "loop_joint", "material"):
            continue
        label = e.get("name") or f"{e.tag}{k}"
        if e.tag in ("transmission", "ros2_control"):
            note("actuators", label)
        elif e.tag == "sensor":
            note("sensors", label)
        elif e.tag == "gazebo":
            note("gazebo extensions", e.get("reference") or "the robot")
        else:
            note(UNREAD, f"<{e.tag}>")
    for link in robot.findall("link"):
        name = link.get("name")
        for k, e in enumerate(link.findall("collision")):
            note("contacts", e.get("name") or f"collision{k} of {name}")
        for e in link:
            if e.tag not in ("inertial", "visual", "collision"):
                note(UNREAD, f"<{e.tag}> of link {name}")
    for j in joints:
        if j["kind"] == "fixed":
            continue
        e, name = j["element"], j["name"]
        limit = e.find("limit")
        if limit is not None:
            if j["kind"] in ("revolute", "prismatic"):
                note("joint limits", name)
            if limit.get("effort") is not None or limit.get("velocity") is not None:
                note("effort and velocity limits (actuator properties)", name)
        dynamics = e.find("dynamics")
        if dynamics is not None:
            friction = floats(dynamics, "friction", 1, (0.0,), f"{j['where']} <dynamics>")
            if friction[0]:
                note("friction loss", name)
            extra = sorted(set(dynamics.attrib) - {"damping", "friction"})
            if extra:
                note(UNREAD, f"<dynamics {' '.join(extra)}> of joint {name}")
        for tag, what in JOINT_EXTRAS.items():
            if e.find(tag) is not None:
                note(what, name)
        for child in e:
            if child.tag not in JOINT_CHILDREN:
                note(UNREAD, f"<{child.tag}> of joint {name}")


def _add_joint(mech, j, a, b, pose):
    """One URDF joint (or loop joint) from body a to body b."""
    x, R = pose[j["parent"]]
    point, Rj = x + R @ j["xyz"], R @ j["R"]
    axis = Rj @ j["axis"]
    kind = j["kind"]
    if kind in ("revolute", "continuous"):
        add = lambda: mech.add_revolute(a, b, point=point, axis=axis, name=j["name"])
    elif kind == "prismatic":
        add = lambda: mech.add_prismatic(a, b, point=point, axis=axis, name=j["name"])
    elif kind == "fixed":
        add = lambda: mech.add_fixed(a, b, point=point, name=j["name"])
    else:                            # spherical/ball loop joint
        add = lambda: mech.add_spherical(a, b, point=point, name=j["name"])
    located(j["where"], add)


def _depth_first(root, children):
    """The tree joints in Pinocchio's order: depth first from the root link, a link's
    child joints sorted by name (urdfdom keeps joints in a ``std::map``). The joint
    space (``nc.joint_space``) follows the order joints are added, so natcoord's ``q``
    is Pinocchio's."""
    def name(j):
        return j["name"]

    ordered, stack = [], sorted(children[root], key=name, reverse=True)
    while stack:
        j = stack.pop()
        ordered.append(j)
        stack += sorted(children[j["child"]], key=name, reverse=True)
    return ordered


def _lump_fixed_links(path, links, parent_joint, order):
    """Links on fixed joints lumped into their parents, as Pinocchio and KDL do.

    Returns ``host`` (link → the link it is lumped into: itself when its
    joint moves or it is the root), ``placement`` (link → origin and axes in
    its host's frame, composed from the fixed joints' origins as the parsers
    do) and ``mass_properties`` (host → mass, centre of mass and central
    inertia of the host and everything lumped into it, in the host frame).
    A link without ``<inertial>`` adds nothing.
    """
    host, placement, parts = {}, {}, {}
    for name in order:
        j = parent_joint.get(name)
        if j is None or j["kind"] != "fixed":
            host[name], placement[name] = name, (np.zeros(3), np.eye(3))
            parts[name] = []
        else:
            host[name] = host[j["parent"]]
            x, R = placement[j["parent"]]
            placement[name] = (x + R @ j["xyz"], R @ j["R"])
        inertial = _link_inertial(links[name], f"{path}: <link name=\"{name}\">")
        if inertial is not None:
            mass, com, inertia = inertial
            x, R = placement[name]
            parts[host[name]].append((mass, x + R @ com, R @ inertia @ R.T))
    return host, placement, {h: combined_mass_properties(p) for h, p in parts.items()}


def _repair_report(path, repairs):
    """The warning of ``inertia_repair``: each link's principal moments before and
    after and the change ``‖ΔI‖`` (Frobenius), absolute and relative."""
    lines = [f"{path}: inertia_repair replaced {len(repairs)} non-physical inertia(s) by "
             f"the nearest physical one:"]
    for name, before, after in repairs:
        change = np.linalg.norm(after - before)
        lines.append(f"  <link name=\"{name}\">: principal moments "
                     f"{np.linalg.eigvalsh(before)} -> {np.linalg.eigvalsh(after)} kg m², "
                     f"change {change:.3g} kg m² ({change / np.linalg.norm(before):.2%})")
    return "\n".join(lines)
