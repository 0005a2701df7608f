"""Import MJCF (MuJoCo XML) robot descriptions (docs/model-format.md).

The MuJoCo model at ``qpos0`` is the reference configuration of the natcoord
mechanism; ``<worldbody>`` is ground, every nested ``<body>`` a natcoord body
whose frame is the body frame. What the builder cannot express fails with an
error naming the element.

Nested ``<body>`` (pos; quat, axisangle, euler, xyaxes or zaxis;
``<inertial>``, or the inertia of box/sphere/cylinder/capsule/ellipsoid
geoms as MuJoCo derives it), ``<joint>`` hinge/slide/ball/free and
``<freejoint>``: no joint welds the body to its parent, one joint connects
it, two hinges at one point with perpendicular axes make a universal joint,
a hinge and a slide along one axis a cylindrical one; ``<equality>``
``<connect>`` (spherical joint) and ``<weld>`` (fixed joint) close loops.
Gravity from ``<option gravity>``; ``<compiler angle eulerseq>`` honoured.
"""
from __future__ import annotations

import numpy as np

from ..model.mechanism import GROUND, Mechanism
from .xml_common import (combined_mass_properties, floats, located, parse_xml, quat_matrix,
                         rotation, unit)


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
            q = floats(elem, attr, 4, None, where)
            if np.linalg.norm(q) == 0:
                raise ValueError(f"{where}: quat is zero")
            return quat_matrix(q)
        if attr == "axisangle":
            v = floats(elem, attr, 4, None, where)
            return rotation(unit(v[:3], where, attr), self.angle(v[3]))
        if attr == "euler":
            angles = self.angle(floats(elem, attr, 3, None, where))
            R = np.eye(3)
            for ch, a in zip(self.eulerseq, angles):
                Rk = rotation(np.eye(3)["xyz".index(ch.lower())], a)
                R = R @ Rk if ch.islower() else Rk @ R   # intrinsic / extrinsic
            return R
        if attr == "xyaxes":
            v = floats(elem, attr, 6, None, where)
            x = unit(v[:3], where, attr)
            y = v[3:] - (v[3:] @ x) * x
            y = unit(y, where, attr)
            return np.column_stack([x, y, np.cross(x, y)])
        return self.zaxis(unit(floats(elem, attr, 3, None, where), where, attr))

    @staticmethod
    def zaxis(z):
        """The minimal rotation taking ẑ to the unit ``z`` (MJCF zaxis, fromto)."""
        c = z[2]
        axis = np.cross([0.0, 0.0, 1.0], z)
        if np.linalg.norm(axis) < 1e-12:
            return np.eye(3) if c > 0 else rotation(np.array([1.0, 0.0, 0.0]), np.pi)
        return rotation(axis / np.linalg.norm(axis), np.arctan2(np.linalg.norm(axis), c))


def _mjcf_inertial(body, compiler, where):
    """``(mass, com, inertia about com in body axes)`` from <inertial> or the geoms."""
    e = body.find("inertial")
    if e is None or compiler.inertiafromgeom == "true":
        return _geom_inertial(body, compiler, where)
    w = f"{where} <inertial>"
    mass = floats(e, "mass", 1, None, w)[0]
    com = floats(e, "pos", 3, None, w)
    R = compiler.orientation(e, w)
    if "fullinertia" in e.attrib:
        ixx, iyy, izz, ixy, ixz, iyz = floats(e, "fullinertia", 6, None, w)
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    else:
        I = np.diag(floats(e, "diaginertia", 3, None, w))
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
            ends = floats(g, "fromto", 6, None, w)
            z = ends[3:] - ends[:3]
            half = np.linalg.norm(z) / 2
            Rg = _Compiler.zaxis(unit(z, w, "fromto"))
            pos = (ends[:3] + ends[3:]) / 2
            size = np.concatenate([size[:1], [half]]) if kind in ("capsule", "cylinder") \
                else np.concatenate([size[:2], [half]])
        else:
            pos = floats(g, "pos", 3, (0, 0, 0), w)
            Rg = compiler.orientation(g, w)
        volume, unit_inertia = _geom_mass_properties(kind, size, w)
        if "mass" in g.attrib:
            mass = floats(g, "mass", 1, None, w)[0]
        else:
            mass = floats(g, "density", 1, (1000.0,), w)[0] * volume
        parts.append((mass, pos, Rg @ np.diag(mass * unit_inertia) @ Rg.T))
    mass, com, I = combined_mass_properties(parts)
    if not mass > 0:
        raise ValueError(f"{where}: the geoms have no mass")
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
    path, root = parse_xml(path, "mujoco")
    compiler = _Compiler(root, path)
    for d in root.iter("default"):
        if d.find("joint") is not None or d.find("inertial") is not None:
            raise ValueError(f"{path}: <default> joint/inertial settings are not supported; "
                             f"give the attributes on each element")
    if root.find("include") is not None:
        raise ValueError(f"{path}: <include> is not supported; merge the files")
    option = root.find("option")
    gravity = floats(option, "gravity", 3, (0.0, 0.0, -9.81), f"{path}: <option>")
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
        xb = x + R @ floats(body, "pos", 3, (0, 0, 0), where)
        Rb = R @ compiler.orientation(body, where)
        mass, com, I = _mjcf_inertial(body, compiler, where)
        located(where, lambda: mech.add_body(name, mass=mass, com=com, inertia=I,
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
            point = xb + Rb @ floats(e, "pos", 3, (0, 0, 0), w)
            axis = Rb @ unit(floats(e, "axis", 3, (0, 0, 1), w), w, "axis")
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
    located(where, add)


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
        anchor = x1 + R1 @ floats(e, "anchor", 3, None, where)
        located(where, lambda: mech.add_spherical(body1, b2, point=anchor, name=label))
        return
    # MuJoCo's default relpose "0 1 0 0 0 0 0" has a zero quaternion: keep the
    # relative pose of the reference configuration; anything else is unsupported
    if "relpose" in e.attrib and np.any(floats(e, "relpose", 7, None, where)[3:] != 0):
        raise ValueError(f"{where}: relpose with a quaternion is not supported; the weld "
                         f"keeps the relative pose of the reference configuration")
    point = x1 + R1 @ floats(e, "anchor", 3, (0, 0, 0), where)
    located(where, lambda: mech.add_fixed(body1, b2, point=point, name=label))
