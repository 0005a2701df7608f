"""Execute every notebooks/*.ipynb headless; a cell error fails the test.

Notebooks are committed without outputs.  Each runs in a fresh ``python3``
kernel of *this* interpreter (the venv's ipykernel), with notebooks/ as the
working directory, MPLBACKEND=Agg and a 120 s limit per cell.
"""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(ROOT.glob("notebooks/*.ipynb"))
CELL_TIMEOUT = 120  # seconds, per cell
#: what a notebook needs beyond the test extra — modules, and installed distributions
#: (the ``peers`` and ``models`` extras); it is skipped without them
REQUIRES = {"robots.ipynb": (("mujoco", "pinocchio", "dm_control"), ("example-robot-data",))}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _pin_python3_kernel(tmp_path, monkeypatch):
    """Make kernel name ``python3`` mean this interpreter's ipykernel.

    JUPYTER_PATH is searched before the user's and the system's Jupyter
    directories, so a stray ``python3`` kernelspec elsewhere (pointing at
    another Python) cannot hijack the run.
    """
    spec_dir = tmp_path / "jupyter" / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (natcoord tests)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")


def run_notebook(path, tmp_path, monkeypatch, timeout=CELL_TIMEOUT):
    """Execute the notebook at ``path``; raise CellExecutionError on a cell error."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    _pin_python3_kernel(tmp_path, monkeypatch)

    nb = nbformat.read(str(path), as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout,
        allow_errors=False,
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    client.execute()
    return nb


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    from importlib import metadata
    from nbclient.exceptions import CellExecutionError

    modules, distributions = REQUIRES.get(path.name, ((), ()))
    for module in modules:
        pytest.importorskip(module, reason=f"{path.name} needs {module} "
                                           f"(pip install natcoord[peers,models])")
    for name in distributions:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{path.name} needs {name} (pip install natcoord[models])")
    error = None
    try:
        run_notebook(path, tmp_path, monkeypatch)
    except CellExecutionError as exc:
        # The message holds the failing cell's source and its traceback.
        error = _ANSI.sub("", str(exc))
    if error is not None:
        pytest.fail(f"{Path(path).name}: {error}", pytrace=False)
