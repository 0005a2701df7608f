"""Packaging promises: the core imports without matplotlib, plotting says how to get it,
``python -m natcoord`` is the CLI, and the metadata declares the license."""
import configparser
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_BLOCK_MPL = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("matplotlib blocked by the test")
sys.meta_path.insert(0, _Block())
"""


def _run(code, *args):
    return subprocess.run([sys.executable, "-c", _BLOCK_MPL + code, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_core_imports_without_matplotlib():
    out = _run("import natcoord, natcoord.cli, natcoord.viz.plotting, natcoord.viz.animate\n"
               "assert 'matplotlib' not in sys.modules\nprint('ok')")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_plotting_without_matplotlib_names_the_extra():
    code = ("from natcoord.viz.plotting import plot_solution\n"
            "try:\n    plot_solution(None)\n"
            "except ImportError as err:\n    print(err)\n")
    out = _run(code)
    assert out.returncode == 0, out.stderr
    assert "pip install natcoord[plot]" in out.stdout


def test_mjcf_without_mujoco_names_the_extra(tmp_path):
    """MJCF is read by MuJoCo's compiler: without the package, one ImportError
    naming the extra (and the command line says it in one line, exit status 2)."""
    path = tmp_path / "pendulum.xml"
    path.write_text('<mujoco><worldbody><body><joint/><geom size="0.1"/></body>'
                    '</worldbody></mujoco>')
    block = _BLOCK_MPL.replace('name == "matplotlib" or name.startswith("matplotlib.")',
                               'name == "mujoco" or name.startswith("mujoco.")')
    code = ("import natcoord as nc\ntry:\n    nc.load_mjcf(sys.argv[1])\n"
            "except ImportError as err:\n    print(err)\n"
            "from natcoord.cli import main\nprint('exit', main(['info', sys.argv[1]]))\n")
    out = subprocess.run([sys.executable, "-c", block + code, str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "reading MJCF files needs mujoco" in out.stdout
    assert "pip install natcoord[mjcf]" in out.stdout
    assert "exit 2" in out.stdout and "pip install natcoord[mjcf]" in out.stderr


def test_python_dash_m_natcoord_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "natcoord", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "usage: natcoord" in out.stdout
    for command in ("simulate", "info", "bench"):
        assert command in out.stdout


def test_metadata_declares_license_and_python_versions():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    meta = cfg["metadata"]
    assert meta["license"] == "BSD-3-Clause"
    assert "LICENSE" in meta["license_files"]
    assert "BSD 3-Clause License" in (ROOT / "LICENSE").read_text()
    classifiers = meta["classifiers"]
    assert "Programming Language :: Python :: 3.10" in classifiers
    install = cfg["options"]["install_requires"]
    assert "matplotlib" not in install                      # an extra, not a requirement
    assert "matplotlib" in cfg["options.extras_require"]["plot"]
    assert "matplotlib" in cfg["options.extras_require"]["test"]
    assert (ROOT / "CITATION.cff").exists() and (ROOT / "CHANGELOG.md").exists()


@pytest.mark.parametrize("command", [[], ["simulate"], ["info"], ["bench"], ["bench", "scaling"],
                                     ["bench", "tolerance"], ["bench", "chain"]])
def test_cli_help_is_plain_text_with_defaults(command, capsys):
    from natcoord.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(command + ["--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for markup in ("``", ":func:", ":class:", ":mod:", ":meth:", "§", "shared/"):
        assert markup not in text, f"{' '.join(command)} --help shows {markup!r}"
    if command == ["simulate"]:
        assert "(default: 1e-06)" in text and "(default: 1e-10)" in text
        assert "(default: position+velocity)" in text and "(default: [])" not in text


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")))
def test_every_benchmark_script_answers_help(script):
    """``--help`` prints the usage and exits 0, running nothing (tolerance.py took
    ``--help`` for a model name and died with a KeyError)."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage:")


def test_plain_text_strips_rest_roles():
    from natcoord.cli import plain_text
    assert plain_text("see :class:`~natcoord.dynamics.workspace.Workspace` and :mod:`natcoord.models`, "
                      "``rtol = 1e-12``") == "see Workspace and natcoord.models, rtol = 1e-12"
