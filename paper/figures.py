"""Every figure and number of the paper, from the CSV files in data/ (``make paper``).

Reads (each optional; what is missing is skipped with a note):

* ``data/<model>_tolerance.csv`` (``natcoord bench tolerance MODEL``) →
  ``figures/<model>_runtime_vs_tol.png``, the layout of Fig. 5 of Kraus,
  Winckler & Bock (2001): runtime against −log10 of the integration
  tolerance, one curve per projection tolerance;
* ``data/<model>_precision.csv`` (``... --work-precision``) →
  ``figures/<model>_work_precision.png``: runtime against achieved error for
  the linear-solver backends and the stabilizations, and the drift;
* ``data/hexapod_speed.csv`` (``benchmarks/hexapod_speed.py``);
* ``data/scaling.csv`` (``natcoord bench scaling``) → ``figures/scaling.png``;
* ``data/peers.csv`` (``benchmarks/peers.py``) → ``figures/peers.png``:
  natcoord against Pinocchio, MuJoCo and Exudyn.

It also draws the structural diagrams of the 6-bar and the hexapod (from the
models, no simulation), writes ``results.md`` (every number the paper
quotes) and renders ``paper.md`` from ``paper.template.md``, whose
``{{key}}`` placeholders name entries of that table: no number in the text
is typed by hand. No simulation or timing is done here.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FormatStrFormatter, LogLocator, NullFormatter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the experiments' readers (natcoord_bench) live in the checkout, not in the package
if str(ROOT / "benchmarks") not in sys.path:
    sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))     # the CSV reader, the structure diagrams and scaling use natcoord

from natcoord.study.records import read_columns, read_csv, read_machine  # noqa: E402
TARGET_ERROR = 1e-6         # m: the accuracy at which runtimes are compared
STABILIZATIONS = ("position+velocity", "baumgarte", "none")
plt.rcParams.update({"font.size": 10, "axes.grid": True, "grid.alpha": 0.3,
                     "legend.fontsize": 8.5, "savefig.dpi": 150})


# ----------------------------------------------------------------- reading
# one reader of natcoord's CSV files (natcoord.study.records): the machine line,
# and columns (name → array; numbers as float, empty cells NaN, else text)
machine = read_machine
read_table = read_columns


def select(table, **where):
    """Sub-table of the rows matching every ``column=value`` (NaN matches NaN)."""
    mask = np.ones(next(iter(table.values())).size, bool)
    for name, value in where.items():
        col = table[name]
        if isinstance(value, float) and np.isnan(value):
            mask &= np.isnan(col)
        else:
            mask &= col == value
    return {k: v[mask] for k, v in table.items()}


def sweep(table):
    """The rows sorted by decreasing ``rtol`` (loose → strict)."""
    order = np.argsort(-table["rtol"])
    return {k: v[order] for k, v in table.items()}


def tol_label(value):
    exponent = np.log10(value)
    return f"$10^{{{exponent:.0f}}}$" if np.isclose(exponent, round(exponent)) else f"{value:g}"


def pretty_model(stem):
    names = {"six_bar": "6-bar", "hexapod": "hexapod"}
    model, _, variant = stem.partition("_no_")
    name = names.get(model, model.replace("_", " "))
    return f"{name} (no {variant.replace('_', ' ')})" if variant else name


# ----------------------------------------------------------------- figures
def plain_log_y(ax):
    """Log-scaled y axis labelled 0.1, 0.2, 0.5, 1, 2, ... instead of 2×10⁰."""
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def runtime_vs_tolerance(table, stem, path):
    """Fig. 5 layout: runtime vs −log10(rtol), one curve per ``proj_tol``; with the
    runtime relative to the loosest ``proj_tol``, the achieved error and the
    projection iterations and active-set changes that explain the differences."""
    table = select(table, projection="position+velocity")
    proj_tols = np.unique(table["proj_tol"])[::-1]            # loose → strict
    colours = plt.cm.viridis(np.linspace(0.0, 0.9, proj_tols.size))
    loosest = sweep(select(table, proj_tol=proj_tols[0]))
    fig, ax = plt.subplots(2, 2, figsize=(10, 7.6), constrained_layout=True)
    for tol, colour in zip(proj_tols, colours):
        t = sweep(select(table, proj_tol=tol))
        x = -np.log10(t["rtol"])
        spread = [t["wall_time_median"] - t["wall_time_min"],
                  t["wall_time_max"] - t["wall_time_median"]]
        ax[0, 0].errorbar(x, t["wall_time_median"], yerr=spread, color=colour, marker="o",
                          ms=4, capsize=2, label=f"proj_tol = {tol_label(tol)} m")
        ratio = t["wall_time_median"] / np.interp(t["rtol"], loosest["rtol"][::-1],
                                                  loosest["wall_time_median"][::-1])
        ax[0, 1].plot(x, ratio, color=colour, marker="o", ms=4)
        ax[1, 0].semilogy(x, t["output_error"], color=colour, marker="o", ms=4)
        ax[1, 1].plot(x, t["projection_iterations"], color=colour, marker="o", ms=4)
        ax[1, 1].plot(x, t["active_set_changes"], color=colour, ls="--", marker="x", ms=5)
    ax[0, 0].set(xlabel="−log10(rtol)", ylabel="runtime [s]",
                 title=f"(a) runtime for {table['t_end'][0]:g} s simulated (median, min–max)")
    ax[0, 1].axhline(1.0, color="k", lw=0.8)
    ax[0, 1].set(xlabel="−log10(rtol)",
                 ylabel=f"runtime / runtime at proj_tol = {tol_label(proj_tols[0])} m",
                 title="(b) effect of the projection tolerance")
    ax[1, 0].axhline(TARGET_ERROR, color="k", ls="--", lw=0.8)
    ax[1, 0].set(xlabel="−log10(rtol)", ylabel="max output-point error [m]",
                 title="(c) achieved accuracy (reference: rtol = 1e-12)")
    ax[1, 1].set_yscale("symlog", linthresh=1.0)
    ax[1, 1].plot([], [], "k-o", ms=4, label="projection iterations")
    ax[1, 1].plot([], [], "k--x", ms=5, label="active-set changes")
    ax[1, 1].set(xlabel="−log10(rtol)", ylabel="count per run",
                 title="(d) projection iterations and active-set changes")
    ax[1, 1].legend(loc="center left")
    fig.legend(*ax[0, 0].get_legend_handles_labels(), loc="outside upper center",
               ncol=proj_tols.size, title=f"{pretty_model(stem)}, "
               f"{table['solver'][0]} solver, position+velocity projection")
    fig.savefig(path)
    plt.close(fig)


def work_precision(table, stem, path):
    """Runtime vs achieved error: (a) backends, (b) stabilizations; (c) drift."""
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.3), constrained_layout=True)
    projected = select(table, projection="position+velocity")
    for solver in np.unique(projected["solver"]):
        t = sweep(select(projected, solver=solver))
        ax[0].loglog(t["output_error"], t["wall_time_median"], marker="o", ms=4, label=solver)
    stab_solver = table["solver"][table["projection"] == "none"][0] \
        if np.any(table["projection"] == "none") else projected["solver"][0]
    for projection in STABILIZATIONS:
        t = sweep(select(table, solver=stab_solver, projection=projection))
        if not t["rtol"].size:
            continue
        ax[1].loglog(t["output_error"], t["wall_time_median"], marker="o", ms=4,
                     label=projection)
        ax[2].semilogy(-np.log10(t["rtol"]), t["max_constraint_residual"], marker="o", ms=4,
                       label=projection)
    model = pretty_model(stem)
    for a, what in zip(ax[:2], ("(a) linear-solver backends, position+velocity projection",
                                f"(b) stabilizations ({stab_solver} solver)")):
        plain_log_y(a)
        a.axvline(TARGET_ERROR, color="k", ls="--", lw=0.8)
        a.set(xlabel="max output-point error [m]", ylabel="runtime [s]",
              title=f"{what}")
    ax[2].set(xlabel="−log10(rtol)", ylabel="max ‖g‖∞ over the run [m]",
              title="(c) constraint drift")
    fig.suptitle(f"{model}: work–precision, {table['t_end'][0]:g} s simulated, one point "
                 f"per rtol")
    for a in ax:
        a.legend()
    fig.savefig(path)
    plt.close(fig)


# ----------------------------------------------------------------- numbers
def fmt_time(seconds):
    return f"{seconds:.3g}"


def fmt_exp(value):
    return f"{value:.1e}".replace("e-0", "e-").replace("e+0", "e")


def monotone_decades(t):
    """Decades of rtol over which the error falls strictly, from the loosest rtol on."""
    t = sweep(t)
    falls = np.diff(t["output_error"]) < 0
    stop = falls.size if falls.all() else int(np.argmin(falls))
    return float(np.log10(t["rtol"][0] / t["rtol"][stop]))


def tolerance_results(table, stem):
    """Numbers of the runtime-vs-tolerance experiment of one model."""
    table = select(table, projection="position+velocity")
    proj_tols = np.unique(table["proj_tol"])[::-1]
    loose, strict = (sweep(select(table, proj_tol=p)) for p in (proj_tols[0], proj_tols[-1]))
    ratio = strict["wall_time_median"] / loose["wall_time_median"]
    decades = [monotone_decades(select(table, proj_tol=p)) for p in proj_tols]
    r = {"model": pretty_model(stem), "t_end": f"{table['t_end'][0]:g}",
         "repeat": f"{table['repeat'].max():.0f}", "solver": str(table["solver"][0]),
         "rtol_range": f"{fmt_exp(table['rtol'].max())} to {fmt_exp(table['rtol'].min())}",
         "proj_tols": ", ".join(fmt_exp(p) for p in proj_tols),
         "monotone_decades_min": f"{min(decades):.0f}",
         "monotone_decades_max": f"{max(decades):.0f}",
         "error_loosest": fmt_exp(strict["output_error"][0]),
         "error_strictest": fmt_exp(strict["output_error"][-1]),
         "max_constraint_residual": fmt_exp(np.nanmax(table["max_constraint_residual"])),
         "strict_faster": f"{int(np.sum(ratio < 1))}", "n_rtol": f"{ratio.size}",
         "strict_loose_ratio_median": f"{np.median(ratio):.2f}",
         "strict_loose_ratio_min": f"{ratio.min():.2f}",
         "strict_loose_ratio_max": f"{ratio.max():.2f}",
         "active_changes_loose": f"{loose['active_set_changes'].sum():.0f}",
         "active_changes_strict": f"{strict['active_set_changes'].sum():.0f}",
         "rejected_loose": f"{loose['rejected'].sum():.0f}",
         "rejected_strict": f"{strict['rejected'].sum():.0f}",
         "projection_iterations_loose": f"{loose['projection_iterations'].sum():.0f}",
         "projection_iterations_strict": f"{strict['projection_iterations'].sum():.0f}",
         "rtol_loosest": fmt_exp(loose["rtol"][0]),
         "rhs_loosest": f"{loose['rhs'][0]:.0f}"}
    holds = np.sum(ratio < 1) > ratio.size / 2
    r["observation"] = "is reproduced" if holds else "is not reproduced"
    ok = table["output_error"] <= TARGET_ERROR
    if ok.any():
        k = np.flatnonzero(ok)[np.argmin(table["wall_time_median"][ok])]
        per_rhs_us = 1e6 * table["wall_time_median"][k] / table["rhs"][k]
        r.update(time_at_target=fmt_time(table["wall_time_median"][k]),
                 time_at_target_rtol=fmt_exp(table["rtol"][k]),
                 time_at_target_proj_tol=fmt_exp(table["proj_tol"][k]),
                 time_at_target_error=fmt_exp(table["output_error"][k]),
                 time_at_target_rhs=f"{table['rhs'][k]:.0f}",
                 time_at_target_steps=f"{table['steps'][k]:.0f}",
                 time_at_target_per_rhs_us=f"{per_rhs_us:.0f}")
    return {f"{stem}_{k}": v for k, v in r.items()}


def precision_results(table, stem):
    """Runtime at the target error per backend and stabilization; drift at rtol 1e-6."""
    r = {}
    for (solver, projection) in sorted({(s, p) for s, p in zip(table["solver"],
                                                               table["projection"])}):
        t = select(table, solver=solver, projection=projection)
        key = f"{solver}_{projection.replace('+', '_')}"
        ok = t["output_error"] <= TARGET_ERROR
        r[f"time_at_target_{key}"] = fmt_time(t["wall_time_median"][ok].min()) \
            if ok.any() else "not reached"
        at = t["rtol"] == 1e-6
        if at.any():
            r[f"drift_1e-6_{key}"] = fmt_exp(t["max_constraint_residual"][at][0])
            r[f"error_1e-6_{key}"] = fmt_exp(t["output_error"][at][0])
    return {f"{stem}_{k}": v for k, v in r.items()}


def speed_results(table):
    k = int(np.argmax(table["realtime_factor"]))
    return {"hexapod_realtime_factor": f"{table['realtime_factor'][k]:.0f}",
            "hexapod_speed_solver": str(table["solver"][k]),
            "hexapod_speed_wall_time": fmt_time(table["wall_time_median"][k]),
            "hexapod_speed_t_end": f"{table['t_end'][k]:g}",
            "hexapod_speed_rtol": fmt_exp(table["rtol"][k]),
            "hexapod_speed_repeat": f"{table['repeat'][k]:.0f}",
            "hexapod_speed_steps": f"{table['steps'][k]:.0f}",
            "hexapod_speed_rhs": f"{table['rhs'][k]:.0f}"}


def scaling_results(path):
    """Slopes of the block solver's time per evaluation against n, and its lead.

    Uses the scaling experiment's own reader and fit.
    """
    from natcoord_bench.scaling import FAMILIES, read_rows, slope
    rows = read_rows(path)
    r = {}
    for family in FAMILIES:
        times = {(x["solver"], x["n_bodies"]): x["call_s"] for x in rows
                 if x["family"] == family}
        n = np.array(sorted(k for s, k in times if s == "block"))
        if n.size < 2:
            continue
        t = np.array([times["block", k] for k in n])
        r.update({f"scaling_{family}_slope": f"{slope(n, t):.2f}",
                  f"scaling_{family}_n_min": f"{n[0]}", f"scaling_{family}_n_max": f"{n[-1]}",
                  f"scaling_{family}_us_per_body": f"{1e6 * t[-1] / n[-1]:.1f}"})
        for other in ("superlu", "dense", "cholmod"):
            common = [k for k in n if (other, k) in times]
            if common:
                k = max(common)
                ratio = times[other, k] / times["block", k]
                r[f"scaling_{family}_{other}_ratio"] = f"{ratio:.1f}" if ratio < 10 else f"{ratio:.0f}"
                r[f"scaling_{family}_{other}_ratio_n"] = f"{k}"
    return r


def peers_figure(data, out):
    """``figures/peers.png`` by the peers experiment's own plotting function."""
    from natcoord_bench.peers import plot_peers
    plot_peers(data / "peers.csv", out / "peers.png")
    return [out / "peers.png"]


