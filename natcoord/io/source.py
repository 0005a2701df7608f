"""A model named on a command line: a benchmark mechanism with its factory's
keyword arguments, or a model file (natcoord JSON/YAML, URDF, MJCF).

Shared by ``natcoord simulate|info`` and the benchmark experiments
(``benchmarks/natcoord_bench``); errors are one-line ``ValueError`` naming
the argument (the command line's exit status 2).
"""
from __future__ import annotations

from pathlib import Path

from .. import models
from ..util.checks import parse_value
from .mjcf import load_mjcf
from .urdf import load_urdf
from .modelfile import load_mechanism


def add_model_arguments(parser):
    """``MODEL``, ``--scenario`` and ``--param KEY=VALUE`` (``natcoord simulate|info``,
    ``natcoord bench tolerance``)."""
    parser.add_argument("model", metavar="MODEL",
                        help=f"benchmark mechanism ({', '.join(sorted(models.REGISTRY))}) or "
                             f"a model file (.json/.yaml, .urdf, MJCF .xml)")
    parser.add_argument("--scenario", help="scenario of the model (e.g. hexapod: passive|driven)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="keyword argument of the model factory, e.g. --param n=100")
    parser.add_argument("--floating-base", action="store_true",
                        help="URDF: the root link is a free body (as Pinocchio's JointModelFreeFlyer)")
    parser.add_argument("--inertia-repair", action="store_true",
                        help="URDF: project non-physical link inertias to the nearest physical "
                             "ones (each change is reported)")


def _model_file(args):
    """A MODEL that is not a registry name: a model file (natcoord.io.modelfile)."""
    path = Path(args.model)
    if not path.is_file():
        raise ValueError(f"MODEL {args.model!r} is neither a benchmark "
                         f"({', '.join(sorted(models.REGISTRY))}) nor an existing file")
    if args.param or args.scenario is not None:
        raise ValueError(f"--param and --scenario apply to benchmark models, not to the "
                         f"file {args.model}")
    urdf_options = {"floating_base": getattr(args, "floating_base", False),
                    "inertia_repair": getattr(args, "inertia_repair", False)}
    if path.suffix.lower() == ".urdf":
        def load(path):
            return load_urdf(path, **urdf_options)
    elif any(urdf_options.values()):
        raise ValueError(f"--floating-base and --inertia-repair apply to URDF files, not to "
                         f"{args.model}")
    else:
        load = load_mjcf if path.suffix.lower() == ".xml" else load_mechanism
    try:
        return load(path).build()
    except (ValueError, TypeError, ImportError) as err:   # ImportError: MJCF without mujoco
        message = str(err)              # the importers' messages name the file already
        raise ValueError(message if message.startswith(str(path))
                         else f"{path}: {message}") from None


def _parameter(parameter, text):
    """``--param`` value: of the type of the factory's default when that is a number."""
    value = parse_value(text)
    default = parameter.default
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        return value
    if isinstance(value, int) or (isinstance(value, float) and isinstance(default, float)):
        return type(default)(value)
    raise ValueError(f"--param {parameter.name}={text}: expected "
                   f"{'an integer' if isinstance(default, int) else 'a number'} "
                   f"(default {default!r})")


def model_from_arguments(args):
    """The model named on the command line, with its factory's keyword arguments.

    Raises ``ValueError`` for parameters the factory does not take and for
    any ``ValueError``/``TypeError`` the factory or the builder raises.
    """
    if args.model not in models.REGISTRY:
        return _model_file(args)
    if getattr(args, "floating_base", False) or getattr(args, "inertia_repair", False):
        raise ValueError(f"--floating-base and --inertia-repair apply to URDF files, not to "
                         f"the benchmark {args.model!r}")
    text = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--param needs KEY=VALUE, got {item!r}")
        if key in text:         # the last one winning silently would run another model
            raise ValueError(f"--param {key} is given twice ({key}={text[key]} and "
                             f"{item}); give each parameter once")
        text[key] = value
    if args.scenario is not None:
        if "scenario" in text:
            raise ValueError(f"--scenario {args.scenario} and --param scenario="
                             f"{text['scenario']} both give the scenario; give it once")
        text["scenario"] = args.scenario
    try:
        models.check_parameters(args.model, text)
    except ValueError as err:
        raise ValueError(f"{err} (--param KEY=VALUE)") from None
    accepted = models.parameters(args.model)
    kwargs = {key: _parameter(accepted[key], value) for key, value in text.items()}
    try:
        return models.build(args.model, **kwargs)
    except (ValueError, TypeError) as err:
        raise ValueError(f"model {args.model!r} with {kwargs or 'default parameters'}: "
                       f"{err}") from None
