"""Import URDF and MJCF (MuJoCo XML) robot descriptions (docs/model-format.md).

Both formats describe a kinematic tree of frames at zero joint positions; that
configuration becomes the reference configuration of the natcoord mechanism
(body frame = link/body frame, points and axes in world coordinates). What
the builder cannot express fails with an error naming the element; what has
no meaning here (limits, dynamics, actuators, collision, visual) is ignored.

* URDF: ``<link>`` with ``<inertial>``; ``<joint>`` revolute, continuous,
  prismatic, fixed, floating (a free body); the root link is ground. A
  massless link (no ``<inertial>``) is either fixed to its parent (merged
  into it, like a tool frame) or the cross of a universal joint (between two
  revolutes at one point with perpendicular axes). Loops: ``<loop_joint>``
  elements (revolute, continuous, prismatic, fixed, spherical) inside
  ``<robot>``, with ``<parent link>``, ``<child link>``, ``<origin>`` (in the
  parent link frame) and ``<axis>``.
* MJCF: nested ``<body>`` (pos; quat, axisangle, euler, xyaxes or zaxis;
  ``<inertial>``, or the inertia of box/sphere/cylinder/capsule/ellipsoid
  geoms as MuJoCo derives it), ``<joint>`` hinge/slide/ball/free and
  ``<freejoint>``: no joint welds the body to its parent, one joint connects
  it, two hinges at one point with perpendicular axes make a universal joint,
  a hinge and a slide along one axis a cylindrical one; ``<equality>``
  ``<connect>`` (spherical joint) and ``<weld>`` (fixed joint) close loops.
  Gravity from ``<option gravity>``; ``<compiler angle eulerseq>`` honoured.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ..model.mechanism import GROUND, Mechanism


# ------------------------------------------------------------------ helpers
def _parse(path, root_tag):
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    except ET.ParseError as err:
        raise ValueError(f"{path}: not well-formed XML: {err}") from None
    if root.tag != root_tag:
        raise ValueError(f"{path}: the root element is <{root.tag}>, expected <{root_tag}>")
    return path, root


def _floats(elem, attr, n, default, where):
    text = elem.get(attr) if elem is not None else None
    if text is None:
        if default is None:
            raise ValueError(f"{where}: missing attribute {attr}=\"…\" ({n} numbers)")
        return np.array(default, float)
    try:
        values = np.array([float(x) for x in text.split()])
    except ValueError:
        values = np.array([])
    if values.size != n or not np.all(np.isfinite(values)):
        raise ValueError(f"{where}: {attr}=\"{text}\" must be {n} finite numbers")
    return values


def _rotation(axis, angle):
    """Rodrigues' rotation about the unit ``axis``."""
    x, y, z = axis
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def rpy_matrix(rpy):
    """URDF roll–pitch–yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    E = np.eye(3)
    r, p, y = rpy
    return _rotation(E[2], y) @ _rotation(E[1], p) @ _rotation(E[0], r)


def quat_matrix(q):
    """Rotation of the quaternion ``(w, x, y, z)`` (normalized here)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _wrap(where, action):
    try:
        return action()
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


# --------------------------------------------------------------------- URDF
_URDF_TREE_JOINTS = ("revolute", "continuous", "prismatic", "fixed", "floating")
_URDF_LOOP_JOINTS = ("revolute", "continuous", "prismatic", "fixed", "spherical", "ball")


def _urdf_joint(elem, path, tag):
    name = elem.get("name")
    where = f"{path}: <{tag} name=\"{name}\">"
    if not name:
        raise ValueError(f"{path}: a <{tag}> has no name attribute")
    kind = elem.get("type")
    allowed = _URDF_TREE_JOINTS if tag == "joint" else _URDF_LOOP_JOINTS
    if kind not in allowed:
        raise ValueError(f"{where}: type {kind!r} is not supported; use one of {allowed}")
    links = []
    for role in ("parent", "child"):
        e = elem.find(role)
        if e is None or not e.get("link"):
            raise ValueError(f"{where}: needs <{role} link=\"…\"/>")
        links.append(e.get("link"))
    origin = elem.find("origin")
    xyz = _floats(origin, "xyz", 3, (0, 0, 0), f"{where} <origin>")
    rpy = _floats(origin, "rpy", 3, (0, 0, 0), f"{where} <origin>")
    axis = _floats(elem.find("axis"), "xyz", 3, (1, 0, 0), f"{where} <axis>")
    return dict(name=name, kind=kind, parent=links[0], child=links[1], xyz=xyz,
                R=rpy_matrix(rpy), axis=axis, where=where, loop=tag == "loop_joint")