def peers_results(path):
    """Per-call times, time to accuracy (6-bar, chain) and the physics cross-check."""
    from natcoord_bench.peers import CHAIN_TARGET, LEVELS, time_to_accuracy
    rows = read_csv(path)
    r = {}
    for row in rows:
        if row["experiment"] == "call" and row["time_median_s"] == row["time_median_s"]:
            r[f"peers_call_{row['tool']}_{row['n']:.0f}_us"] = f"{1e6 * row['time_median_s']:.3g}"
    checks = [row["check"] for row in rows if row["experiment"] == "call"
              and row["tool"] in ("pinocchio", "mujoco") and row["check"] == row["check"]]
    if checks:
        r["peers_call_check_max"] = fmt_exp(max(checks))
    for experiment, levels in (("bricard", LEVELS), ("chain", (CHAIN_TARGET,))):
        sel = [row for row in rows if row["experiment"] == experiment]
        for tool in dict.fromkeys(row["tool"] for row in sel):
            for level in levels:
                t = time_to_accuracy(sel, tool, level)
                r[f"peers_{experiment}_{tool}_{fmt_exp(level)}_s"] = \
                    "not reached" if np.isnan(t) else fmt_time(t)
            r[f"peers_{experiment}_{tool}_best_error"] = fmt_exp(
                np.nanmin([row["error_m"] for row in sel if row["tool"] == tool]))
    return r


