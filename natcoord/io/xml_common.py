"""The URDF reader's XML helpers (docs/model-format.md): reading the XML file (and
any model file: regular files only, within a size),
numbers and rotations from attributes, error messages that name the element,
and the mass properties of rigid parts combined into one body (which the MJCF
importer, reading MuJoCo's compiled model rather than XML, also uses to lump
welded bodies).
"""
from __future__ import annotations

import errno
import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ..model.mechanism import Mechanism


#: largest XML robot description read, in bytes (the largest URDF of
#: example-robot-data takes 0.2 MB); larger files are refused before they are parsed
MAX_XML_BYTES = 64 * 2**20


def read_regular_file(path, limit):
    """At most ``limit`` bytes of the regular file ``path``.

    Opened without blocking and refused (``OSError``, "not a regular file") unless it
    is a regular file: reading a named pipe would wait for a writer forever, and a
    device such as ``/dev/zero`` never ends.
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe, socket or device); "
                                        "give a file", str(path))
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            return file.read(limit)
    finally:
        os.close(descriptor)


def too_large(path):
    """The error of an XML file larger than :data:`MAX_XML_BYTES`."""
    return ValueError(f"{path}: larger than {MAX_XML_BYTES // 2**20} MiB, the limit of a "
                      f"robot description (natcoord.io.xml_common.MAX_XML_BYTES)")


def parse_xml(path, root_tag):
    """``(Path, root element)`` of an XML file whose root is ``<root_tag>``.

    Unreadable files, malformed XML and a wrong root element are one-line
    ``ValueError``s naming the file (the command line's exit status 2); files that
    are not regular files or are larger than ``MAX_XML_BYTES`` are refused unread.
    """
    path = Path(path)
    try:
        raw = read_regular_file(path, MAX_XML_BYTES + 1)
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    if len(raw) > MAX_XML_BYTES:
        raise too_large(path)
    try:
        root = ET.fromstring(raw)
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


def compound_exists(dofs):
    """Whether ``Mechanism.add_compound`` models the sequence ``dofs`` (world points and
    axes) with one exact constraint set: tried between two bodies of a mechanism of
    their own (the set depends on the DOF's lines only). Where it does not, the
    importers compose the sequence through massless bodies."""
    trial = Mechanism()
    for name in ("parent", "child"):
        trial.add_body(name, 1.0, com=(0.0, 0.0, 0.0), inertia=np.eye(3))
    try:
        trial.add_compound("parent", "child", dofs)
    except ValueError:
        return False
    return True
