"""Command line: ``natcoord simulate|info|bench`` (each with ``--help``).

Exit status: 0 success, 1 integration failure (the partial result is still
written), 2 bad input (one line on stderr, no traceback), 3 the results could
not be written (another writer kept the file locked, the disk is full), 130
interrupted.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import math
import re
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

from .dynamics.assembly import describe
from .integrate.simulate import (METHODS, PROJECTIONS, IntegrationError, check_output_memory,
                                 simulate)
from .io.source import add_model_arguments, model_from_arguments
from .linalg import available_solvers

OK, FAILED, BAD_INPUT, NOT_WRITTEN, INTERRUPTED = 0, 1, 2, 3, 130
#: file name suffixes of ``simulate --out`` and ``--plot``
OUT_SUFFIXES, PLOT_SUFFIXES = (".npz",), (".png", ".pdf", ".svg")


class BadInput(Exception):
    """Command-line input that cannot work: reported in one line, exit status 2."""


def positive_float(text):
    """argparse type: a positive finite number."""
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return x


def non_negative_int(text):
    """argparse type: an integer ≥ 0."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return n


def writable(path, suffixes, flag):
    """``path`` after checking, before any work, that it can be written.

    Its suffix must be one of ``suffixes``; missing parent directories are
    created. Results are written atomically (:mod:`natcoord.util.atomic`: a
    temporary file in the same directory, renamed onto ``path``), so what
    must be writable is the directory, and the check creates and removes an
    unnamed file there. It never touches ``path`` itself: creating and
    removing an empty ``path`` could delete the result another run had just
    renamed into place.
    """
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise BadInput(f"{flag} {path}: the file name must end in {' or '.join(suffixes)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except (FileExistsError, NotADirectoryError):    # mkdir met a file
        raise BadInput(f"{flag} {path}: {path.parent} is not a directory (a file is in the "
                       f"way)") from None
    except OSError as err:
        raise BadInput(f"{flag} {path}: cannot write there ({err.strerror or err})") from None
    return path


def _run(model, t_end, args):
    """``(solution or None, exit status)``: a failed or interrupted run keeps its partial result.

    An interrupt may surface as ``KeyboardInterrupt`` (with the partial
    solution on ``.solution`` when the integrator attached one) or as an
    ``IntegrationError`` caused by it.
    """
    t_eval = np.linspace(0.0, t_end, args.outputs + 1) if args.outputs else None
    try:
        return simulate(model, t_end, rtol=args.rtol, atol=args.atol, proj_tol=args.proj_tol,
                        t_eval=t_eval, solver=args.solver, projection=args.projection,
                        method=args.method, inputs=not args.no_inputs,
                        progress=not args.quiet), OK
    except IntegrationError as err:
        print(f"natcoord: {err}", file=sys.stderr)
        interrupted = isinstance(err.__cause__ or err.__context__, KeyboardInterrupt)
        return err.solution, INTERRUPTED if interrupted else FAILED
    except KeyboardInterrupt as err:
        print("natcoord: interrupted", file=sys.stderr)
        return getattr(err, "solution", None), INTERRUPTED


def _summary(model, sol, partial):
    if not sol.t.size:
        print(f"{model.name}: no output was recorded")
        return
    s = sol.stats
    print(f"{model.name}: {'PARTIAL result, ' if partial else ''}t_end = {sol.t[-1]:g} s, "
          f"{s['steps']} steps, {s['rejected']} rejected, {s['rhs']} RHS evaluations, "
          f"{s['factorizations']} factorizations, wall time {s['wall_time']:.3f} s")
    print(f"  max ‖g‖∞ = {sol.constraint_residual.max():.3e}, "
          f"max ‖G v + g_t‖∞ = {sol.velocity_residual.max():.3e}, "
          f"max |E − E0| = {np.abs(sol.energy - sol.energy[0]).max():.3e} J, "
          f"dropped: {sol.dropped or 'none'}")


def _inputs_note(model, args):
    """What the run does with the model's joint inputs, for the start line."""
    if not model.inputs:
        return ""
    joints = ", ".join(i.joint for i in model.inputs)
    return f", inputs {'off (--no-inputs)' if args.no_inputs else 'on'}: {joints}"


def cmd_simulate(args):
    out = args.out and writable(args.out, OUT_SUFFIXES, "--out")
    plot = args.plot and writable(args.plot, PLOT_SUFFIXES, "--plot")
    model = model_from_arguments(args)
    t_end = args.t_end if args.t_end is not None else model.scenario["t_end"]
    if args.outputs:            # before linspace: 10^12 outputs must not take the memory first
        check_output_memory(model, args.outputs + 1, f"--outputs {args.outputs}",
                            "choose fewer output intervals, or --outputs 0 (every step)")
    print(f"natcoord: simulating {model.name} for {t_end:g} s (rtol={args.rtol:g}, "
          f"proj_tol={args.proj_tol:g}, solver={args.solver or 'default'}, "
          f"projection={args.projection}, method={args.method}"
          f"{_inputs_note(model, args)})", file=sys.stderr)
    sol, status = _run(model, t_end, args)
    if sol is None:
        return status
    # what the run was, for the saved file; simulate's own record, if any, wins
    sol.settings = {"model": args.model, "parameters": args.param, "scenario": args.scenario,
                    "t_end": t_end, "rtol": args.rtol, "atol": args.atol,
                    "proj_tol": args.proj_tol, "solver": args.solver,
                    "projection": args.projection, "outputs": args.outputs,
                    "inputs": not args.no_inputs, **sol.settings}
    partial = status != OK
    _summary(model, sol, partial)
    what = "partial " if partial else ""
    if out:
        try:
            sol.save(out)
        except OSError as err:      # locked past the wait by another writer, disk full, ...
            print(f"natcoord: --out {out}: {what}trajectory not written: "
                  f"{err.strerror or err}", file=sys.stderr)
            return NOT_WRITTEN
        print(f"  {what}trajectory written to {out}")
    if plot and sol.t.size:
        from .viz.plotting import plot_solution
        try:
            plot_solution(sol, plot, proj_tol=args.proj_tol)
        except OSError as err:
            print(f"natcoord: --plot {plot}: {what}figure not written: {err.strerror or err}",
                  file=sys.stderr)
            return NOT_WRITTEN
        print(f"  {what}figure written to {plot}")
    return status


def cmd_info(args):
    structure = args.structure and writable(args.structure, PLOT_SUFFIXES, "--structure")
    model = model_from_arguments(args)
    print(describe(model))
    if structure:
        from .viz.structure import plot_structure
        try:
            plot_structure(model, structure)
        except OSError as err:      # locked past the wait by another writer, disk full, ...
            print(f"natcoord: --structure {structure}: diagram not written: "
                  f"{err.strerror or err}", file=sys.stderr)
            return NOT_WRITTEN
        print(f"structure diagram written to {args.structure}")
    return 0


#: where a source checkout keeps the experiments (not part of the installed package)
CHECKOUT_BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _experiment(name):
    """An experiment of ``natcoord_bench``: importable as installed, or from the
    ``benchmarks/`` of the source checkout this natcoord runs from (an editable
    install, as ``make`` creates); else ``ImportError`` (the command says so)."""
    if (CHECKOUT_BENCHMARKS / "natcoord_bench").is_dir() and \
            str(CHECKOUT_BENCHMARKS) not in sys.path:
        sys.path.append(str(CHECKOUT_BENCHMARKS))
    return importlib.import_module(f"natcoord_bench.{name}")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="natcoord", description="Rigid multibody dynamics in natural coordinates.")
    sub = parser.add_subparsers(dest="command", required=True)

    sim = sub.add_parser("simulate", help="simulate a benchmark mechanism",
                         description="Simulate a benchmark mechanism and report accuracy.")
    add_model_arguments(sim)
    sim.add_argument("--t-end", type=positive_float,
                     help="end time [s] (default: the scenario's)")
    sim.add_argument("--rtol", type=positive_float, default=1e-6, help="integration tolerance")
    sim.add_argument("--atol", type=positive_float, help="absolute tolerance (default: rtol)")
    sim.add_argument("--proj-tol", type=positive_float, default=1e-10,
                     help="projection tolerance")
    sim.add_argument("--solver", choices=available_solvers(), help="linear solver backend")
    sim.add_argument("--projection", choices=PROJECTIONS, default=PROJECTIONS[0],
                     help="stabilization of the constraints")
    sim.add_argument("--method", choices=METHODS, default=METHODS[0],
                     help="integrator: explicit DOPRI5, or implicit Radau IIA for stiff models")
    sim.add_argument("--outputs", type=non_negative_int, default=1000,
                     help="number of equidistant output intervals (0: every step)")
    sim.add_argument("--out", metavar="F.npz",
                     help="write the results to this file (Solution.load reads it back); "
                          "a failed or interrupted run writes what it has, marked partial")
    sim.add_argument("--plot", metavar="F.png|F.pdf|F.svg",
                     help="write a figure (point, residuals, energy) to this file")
    sim.add_argument("--no-inputs", action="store_true",
                     help="run without the model file's joint inputs (its 'inputs': torque "
                          "and PD laws), passive")
    sim.add_argument("--quiet", action="store_true", help="no progress output")
    sim.set_defaults(func=cmd_simulate)

    info = sub.add_parser("info", help="describe a model: constraints, rank, DOF",
                          description="Bodies, coordinates, constraints, Jacobian rank, "
                                      "degrees of freedom and dropped constraints.")
    add_model_arguments(info)
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

    from .study import command as study
    study.configure(sub.add_parser(
        "sweep", help="parameter and Monte Carlo studies on Dask (CSV, resumable)",
        description=study.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    sub.choices["sweep"].set_defaults(func=study.run)

    plain_help(parser)
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.error(f"bench {args.experiment} is unavailable in this installation")
    try:
        return args.func(args) or OK
    except (BadInput, ValueError) as err:
        print(f"natcoord: {err}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("natcoord: interrupted", file=sys.stderr)
        return INTERRUPTED


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
