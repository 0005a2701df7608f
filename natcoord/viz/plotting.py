"""Figures of a simulation: output point, constraint residuals, energy drift."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..util.atomic import atomic_path


def plot_solution(sol, path=None, point=None, proj_tol=None, title=None):
    """2×2 overview of a :class:`~natcoord.Solution`; saved to ``path`` if given.

    ``point = (body, world point)`` defaults to the model's scenario output
    point. Panels: point coordinates vs t, its path in the plane of its two
    largest motions, ``‖g‖∞`` and ``‖G v + g_t‖∞`` (log scale), and the energy:
    its drift for a conservative model; for a driven model (drives do work) the
    change ``E(t) − E(0)``, and with recorded multipliers the drive work and the
    energy balance.
    """
    from ..util.optional import pyplot
    plt = pyplot("plot_solution")

    body, x = point or sol.model.scenario["output_point"]
    r = sol.point(body, x)
    fig, ax = plt.subplots(2, 2, figsize=(10, 7), constrained_layout=True)
    for k, c in enumerate("xyz"):
        ax[0, 0].plot(sol.t, r[:, k], label=c)
    ax[0, 0].set(xlabel="t [s]", ylabel="position [m]", title=f"point {tuple(x)} on {body}")
    ax[0, 0].legend()
    i, j = np.sort(np.argsort(np.ptp(r, axis=0))[-2:])
    ax[0, 1].plot(r[:, i], r[:, j])
    ax[0, 1].plot(r[0, i], r[0, j], "o", label="start")
    ax[0, 1].set(xlabel=f"{'xyz'[i]} [m]", ylabel=f"{'xyz'[j]} [m]", title="path")
    ax[0, 1].set_aspect("equal", adjustable="datalim")
    ax[0, 1].legend()
    tiny = 1e-18  # keep exact zeros (the assembled start) on a log axis
    ax[1, 0].semilogy(sol.t, sol.constraint_residual + tiny, label="‖g‖∞ [m]")
    ax[1, 0].semilogy(sol.t, sol.velocity_residual + tiny, label="‖G v + g_t‖∞ [m/s]")
    if proj_tol:
        ax[1, 0].axhline(proj_tol, color="k", ls="--", lw=0.8, label="proj_tol")
    ax[1, 0].set(xlabel="t [s]", title="constraint residuals")
    ax[1, 0].legend(loc="lower right", fontsize="small", framealpha=0.9)
    _energy_panel(ax[1, 1], sol)
    stats = sol.stats
    fig.suptitle(title or f"{sol.model.name}: {stats['steps']} steps, "
                 f"{stats['rejected']} rejected, {stats['wall_time']:.2f} s wall, "
                 f"{len(sol.dropped)} dropped constraint(s)")
    if path is not None:
        save_figure(fig, path, dpi=120)
    return fig


def save_figure(fig, path, **savefig_options):
    """``fig.savefig`` to ``path`` atomically (:mod:`natcoord.util.atomic`), then close it.

    Written to a temporary file beside ``path`` and renamed, so an interrupted
    or concurrent save never leaves a truncated image where an older one was.
    The format is ``path``'s suffix, or Matplotlib's default format without
    one, named explicitly: Matplotlib would otherwise take it from the
    temporary file's name. The file written is exactly ``path``. The figure
    is closed even if saving fails, so a failure leaks no figure.
    """
    from ..util.optional import pyplot
    plt = pyplot("saving a figure")
    try:
        with atomic_path(path) as temporary:
            file_format = Path(path).suffix[1:] or plt.rcParams["savefig.format"]
            fig.savefig(temporary, format=file_format, **savefig_options)
    finally:
        plt.close(fig)


def _drives(model):
    return [j.name for j in model.joints if getattr(j, "drive", None) is not None]


def _energy_panel(ax, sol):
    """Energy drift (conservative model) or energy change and drive work (driven model)."""
    change = sol.energy - sol.energy[0]
    drives = _drives(sol.model)
    if not drives:
        ax.plot(sol.t, change)
        ax.set(xlabel="t [s]", ylabel="E(t) − E(0) [J]", title="mechanical energy drift")
        return
    ax.plot(sol.t, change, label="E(t) − E(0)")
    title = f"energy change ({len(drives)} drive(s) do work)"
    try:
        power = sum(sol.drive_power(name) for name in drives)
    except ValueError:                       # no multipliers recorded, or a drive row dropped
        power = None
    if power is not None and sol.t.size > 1:
        work = np.concatenate([[0.0], np.cumsum(0.5 * (power[1:] + power[:-1]) * np.diff(sol.t))])
        ax.plot(sol.t, work, "--", label="drive work W(t)")
        ax.plot(sol.t, change - work, label="E − E(0) − W (balance)")
        title = "energy balance of the drives"
    ax.set(xlabel="t [s]", ylabel="energy [J]", title=title)
    ax.legend(fontsize="small", framealpha=0.9)
