"""The block structure of the system matrix in elimination order (cf. Fig. 3 of the paper).

Rows and columns of ``[[M, Gᵀ], [G, 0]]`` grouped into nodes in the order of
:mod:`natcoord.linalg.symbolic`: a body node is its 18×18 augmented block
``[[M_i, G_RCᵀ], [G_RC, 0]]``, a joint node its multipliers (zero diagonal
block). Joint Jacobians couple joints to bodies; block elimination fills the
blocks marked as fill-in (none for a tree, along the path of each loop).
"""
from __future__ import annotations

import numpy as np

from ..linalg.symbolic import BODY, structure
from .plotting import save_figure

COLOURS = dict(mass="tab:blue", rigid="tab:cyan", pivot="0.85", coupling="tab:green",
               fill="tab:red")


def _node_sizes(model, s):
    size = np.full(s.n_nodes, 18)
    joints = s.index[s.kind != BODY]
    size[s.kind != BODY] = [b - a for a, b in np.reshape(model.joint_rows, (-1, 2))[joints]]
    return size


def plot_structure(model, path):
    """Draw the block pattern with fill-in to ``path`` (any Matplotlib format)."""
    from ..util.optional import pyplot
    plt = pyplot("plot_structure")
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Patch, Rectangle

    s = structure(model)
    size = _node_sizes(model, s)
    start = np.concatenate([[0], np.cumsum(size)])
    total = int(start[-1])
    boxes = {key: [] for key in COLOURS}

    def box(key, r, c, h, w, mirror=True):
        boxes[key].append(Rectangle((c, r), w, h))
        if mirror and r != c:
            boxes[key].append(Rectangle((r, c), h, w))

    for k in range(s.n_nodes):
        r = start[k]
        if s.kind[k] == BODY:                  # M (12×12), G_RC (6×12) and its transpose
            box("mass", r, r, 12, 12)
            box("rigid", r + 12, r, 6, 12)
        else:                                  # zero block, dense pivot after elimination
            box("pivot", r, r, size[k], size[k])
        for q, fill in zip(s.column(k), s.col_fill[s.col_ptr[k]:s.col_ptr[k + 1]]):
            # a joint meets a body in its 12 coordinate columns; fill may join two joints
            hq = 12 if s.kind[q] == BODY else size[q]
            wk = 12 if s.kind[k] == BODY else size[k]
            box("fill" if fill else "coupling", start[q], r, hq, wk)

    side = min(12.0, max(5.0, 0.02 * total + 4))
    fig, ax = plt.subplots(figsize=(side + 2.5, side))
    for key, colour in COLOURS.items():
        ax.add_collection(PatchCollection(boxes[key], facecolor=colour, edgecolor="none"))
    for x in start[1:-1]:
        ax.axhline(x, color="0.6", lw=0.3)
        ax.axvline(x, color="0.6", lw=0.3)
    ax.set_xlim(0, total)
    ax.set_ylim(total, 0)
    ax.set_aspect("equal")
    if s.n_nodes <= 40:
        names = [(model.bodies if kind == BODY else model.joints)[i].name
                 for kind, i in zip(s.kind, s.index)]
        centres = 0.5 * (start[:-1] + start[1:])
        ax.set_xticks(centres, names, rotation=90, fontsize=7)
        ax.set_yticks(centres, names, fontsize=7)
    n_coupling = int(s.col_node.size - s.n_fill)
    ax.set_title(f"{model.name}: {model.n_bodies} bodies (18×18 nodes), {len(model.joints)} "
                 f"joints ({s.cut.size} loop-closing), elimination order\n"
                 f"{n_coupling} coupling blocks, {s.n_fill} fill-in blocks", fontsize=9)
    ax.legend(handles=[Patch(color=COLOURS["mass"], label="mass M_i"),
                       Patch(color=COLOURS["rigid"], label="rigid-body G_RC"),
                       Patch(color=COLOURS["pivot"], label="joint pivot (Schur complement)"),
                       Patch(color=COLOURS["coupling"], label="joint Jacobian"),
                       Patch(color=COLOURS["fill"], label="fill-in")],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=150)
