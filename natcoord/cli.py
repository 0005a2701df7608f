"""Command line: ``natcoord simulate|info|bench`` (each with ``--help``)."""
from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path

import numpy as np

from . import models
from .integrate import PROJECTIONS, IntegrationError, simulate
from .linalg import available_solvers


def _model_arguments(parser):
    parser.add_argument("model", choices=sorted(models.REGISTRY),
                        help="benchmark mechanism (see docs/benchmarks.md)")
    parser.add_argument("--scenario", help="scenario of the model (e.g. hexapod: passive|driven)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="keyword argument of the model factory, e.g. --param n=100")


def _parse_value(text):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def build_model(args):
    """The model named on the command line, with its factory's keyword arguments."""
    factory = models.REGISTRY[args.model]
    kwargs = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"natcoord: --param needs KEY=VALUE, got {item!r}")
        kwargs[key] = _parse_value(value)
    if args.scenario is not None:
        kwargs["scenario"] = args.scenario
    accepted = inspect.signature(factory).parameters
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise SystemExit(f"natcoord: model {args.model!r} takes {sorted(accepted) or 'no'} "
                         f"parameters, not {unknown}")
    return factory(**kwargs).build()


def cmd_simulate(args):
    model = build_model(args)
    t_end = args.t_end if args.t_end is not None else model.scenario["t_end"]
    t_eval = np.linspace(0.0, t_end, args.outputs + 1) if args.outputs else None
    print(f"natcoord: simulating {model.name} for {t_end:g} s (rtol={args.rtol:g}, "
          f"proj_tol={args.proj_tol:g}, solver={args.solver or 'default'}, "
          f"projection={args.projection})", file=sys.stderr)
    try:
        sol = simulate(model, t_end, rtol=args.rtol, atol=args.atol, proj_tol=args.proj_tol,
                       t_eval=t_eval, solver=args.solver, projection=args.projection,
                       progress=not args.quiet)
        status = 0
    except IntegrationError as err:
        print(f"natcoord: {err}", file=sys.stderr)
        sol, status = err.solution, 1
    s = sol.stats
    print(f"{model.name}: t_end = {sol.t[-1]:g} s, {s['steps']} steps, {s['rejected']} rejected, "
          f"{s['rhs']} RHS evaluations, {s['factorizations']} factorizations, "
          f"wall time {s['wall_time']:.3f} s")
    print(f"  max ‖g‖∞ = {sol.constraint_residual.max():.3e}, "
          f"max ‖G v + g_t‖∞ = {sol.velocity_residual.max():.3e}, "
          f"max |E − E0| = {np.abs(sol.energy - sol.energy[0]).max():.3e} J, "
          f"dropped: {sol.dropped or 'none'}")
    for path, write, what in ((args.out, sol.save, "trajectory"),
                              (args.plot, None, "figure")):
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            if write:
                write(path)
            else:
                from .plotting import plot_solution
                plot_solution(sol, path, proj_tol=args.proj_tol)
            print(f"  {what} written to {path}")
    return status


def cmd_info(args):
    model = build_model(args)
    print(model)
    print(f"bodies ({model.n_bodies}):")
    for b in model.bodies:
        print(f"  {b.name:12s} mass {b.mass:g} kg, com (body) {np.round(b.com, 6)}")
    print(f"coordinates: {model.n_coords} (12 per body)")
    print(f"constraints: {model.n_rows} = {6 * model.n_bodies} rigid-body + "
          f"{model.n_rows - 6 * model.n_bodies} joint rows")
    for j, joint in enumerate(model.joints):
        start, stop = model.joint_rows[j]
        names = ["ground" if b < 0 else model.bodies[b].name for b in joint.bodies]
        drive = ", driven" if joint.drive is not None else ""
        print(f"  {joint.name:14s} {joint.kind:11s} {names[0]} – {names[1]}: "
              f"{stop - start} rows{drive}")
    print(f"Jacobian rank at the initial state: {model.rank} of {model.n_rows}")
    print(f"degrees of freedom: {model.dof}")
    print(f"dropped (redundant) constraints: {len(model.dropped)}"
          + "".join(f"\n  {label}" for label in model.dropped))
    if args.structure:
        from .linalg.structure import plot_structure
        Path(args.structure).parent.mkdir(parents=True, exist_ok=True)
        plot_structure(model, args.structure)
        print(f"structure diagram written to {args.structure}")
    return 0