def write_results(results, path, sources):
    lines = ["# Numbers quoted in the paper", "",
             "Generated by `paper/figures.py` from " + ", ".join(f"`{s}`" for s in sources)
             + "; do not edit.", "", "| key | value |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in results.items()]
    Path(path).write_text("\n".join(lines) + "\n")


def render(template, results):
    """``template`` with every ``{{key}}`` replaced; missing keys are an error."""
    missing = sorted(set(re.findall(r"{{\s*([\w.+-]+)\s*}}", template)) - set(results))
    if missing:
        raise KeyError(f"paper.template.md quotes numbers missing from data/: {missing}")
    return re.sub(r"{{\s*([\w.+-]+)\s*}}", lambda m: results[m.group(1)], template)


# ----------------------------------------------------------------- driver
def model_facts(stem, model):
    """Counts the text quotes about a model, computed from it (not typed)."""
    from natcoord import assemble
    joint_rows = model.n_rows - 6 * model.n_bodies
    assembly = assemble(model)
    return {f"{stem}_bodies": f"{model.n_bodies}", f"{stem}_joint_rows": f"{joint_rows}",
            f"{stem}_dropped": f"{assembly.dropped.size}", f"{stem}_dof": f"{assembly.dof}"}


def structure_figures(out):
    """Structural diagrams of the 6-bar and the hexapod (Fig. 3 analogue), and their counts."""
    from natcoord import models
    facts = {}
    try:
        from natcoord.viz.structure import plot_structure
    except ImportError as err:
        print(f"figures: no structure diagrams ({err})", file=sys.stderr)
        plot_structure = None
    for stem, factory in (("six_bar", models.six_bar), ("hexapod", models.hexapod)):
        model = factory().build()
        facts.update(model_facts(stem, model))
        if plot_structure is not None:
            plot_structure(model, out / f"{stem}_structure.png")
            print(f"wrote {out / f'{stem}_structure.png'}")
    return facts


def scaling_figure(data, out):
    """``figures/scaling.png`` by the scaling experiment's own plotting function."""
    try:
        from natcoord_bench.scaling import plot_scaling
    except ImportError as err:
        print(f"figures: no scaling figure ({err})", file=sys.stderr)
        return []
    plot_scaling(data / "scaling.csv", out / "scaling.png")
    return [out / "scaling.png"]


def main(data=ROOT / "data", out=ROOT / "paper" / "figures", paper=ROOT / "paper",
         diagrams=True):
    """Write all figures to ``out``, ``results.md`` (and ``paper.md``) to ``paper``."""
    data, out, paper = Path(data), Path(out), Path(paper)
    out.mkdir(parents=True, exist_ok=True)
    results, sources, made = {}, [], []
    # <model>_tolerance.csv, and the same sweep without the partitioning's
    # hysteresis (--hold-tol 0) as <model>_tolerance_no_hysteresis.csv
    for path in sorted(data.glob("*_tolerance*.csv")):
        stem = path.stem.replace("_tolerance", "")
        table = read_table(path)
        runtime_vs_tolerance(table, stem, out / f"{stem}_runtime_vs_tol.png")
        made.append(out / f"{stem}_runtime_vs_tol.png")
        results.update(tolerance_results(table, stem))
        results.setdefault("machine", machine(path))
        sources.append(f"data/{path.name}")
    for path in sorted(data.glob("*_precision.csv")):
        stem = path.name[:-len("_precision.csv")]
        table = read_table(path)
        work_precision(table, stem, out / f"{stem}_work_precision.png")
        made.append(out / f"{stem}_work_precision.png")
        results.update(precision_results(table, stem))
        sources.append(f"data/{path.name}")
    if (data / "hexapod_speed.csv").exists():
        results.update(speed_results(read_table(data / "hexapod_speed.csv")))
        sources.append("data/hexapod_speed.csv")
    if (data / "scaling.csv").exists():
        made += scaling_figure(data, out)
        results.update(scaling_results(data / "scaling.csv"))
        sources.append("data/scaling.csv")
    if (data / "peers.csv").exists():
        made += peers_figure(data, out)
        results.update(peers_results(data / "peers.csv"))
        sources.append("data/peers.csv")
    if diagrams:
        results.update(structure_figures(out))
    write_results(results, paper / "results.md", sources)
    template = paper / "paper.template.md"
    if template.exists():
        (paper / "paper.md").write_text(render(template.read_text(), results))
        made.append(paper / "paper.md")
    for path in made + [paper / "results.md"]:
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=ROOT / "data", help="directory of the CSV files")
    parser.add_argument("--out", default=ROOT / "paper" / "figures", help="figure directory")
    args = parser.parse_args()
    main(args.data, args.out)
