"""Symbolic phase of the block LDLᵀ (docs/method.md#16-linear-solve): elimination order and
fill, once per model.

The KKT matrix ``[[M, Gᵀ], [G, 0]]`` is viewed as a graph of *nodes*: a body
node is the 18×18 augmented block ``[[M_i, G_RC,iᵀ], [G_RC,i, 0]]`` (its 12
coordinates and 6 rigid-body multipliers), a joint node is the zero diagonal
block of its multipliers; the Jacobian of a joint couples it to the (at most
two) bodies it touches. Ground is no node: a joint to ground touches one body.

Order (after Kraus, Winckler & Bock 2001): a spanning tree of the body graph
rooted at ground (breadth first: shortest loops); bodies in post-order
(children before parents), each body followed by the joint to its parent. A
loop-closing (*cut*) joint comes after the bodies of its loop below the
loop's top ``c`` (the lowest common ancestor of its two bodies in the tree):
just before ``c``, or at the end when the loop closes through ground.
Eliminating a node then couples only nodes of its loop: trees give no fill,
a loop gives fill along its path only (its cut joint meets every body and
tree joint of the path).

A body without rotational inertia of its own (a point mass) may have a
singular pivot (see :mod:`natcoord.linalg.blockldl`): the factorization then
adds the augmented-Lagrangian term ``ρ ĈᵀĈ`` of the joint to its parent, which
couples the body to the parent body directly — one more block in the body's
column, and no fill beyond it (the joint, next in the order, couples the two
anyway).

The placement keeps constraint partitioning exact. When a joint is
eliminated, the eliminated nodes connected to it touch at most one body not
yet eliminated (``c``, or the parent) and no ground; all their rows are
invariant under a common rigid motion of these bodies. A joint row whose
pivot vanishes is a combination of earlier rows on the eliminated
coordinates, and by that invariance also on the remaining body up to its
rigid-body rows: a zero pivot means a redundant row, never one locked
artificially by the elimination order.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


BODY, JOINT = 0, 1
GROUND = -1


@dataclass(frozen=True)
class BlockStructure:
    """Elimination order and block pattern of the factor.

    ``kind``, ``index`` (N,): node k of the order is body or joint ``index[k]``;
    ``body_node`` (n,), ``joint_node`` (n_joints,): inverse maps. ``parent`` (n,):
    parent body in the spanning tree (−1 ground or a floating root),
    ``parent_joint`` (n,): joint to it (−1 none), ``cut`` : loop-closing joints,
    ``augmented``: the bodies whose parent joint's ``ρ ĈᵀĈ`` is added (point masses).
    Column k of the block factor holds the later nodes ``col_node[col_ptr[k]:
    col_ptr[k+1]]`` (ascending); ``col_fill`` marks those that are fill.
    """

    kind: np.ndarray
    index: np.ndarray
    body_node: np.ndarray
    joint_node: np.ndarray
    parent: np.ndarray
    parent_joint: np.ndarray
    cut: np.ndarray
    augmented: np.ndarray
    col_ptr: np.ndarray
    col_node: np.ndarray
    col_fill: np.ndarray

    @property
    def n_nodes(self):
        return self.kind.size

    @property
    def n_fill(self):
        return int(self.col_fill.sum())

    def column(self, k):
        return self.col_node[self.col_ptr[k]:self.col_ptr[k + 1]]


def structure(model) -> BlockStructure:
    """The block structure of ``model``: elimination order and fill (O(n); a solver
    computes it once and keeps it)."""
    return _analyse(model.n_bodies, model.joint_bodies,
                    [b.index for b in model.bodies if b.point_mass])


def spanning_tree(n_bodies, joint_bodies):
    """Rooted spanning tree of the body graph, breadth first from ground.

    Breadth first gives the shortest fundamental cycles, so the least fill;
    joints are explored in joint order. A component not attached to ground is
    rooted at its first body. Returns ``tree`` (mask over joints), ``parent``
    body (−1: ground or a floating root), ``parent_joint`` (−1: none),
    ``depth`` and ``children`` of every body, and the ``roots`` in order.
    """
    incident = [[] for _ in range(n_bodies + 1)]        # index n_bodies: ground
    for j, (a, b) in enumerate(joint_bodies):
        a, b = (n_bodies if a < 0 else a), (n_bodies if b < 0 else b)
        incident[a].append((b, j))
        incident[b].append((a, j))
    tree = np.zeros(len(joint_bodies), bool)
    parent = np.full(n_bodies, GROUND)
    parent_joint = np.full(n_bodies, -1)
    depth = np.full(n_bodies + 1, -1)
    children = [[] for _ in range(n_bodies)]
    roots = []
    for start in [n_bodies, *range(n_bodies)]:
        if depth[start] >= 0:
            continue
        depth[start] = 0 if start == n_bodies else 1
        if start < n_bodies:
            roots.append(start)
        queue = deque([start])
        while queue:
            i = queue.popleft()
            for k, j in incident[i]:
                if depth[k] < 0:
                    depth[k], parent_joint[k], tree[j] = depth[i] + 1, j, True
                    if i == n_bodies:
                        roots.append(k)
                    else:
                        parent[k] = i
                        children[i].append(k)
                    queue.append(k)
    return tree, parent, parent_joint, depth[:n_bodies], children, roots


def _common_ancestor(a, b, parent, depth):
    """Lowest common ancestor of bodies a, b in the rooted tree (−1: ground)."""
    if a < 0 or b < 0:
        return GROUND
    while depth[a] > depth[b]:
        a = parent[a]
    while depth[b] > depth[a]:
        b = parent[b]
    while a != b:
        a, b = parent[a], parent[b]
    return a


def _order(n_bodies, joint_bodies, tree, parent, depth, children, roots, parent_joint):
    """Nodes ``(kind, index)`` in elimination order (see module docstring)."""
    before = [[] for _ in range(n_bodies)]
    last = []
    for j in np.flatnonzero(~tree):
        c = _common_ancestor(*joint_bodies[j], parent, depth)
        (last if c == GROUND else before[c]).append(j)
    order = []
    for r in roots:                              # iterative post-order
        stack = [(r, False)]
        while stack:
            i, expanded = stack.pop()
            if not expanded:
                stack.append((i, True))
                stack.extend((k, False) for k in reversed(children[i]))
                continue
            order += [(JOINT, j) for j in before[i]]
            order.append((BODY, i))
            if parent_joint[i] >= 0:
                order.append((JOINT, parent_joint[i]))
    order += [(JOINT, j) for j in last]
    return order


def _analyse(n_bodies, joint_bodies, augmented=()):
    joint_bodies = np.asarray(joint_bodies, np.int64).reshape(-1, 2)
    tree, parent, parent_joint, depth, children, roots = spanning_tree(n_bodies, joint_bodies)
    order = _order(n_bodies, joint_bodies, tree, parent, depth, children, roots, parent_joint)
    kind = np.array([k for k, _ in order], np.int8)
    index = np.array([i for _, i in order], np.int64)
    body_node = np.empty(n_bodies, np.int64)
    joint_node = np.empty(len(joint_bodies), np.int64)
    body_node[index[kind == BODY]] = np.flatnonzero(kind == BODY)
    joint_node[index[kind == JOINT]] = np.flatnonzero(kind == JOINT)
    # Symbolic block elimination along the elimination tree: the later
    # neighbours of node k are its own plus those of its etree children.
    upper = [set() for _ in order]
    for j, bodies in enumerate(joint_bodies):
        for b in bodies[bodies >= 0]:
            lo, hi = sorted((joint_node[j], body_node[b]))
            upper[lo].add(hi)
    augmented = np.array([b for b in augmented if parent_joint[b] >= 0], np.int64)
    for b in augmented:                 # ρ ĈᵀĈ of the parent joint: body to parent body
        if parent[b] >= 0:
            upper[body_node[b]].add(body_node[parent[b]])
    original = [frozenset(u) for u in upper]
    for k, u in enumerate(upper):
        if u:
            p = min(u)
            upper[p] |= u - {p}
    columns = [sorted(u) for u in upper]
    col_ptr = np.concatenate([[0], np.cumsum([len(c) for c in columns])]).astype(np.int64)
    col_node = np.array([q for c in columns for q in c], np.int64)
    col_fill = np.array([q not in original[k] for k, c in enumerate(columns) for q in c], bool)
    return BlockStructure(kind, index, body_node, joint_node, parent, parent_joint,
                          np.flatnonzero(~tree), augmented, col_ptr, col_node, col_fill)