def _experiment(name):
    return importlib.import_module(f"natcoord.experiments.{name}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="natcoord", description="Rigid multibody dynamics in natural coordinates.")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="simulate a benchmark mechanism",
                         description="Simulate a benchmark mechanism and report accuracy.")
    _model_arguments(sim)
    sim.add_argument("--t-end", type=float, help="end time [s] (default: the scenario's)")
    sim.add_argument("--rtol", type=float, default=1e-6, help="integration tolerance")
    sim.add_argument("--atol", type=float, help="absolute tolerance (default: rtol)")
    sim.add_argument("--proj-tol", type=float, default=1e-10, help="projection tolerance")
    sim.add_argument("--solver", choices=available_solvers(), help="linear solver backend")
    sim.add_argument("--projection", choices=PROJECTIONS, default=PROJECTIONS[0],
                     help="stabilization of the constraints")
    sim.add_argument("--outputs", type=int, default=1000,
                     help="number of equidistant output intervals (0: every step)")
    sim.add_argument("--out", help="write the trajectory to this .npz file")
    sim.add_argument("--plot", help="write a figure (point, residuals, energy) to this file")
    sim.add_argument("--quiet", action="store_true", help="no progress output")
    sim.set_defaults(func=cmd_simulate)

    info = sub.add_parser("info", help="describe a model: constraints, rank, DOF",
                          description="Bodies, coordinates, constraints, Jacobian rank, "
                                      "degrees of freedom and dropped constraints.")
    _model_arguments(info)
    info.add_argument("--structure", metavar="F.png",
                      help="draw the block structure of the system matrix with fill-in")
    info.set_defaults(func=cmd_info)

    bench = sub.add_parser("bench", help="benchmarks writing CSV to data/ and figures",
                           description="Benchmarks: speed lives here, never in tests.")
    bench_sub = bench.add_subparsers(dest="experiment", required=True)
    for name, module_name, text in (
            ("scaling", "scaling", "time per evaluation vs number of bodies (O(n))"),
            ("tolerance", "tolerance", "runtime vs integration and projection tolerance"),
            ("chain", "chain_simulation", "chain(512) for 1 s: worst error vs wall time")):
        try:
            module = _experiment(module_name)
        except ImportError as err:
            bench_sub.add_parser(name, help=f"{text} (unavailable: {err})")
            continue
        p = bench_sub.add_parser(name, help=text, description=module.__doc__)
        module.configure(p)
        p.set_defaults(func=module.run)

    plain_help(parser)
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.error(f"bench {args.experiment} is unavailable in this installation")
    try:
        return args.func(args) or 0
    except ValueError as err:
        print(f"natcoord: {err}", file=sys.stderr)
        return 2


# ---- help text: plain text (no reST markup) and defaults shown ---------------
_REST_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc|ref|doc|term):"
                        r"`(~?)([^`<]*?)(?:\s*<[^>]*>)?`")


def plain_text(text):
    """``text`` without reST markup: ``:func:`~a.b``` becomes ``b``, double backquotes go."""
    text = _REST_ROLE.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text or "")
    return re.sub(r"``([^`]*)``", r"\1", text)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Plain-text descriptions (paragraphs kept) and ``(default: …)`` after every option
    that has a default and does not already describe it."""

    def _fill_text(self, text, width, indent):
        paragraphs = re.split(r"\n\s*\n", plain_text(text).strip())
        return "\n\n".join(textwrap.fill(" ".join(p.split()), width, initial_indent=indent,
                                         subsequent_indent=indent) for p in paragraphs)

    def _get_help_string(self, action):
        text = plain_text(action.help)
        default = action.default
        if ("%(default)" in text or "default" in text.lower() or not action.option_strings
                or default is None or default is False or default == argparse.SUPPRESS
                or (isinstance(default, (list, tuple)) and not default)):
            return text
        if isinstance(default, (list, tuple)):           # as typed: nargs lists or a comma list
            default = (" " if action.nargs not in (None, "?") else ",").join(map(str, default))
        return text + f" (default: {str(default).replace('%', '%%')})"


def plain_help(parser):
    """Give ``parser`` and all its sub-parsers the :class:`HelpFormatter`."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                plain_help(sub)


if __name__ == "__main__":
    sys.exit(main())