def _urdf_inertial(link, where):
    """``(mass, com (link frame), inertia about com in link axes)`` or None if massless."""
    inertial = link.find("inertial")
    if inertial is None:
        return None
    mass_elem = inertial.find("mass")
    mass = _floats(mass_elem, "value", 1, None, f"{where} <inertial><mass>")[0] \
        if mass_elem is not None else 0.0
    if mass == 0.0:
        return None
    origin = inertial.find("origin")
    com = _floats(origin, "xyz", 3, (0, 0, 0), f"{where} <inertial><origin>")
    R = rpy_matrix(_floats(origin, "rpy", 3, (0, 0, 0), f"{where} <inertial><origin>"))
    e = inertial.find("inertia")
    if e is None:
        raise ValueError(f"{where}: <inertial> needs <inertia ixx iyy izz ixy ixz iyz/>")
    i = {k: _floats(e, k, 1, (0.0,) if k[1] != k[2] else None,
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


def load_urdf(path, gravity=(0.0, 0.0, -9.81), loop_joints=(), t_end=10.0) -> Mechanism:
    """A :class:`Mechanism` from a URDF file (the root link is ground).

    URDF has no gravity: ``gravity`` gives it (world frame). Closed loops are
    ``<loop_joint>`` elements in the file (see the module docstring) and/or
    ``loop_joints``: dicts with the same content, ``{"name", "type",
    "parent", "child", "xyz", "rpy", "axis"}`` (xyz/rpy of the joint frame in
    the parent link frame, axis in the joint frame). Limits, dynamics,
    transmissions, collision and visual elements are ignored.
    """
    path, robot = _parse(path, "robot")
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
    joints = [_urdf_joint(e, path, "joint") for e in robot.findall("joint")]
    loops = [_urdf_joint(e, path, "loop_joint") for e in robot.findall("loop_joint")]
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
    # forward kinematics at zero joint positions: world pose of every link frame
    pose = {roots[0]: (np.zeros(3), np.eye(3))}
    order = [roots[0]]
    for name in order:
        x, R = pose[name]
        for j in children[name]:
            pose[j["child"]] = (x + R @ j["xyz"], R @ j["R"])
            order.append(j["child"])
    unreached = [name for name in links if name not in pose]
    if unreached:
        raise ValueError(f"{path}: links {unreached} are not connected to the root link "
                         f"{roots[0]!r} (a cycle of <joint>s? close loops with <loop_joint>)")

    # bodies: massive links; massless links are merged or universal crosses
    body_of, inertial, crosses = {roots[0]: GROUND}, {}, {}
    for name in order[1:]:
        where = f"{path}: <link name=\"{name}\">"
        inertial[name] = _urdf_inertial(links[name], where)
        j = parent_joint[name]
        if inertial[name] is not None:
            body_of[name] = name
        elif j["kind"] == "fixed":
            body_of[name] = body_of[j["parent"]]          # a frame on its parent
        elif _universal_cross(j, children[name], pose):
            crosses[name] = j
        else:
            raise ValueError(f"{where}: has no <inertial> (or zero mass); natcoord needs a "
                             f"mass with a volume. A massless link is accepted only fixed to "
                             f"its parent or as the cross of a universal joint (between two "
                             f"revolute joints at one point with perpendicular axes)")
    for j in loops:
        for role in ("parent", "child"):
            if j[role] in crosses:
                raise ValueError(f"{j['where']}: {role} link {j[role]!r} is the massless "
                                 f"cross of a universal joint; attach the loop to a body")

    mech = Mechanism(gravity=gravity, name=robot.get("name") or path.stem)
    for name in links:
        if body_of.get(name) == name:
            mass, com, I = inertial[name]
            x, R = pose[name]
            _wrap(f"{path}: <link name=\"{name}\">", lambda: mech.add_body(
                name, mass=mass, com=com, inertia=I, origin=x, axes=R, local=True))
    for j in joints + loops:
        child = j["child"]
        if not j["loop"] and (child in crosses or (body_of.get(child) != child
                                                   and j["kind"] == "fixed")):
            continue                     # cross link's first revolute; merged frame
        if not j["loop"] and j["kind"] == "floating":
            continue                     # a free body: no constraint
        a = body_of[j["parent"]] if j["parent"] not in crosses else None
        b = body_of[child]
        x, R = pose[j["parent"]]
        point, Rj = x + R @ j["xyz"], R @ j["R"]
        axis = Rj @ j["axis"]
        if j["parent"] in crosses:       # second revolute of a universal joint
            first = crosses[j["parent"]]
            a = body_of[first["parent"]]
            axis_a = pose[first["parent"]][1] @ first["R"] @ first["axis"]
            _wrap(j["where"], lambda: mech.add_universal(
                a, b, point=point, axis_a=axis_a, axis_b=axis, name=j["name"]))
            continue
        kind = j["kind"]
        if kind in ("revolute", "continuous"):
            add = lambda: mech.add_revolute(a, b, point=point, axis=axis, name=j["name"])
        elif kind == "prismatic":
            add = lambda: mech.add_prismatic(a, b, point=point, axis=axis, name=j["name"])
        elif kind == "fixed":
            add = lambda: mech.add_fixed(a, b, point=point, name=j["name"])
        else:                            # spherical/ball loop joint
            add = lambda: mech.add_spherical(a, b, point=point, name=j["name"])
        _wrap(j["where"], add)
    mech.scenario = {"t_end": float(t_end)}
    return mech


def _universal_cross(j, child_joints, pose):
    """Whether a massless link between revolute ``j`` and its only child joint is a cross."""
    if j["kind"] not in ("revolute", "continuous") or len(child_joints) != 1:
        return False
    k = child_joints[0]
    if k["kind"] not in ("revolute", "continuous"):
        return False
    xp, Rp = pose[j["parent"]]
    xc, Rc = pose[j["child"]]
    point_j, point_k = xp + Rp @ j["xyz"], xc + Rc @ k["xyz"]
    axis_j = Rp @ j["R"] @ j["axis"]
    axis_k = Rc @ k["R"] @ k["axis"]
    scale = max(1.0, np.abs(point_j).max())
    cos = axis_j @ axis_k / (np.linalg.norm(axis_j) * np.linalg.norm(axis_k))
    return np.abs(point_j - point_k).max() <= 1e-12 * scale and abs(cos) <= 1e-9


# --------------------------------------------------------------------- MJCF
class _Compiler:
    def __init__(self, root, path):
        c = root.find("compiler")
        self.degrees = (c.get("angle", "degree") if c is not None else "degree") == "degree"
        self.eulerseq = c.get("eulerseq", "xyz") if c is not None else "xyz"
        self.inertiafromgeom = c.get("inertiafromgeom", "auto") if c is not None else "auto"
        self.default_geom = any(d.find("geom") is not None for d in root.iter("default"))
        if c is not None and c.get("coordinate", "local") != "local":
            raise ValueError(f"{path}: <compiler coordinate=\"{c.get('coordinate')}\"> is not "
                             f"supported; use local coordinates")
        if len(self.eulerseq) != 3 or any(ch not in "xyzXYZ" for ch in self.eulerseq):
            raise ValueError(f"{path}: <compiler eulerseq=\"{self.eulerseq}\"> must be three "
                             f"of x, y, z (X, Y, Z)")

    def angle(self, a):
        return np.radians(a) if self.degrees else a

    def orientation(self, elem, where):
        """Rotation of an element's frame from quat/axisangle/euler/xyaxes/zaxis."""
        given = [a for a in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if a in elem.attrib]
        if len(given) > 1:
            raise ValueError(f"{where}: give at most one orientation, got {given}")
        if not given:
            return np.eye(3)
        attr = given[0]
        if attr == "quat":
            q = _floats(elem, attr, 4, None, where)
            if np.linalg.norm(q) == 0:
                raise ValueError(f"{where}: quat is zero")
            return quat_matrix(q)
        if attr == "axisangle":
            v = _floats(elem, attr, 4, None, where)
            return _rotation(_unit(v[:3], where, attr), self.angle(v[3]))
        if attr == "euler":
            angles = self.angle(_floats(elem, attr, 3, None, where))
            R = np.eye(3)
            for ch, a in zip(self.eulerseq, angles):
                Rk = _rotation(np.eye(3)["xyz".index(ch.lower())], a)
                R = R @ Rk if ch.islower() else Rk @ R   # intrinsic / extrinsic
            return R
        if attr == "xyaxes":
            v = _floats(elem, attr, 6, None, where)
            x = _unit(v[:3], where, attr)
            y = v[3:] - (v[3:] @ x) * x
            y = _unit(y, where, attr)
            return np.column_stack([x, y, np.cross(x, y)])
        return self.zaxis(_unit(_floats(elem, attr, 3, None, where), where, attr))

    @staticmethod
    def zaxis(z):
        """The minimal rotation taking ẑ to the unit ``z`` (MJCF zaxis, fromto)."""
        c = z[2]
        axis = np.cross([0.0, 0.0, 1.0], z)
        if np.linalg.norm(axis) < 1e-12:
            return np.eye(3) if c > 0 else _rotation(np.array([1.0, 0.0, 0.0]), np.pi)
        return _rotation(axis / np.linalg.norm(axis), np.arctan2(np.linalg.norm(axis), c))


def _unit(v, where, attr):
    n = np.linalg.norm(v)
    if n < 1e-12:
        raise ValueError(f"{where}: {attr} has zero length")
    return np.asarray(v, float) / n


def _mjcf_inertial(body, compiler, where):
    """``(mass, com, inertia about com in body axes)`` from <inertial> or the geoms."""
    e = body.find("inertial")
    if e is None or compiler.inertiafromgeom == "true":
        return _geom_inertial(body, compiler, where)
    w = f"{where} <inertial>"
    mass = _floats(e, "mass", 1, None, w)[0]
    com = _floats(e, "pos", 3, None, w)
    R = compiler.orientation(e, w)
    if "fullinertia" in e.attrib:
        ixx, iyy, izz, ixy, ixz, iyz = _floats(e, "fullinertia", 6, None, w)
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    else:
        I = np.diag(_floats(e, "diaginertia", 3, None, w))
    return mass, com, R @ I @ R.T


def _geom_mass_properties(kind, size, where):
    """Volume and central principal inertia per unit mass (geom axes) of a solid."""
    need = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}[kind]
    if size.size < need or np.any(size[:need] <= 0):
        raise ValueError(f"{where}: a {kind} needs {need} positive size numbers")
    if kind == "sphere":
        r = size[0]
        return 4 / 3 * np.pi * r**3, np.full(3, 0.4 * r * r)
    if kind == "box":
        a, b, c = size[:3] ** 2
        return 8 * np.prod(size[:3]), np.array([b + c, a + c, a + b]) / 3
    if kind == "ellipsoid":
        a, b, c = size[:3] ** 2
        return 4 / 3 * np.pi * np.prod(size[:3]), np.array([b + c, a + c, a + b]) / 5
    r, h = size[0], 2 * size[1]                  # radius, cylinder height
    v_cyl = np.pi * r * r * h
    if kind == "cylinder":
        return v_cyl, np.array([(3 * r * r + h * h) / 12] * 2 + [r * r / 2])
    v_sph = 4 / 3 * np.pi * r**3                 # capsule: cylinder + two hemispheres
    lateral = (v_cyl * (h * h / 12 + r * r / 4)
               + v_sph * (0.4 * r * r + h * h / 4 + 3 * h * r / 8))
    axial = (v_sph * 0.4 + v_cyl / 2) * r * r
    v = v_cyl + v_sph
    return v, np.array([lateral, lateral, axial]) / v


def _geom_inertial(body, compiler, where):
    """MuJoCo's inertia from geoms: solids of density 1000 kg/m³ (or ``density``,
    or the geom's ``mass``), combined by the parallel-axis theorem."""
    geoms = body.findall("geom")
    if not geoms:
        raise ValueError(f"{where}: has no <inertial> and no geoms to derive one from; add "
                         f"<inertial pos mass diaginertia|fullinertia/>")
    if compiler.default_geom:
        raise ValueError(f"{where}: inertia from geoms with <default> geom settings is not "
                         f"supported; give <inertial> or the geom attributes explicitly")
    parts = []
    for k, g in enumerate(geoms):
        kind = g.get("type", "sphere")
        w = f"{where} <geom name=\"{g.get('name', k + 1)}\" type=\"{kind}\">"
        if kind not in ("sphere", "capsule", "cylinder", "box", "ellipsoid"):
            raise ValueError(f"{w}: inertia from {kind} geoms is not supported; give the body "
                             f"an <inertial>")
        size = np.array([float(x) for x in g.get("size", "").split()]) if g.get("size") \
            else np.array([])
        if "fromto" in g.attrib:
            if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
                raise ValueError(f"{w}: fromto applies to capsules, cylinders, boxes and "
                                 f"ellipsoids")
            ends = _floats(g, "fromto", 6, None, w)
            z = ends[3:] - ends[:3]
            half = np.linalg.norm(z) / 2
            Rg = _Compiler.zaxis(_unit(z, w, "fromto"))
            pos = (ends[:3] + ends[3:]) / 2
            size = np.concatenate([size[:1], [half]]) if kind in ("capsule", "cylinder") \
                else np.concatenate([size[:2], [half]])
        else:
            pos = _floats(g, "pos", 3, (0, 0, 0), w)
            Rg = compiler.orientation(g, w)
        volume, unit_inertia = _geom_mass_properties(kind, size, w)
        if "mass" in g.attrib:
            mass = _floats(g, "mass", 1, None, w)[0]
        else:
            mass = _floats(g, "density", 1, (1000.0,), w)[0] * volume
        parts.append((mass, pos, Rg @ np.diag(mass * unit_inertia) @ Rg.T))
    mass = sum(m for m, _, _ in parts)
    if not mass > 0:
        raise ValueError(f"{where}: the geoms have no mass")
    com = sum(m * x for m, x, _ in parts) / mass
    I = sum(Ig + m * ((x - com) @ (x - com) * np.eye(3) - np.outer(x - com, x - com))
            for m, x, Ig in parts)
    return mass, com, I


def load_mjcf(path, t_end=10.0) -> Mechanism:
    """A :class:`Mechanism` from an MJCF (MuJoCo XML) file; ``<worldbody>`` is ground.

    A body without ``<inertial>`` (or every body, with ``<compiler
    inertiafromgeom="true">``) gets the mass properties of its geoms: solid
    spheres, capsules, cylinders, boxes and ellipsoids of the geom's
    ``density`` (default 1000 kg/m³) or ``mass``. Joint stiffness, damping, armature,
    limits, actuators, tendons, sensors, contacts and geoms are ignored.
    ``<default>`` classes are not applied (a ``<default>`` with joint or
    inertial settings is an error), nor are ``<include>`` files.
    """
    path, root = _parse(path, "mujoco")
    compiler = _Compiler(root, path)
    for d in root.iter("default"):
        if d.find("joint") is not None or d.find("inertial") is not None:
            raise ValueError(f"{path}: <default> joint/inertial settings are not supported; "
                             f"give the attributes on each element")
    if root.find("include") is not None:
        raise ValueError(f"{path}: <include> is not supported; merge the files")
    option = root.find("option")
    gravity = _floats(option, "gravity", 3, (0.0, 0.0, -9.81), f"{path}: <option>")
    world = root.find("worldbody")
    if world is None:
        raise ValueError(f"{path}: no <worldbody>")
    mech = Mechanism(gravity=gravity, name=root.get("model") or path.stem)
    pose, joints = {}, []
    # depth first in document order (which numbers the unnamed bodies), with a
    # stack rather than recursion: a chain of 1000 nested bodies is a fine model
    stack = [(body, GROUND, np.zeros(3), np.eye(3)) for body in reversed(world.findall("body"))]
    while stack:
        body, parent, x, R = stack.pop()
        name = body.get("name") or f"body{len(joints) + 1}"
        where = f"{path}: <body name=\"{name}\">"
        xb = x + R @ _floats(body, "pos", 3, (0, 0, 0), where)
        Rb = R @ compiler.orientation(body, where)
        mass, com, I = _mjcf_inertial(body, compiler, where)
        _wrap(where, lambda: mech.add_body(name, mass=mass, com=com, inertia=I,
                                           origin=xb, axes=Rb, local=True))
        pose[name] = (xb, Rb)
        joints.append((parent, name, body, where, xb, Rb))
        stack.extend((child, name, xb, Rb) for child in reversed(body.findall("body")))
    for parent, name, body, where, xb, Rb in joints:
        _mjcf_body_joints(mech, parent, name, body, where, xb, Rb)
    equality = root.find("equality")
    for e in (list(equality) if equality is not None else []):
        _mjcf_equality(mech, e, pose, path)
    mech.scenario = {"t_end": float(t_end)}
    return mech


def _mjcf_body_joints(mech, parent, name, body, where, xb, Rb):
    specs = []
    for e in body:
        if e.tag == "freejoint" or (e.tag == "joint" and e.get("type") == "free"):
            specs.append(("free", None, None, e))
        elif e.tag == "joint":
            kind = e.get("type", "hinge")
            if kind not in ("hinge", "slide", "ball"):
                raise ValueError(f"{where} <joint name=\"{e.get('name')}\">: type {kind!r} "
                                 f"is not one of hinge, slide, ball, free")
            w = f"{where} <joint name=\"{e.get('name')}\">"
            point = xb + Rb @ _floats(e, "pos", 3, (0, 0, 0), w)
            axis = Rb @ _unit(_floats(e, "axis", 3, (0, 0, 1), w), w, "axis")
            specs.append((kind, point, axis, e))
    kinds = [s[0] for s in specs]
    label = (specs[0][3].get("name") if specs else None) or f"{name}.joint"
    add = None
    if not specs:               # welded to its parent
        add = lambda: mech.add_fixed(parent, name, point=xb, name=label)
    elif kinds == ["free"]:
        return
    elif len(specs) == 1:
        kind, point, axis, _ = specs[0]
        add = {"hinge": lambda: mech.add_revolute(parent, name, point=point, axis=axis,
                                                  name=label),
               "slide": lambda: mech.add_prismatic(parent, name, point=point, axis=axis,
                                                   name=label),
               "ball": lambda: mech.add_spherical(parent, name, point=point, name=label)}[kind]
    elif len(specs) == 2 and "free" not in kinds and "ball" not in kinds:
        (k1, x1, a1, _), (k2, x2, a2, _) = specs
        same_point = np.abs(x1 - x2).max() <= 1e-12 * max(1.0, np.abs(x1).max())
        if kinds == ["hinge", "hinge"] and same_point and abs(a1 @ a2) <= 1e-9:
            add = lambda: mech.add_universal(parent, name, point=x1, axis_a=a1, axis_b=a2,
                                             name=label)
        elif set(kinds) == {"hinge", "slide"} and abs(abs(a1 @ a2) - 1.0) <= 1e-12:
            hinge = x1 if k1 == "hinge" else x2
            add = lambda: mech.add_cylindrical(parent, name, point=hinge, axis=a1, name=label)
    if add is None:
        raise ValueError(f"{where}: joints {kinds} are not supported; a body takes no joint "
                         f"(welded), one hinge/slide/ball/free joint, two hinges at one point "
                         f"with perpendicular axes (universal) or a hinge and a slide along "
                         f"one axis (cylindrical)")
    _wrap(where, add)


def _mjcf_equality(mech, e, pose, path):
    where = f"{path}: <equality><{e.tag} name=\"{e.get('name')}\">"
    if e.get("active", "true") == "false":
        return
    if e.tag not in ("connect", "weld"):
        raise ValueError(f"{where}: only <connect> and <weld> equality constraints are "
                         f"supported")
    if "site1" in e.attrib or "site2" in e.attrib:
        raise ValueError(f"{where}: site-based constraints are not supported; use body1, "
                         f"body2 and anchor")
    body1, body2 = e.get("body1"), e.get("body2", "world")
    for b in (body1, body2):
        if b != "world" and b not in pose:
            raise ValueError(f"{where}: body {b!r} is not a <body> (known: {list(pose)})")
    if body1 is None or body1 == "world":
        raise ValueError(f"{where}: body1 must name a moving body")
    x1, R1 = pose[body1]
    b2 = GROUND if body2 == "world" else body2
    label = e.get("name") or f"{e.tag}.{body1}.{body2}"
    if e.tag == "connect":
        anchor = x1 + R1 @ _floats(e, "anchor", 3, None, where)
        _wrap(where, lambda: mech.add_spherical(body1, b2, point=anchor, name=label))
        return
    # MuJoCo's default relpose "0 1 0 0 0 0 0" has a zero quaternion: keep the
    # relative pose of the reference configuration; anything else is unsupported
    if "relpose" in e.attrib and np.any(_floats(e, "relpose", 7, None, where)[3:] != 0):
        raise ValueError(f"{where}: relpose with a quaternion is not supported; the weld "
                         f"keeps the relative pose of the reference configuration")
    point = x1 + R1 @ _floats(e, "anchor", 3, (0, 0, 0), where)
    _wrap(where, lambda: mech.add_fixed(body1, b2, point=point, name=label))
