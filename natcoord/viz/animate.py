"""Matplotlib animation of a simulated mechanism.

Each body is drawn as line segments between body points (``r = C(r̄) p``,
docs/method.md#11-coordinates) or as its frame ``o, o + ℓ e_k``; in a notebook, show the result
with ``IPython.display.HTML(anim.to_jshtml())``.
"""
from __future__ import annotations

import numpy as np

from ..util.checks import integer


def _segment_paths(sol, segments, frame_length):
    """World paths (k, 2, 3) of the segments: (body, a, b) tuples or body names (frames)."""
    paths, styles = [], []
    for item in segments:
        if isinstance(item, str):                       # frame: origin and three axes
            o = sol.point(item, np.zeros(3), local=True)
            for k, colour in enumerate(("tab:red", "tab:green", "tab:blue")):
                end = sol.point(item, frame_length * np.eye(3)[k], local=True)
                paths.append(np.stack([o, end], axis=1))
                styles.append(dict(color=colour, lw=1.5))
        else:
            body, a, b = item
            paths.append(np.stack([sol.point(body, a), sol.point(body, b)], axis=1))
            styles.append(dict(color="0.2", lw=3, marker="o", ms=4))
    return paths, styles


def _resample(t, path, times):
    """Linear interpolation of ``path`` (k, ...) from ``t`` to ``times``."""
    flat = path.reshape(t.size, -1)
    out = np.column_stack([np.interp(times, t, flat[:, j]) for j in range(flat.shape[1])])
    return out.reshape((times.size,) + path.shape[1:])


def animate(sol, segments=None, frames=60, fps=15, trace=None, frame_length=0.2,
            vertical_axis="z", ax=None, title=None, ground=None, figsize=(7.0, 6.0), dpi=90):
    """A ``FuncAnimation`` of the solution ``sol`` with ``frames`` equally spaced frames.

    ``segments``: items ``(body, point_a, point_b)`` (reference-world points,
    drawn as a bar) or a body name (drawn as its frame, axes of length
    ``frame_length`` m); default: every body's frame. ``trace=(body, point)``
    draws that point's path. ``vertical_axis`` names the world axis drawn
    upwards (``"y"`` for gravity along −y). ``ground``: world points fixed to
    ground (e.g. its joint points), drawn as fixed anchors joined by the ground
    link (a closed polygon for more than two points). ``figsize``, ``dpi``:
    size of a new figure (ignored with ``ax``).
    """
    from ..util.optional import pyplot
    plt = pyplot("animate")
    from matplotlib.animation import FuncAnimation
    from matplotlib.ticker import MaxNLocator

    integer("animate: frames", frames, 1)
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 < fps < np.inf:
        raise ValueError(f"animate: fps must be a positive number, got {fps!r}")
    if not sol.t.size:
        raise ValueError("animate: the solution has no outputs to draw")
    segments = [b.name for b in sol.model.bodies] if segments is None else list(segments)
    if not segments:
        raise ValueError("animate: segments is empty; give (body, point_a, point_b) items or "
                         "body names, or leave it out to draw every body's frame")
    paths, styles = _segment_paths(sol, segments, frame_length)
    times = np.linspace(sol.t[0], sol.t[-1], frames)
    paths = [_resample(sol.t, path, times) for path in paths]
    if ax is None:
        fig = plt.figure(figsize=figsize, dpi=dpi)
        ax = fig.add_subplot(projection="3d")
    fig = ax.figure
    ground = None if ground is None else np.atleast_2d(np.asarray(ground, float))
    everything = np.concatenate([p.reshape(-1, 3) for p in paths]
                                + ([] if ground is None else [ground]))
    lo, hi = everything.min(axis=0), everything.max(axis=0)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo).max() + 0.05
    ax.set(xlim=(centre[0] - half, centre[0] + half), ylim=(centre[1] - half, centre[1] + half),
           zlim=(centre[2] - half, centre[2] + half), xlabel="x [m]", ylabel="y [m]",
           zlabel="z [m]")
    ax.set_box_aspect((1, 1, 1))
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_major_locator(MaxNLocator(4))
    ax.view_init(elev=20, azim=-60, vertical_axis=vertical_axis)
    if ground is not None:                      # fixed: drawn once, under the bodies
        link = np.vstack([ground, ground[:1]]) if len(ground) > 2 else ground
        ax.plot(*link.T, color="0.55", lw=4, alpha=0.6, solid_capstyle="round", zorder=1)
        ax.plot(*ground.T, ls="none", marker="^", ms=9, color="0.3", label="ground")
    lines = [ax.plot(*path[0].T, **style)[0] for path, style in zip(paths, styles)]
    if trace is not None:
        r = _resample(sol.t, sol.point(*trace), times)
        ax.plot(*r.T, color="tab:orange", lw=1, label=f"path of {tuple(trace[1])} on {trace[0]}")
        ax.legend(loc="upper left", fontsize="small")
    label = ax.set_title("")
    name = title or sol.model.name

    def draw(k):
        for line, path in zip(lines, paths):
            line.set_data_3d(*path[k].T)
        label.set_text(f"{name}: t = {times[k]:.2f} s")
        return lines + [label]

    draw(0)
    plt.close(fig)   # the animation, not a static figure, is the output
    return FuncAnimation(fig, draw, frames=frames, interval=1000 / fps, blit=False)
