"""What the URDF and MJCF readers share (docs/model-format.md): reading the XML
file, numbers and rotations from attributes, error messages that name the
element, and the mass properties of rigid parts combined into one body.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np


def parse_xml(path, root_tag):
    """``(Path, root element)`` of an XML file whose root is ``<root_tag>``.

    Unreadable files, malformed XML and a wrong root element are one-line
    ``ValueError``s naming the file (the command line's exit status 2).
    """
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


def floats(elem, attr, n, default, where):
    """Attribute ``attr`` of ``elem`` as ``n`` finite numbers, else ``default``.

    ``default=None`` makes the attribute required; ``where`` names the element
    in the error.
    """
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


def unit(v, where, attr):
    """``v`` normalized; a zero vector is an error naming the attribute."""
    n = np.linalg.norm(v)
    if n < 1e-12:
        raise ValueError(f"{where}: {attr} has zero length")
    return np.asarray(v, float) / n


def rotation(axis, angle):
    """Rodrigues' rotation about the unit ``axis``."""
    x, y, z = axis
    K = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def rpy_matrix(rpy):
    """URDF roll–pitch–yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    E = np.eye(3)
    r, p, y = rpy
    return rotation(E[2], y) @ rotation(E[1], p) @ rotation(E[0], r)


def quat_matrix(q):
    """Rotation of the quaternion ``(w, x, y, z)`` (normalized here)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def located(where, action):
    """``action()``, with a builder's ``ValueError`` prefixed by the file element ``where``."""
    try:
        return action()
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None


def combined_mass_properties(parts):
    """Mass, centre of mass and central inertia of rigid parts joined into one body.

    ``parts``: ``(mass, centre of mass, inertia about that centre)`` in one
    frame. The centre of mass is the mass-weighted mean; each part's inertia
    moves to the common centre by the parallel-axis theorem
    ``I + m (|d|² 1 − d dᵀ)``, ``d`` the part's offset from it (exact: the
    sum of the parts' second moments). A massless whole keeps the frame
    origin as its centre.
    """
    mass = sum(m for m, _, _ in parts)
    com = sum(m * np.asarray(x, float) for m, x, _ in parts) / mass if mass > 0 \
        else np.zeros(3)
    inertia = np.zeros((3, 3))
    for m, x, I in parts:
        d = np.asarray(x, float) - com
        inertia += I + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia
