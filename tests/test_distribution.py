"""The sdist and the wheel build and carry what an installation needs.

Builds both with ``python -m build --no-isolation`` (no downloads; skipped when
the ``build`` package is not installed, it is in the ``test`` extra) and checks
their contents: every module and every package-data file of ``natcoord/``,
the compiled core in the wheel and its C sources in the sdist, the LICENSE,
and the license metadata. Installing them in clean virtual
environments and running a simulation is ``.ci/dist-check`` (``make dist``),
which is too slow for the test suite.
"""
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow          # builds both artefacts (~10 s); still part of make test


def _package_files():
    """Files of natcoord/ an installation needs (sources and package data), relative to ROOT."""
    tracked = subprocess.run(["git", "ls-files", "natcoord"], cwd=ROOT, capture_output=True,
                             text=True)
    if tracked.returncode == 0 and tracked.stdout.strip():
        names = tracked.stdout.split()
    else:                                                   # not a git checkout
        names = [str(p.relative_to(ROOT)) for p in (ROOT / "natcoord").rglob("*") if p.is_file()]
    return sorted(n for n in names if "__pycache__" not in n and not n.endswith(".pyc")
                  and (ROOT / n).exists())


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory):
    pytest.importorskip("build")
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")            # pyproject.toml build-system requires it
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                           str(ROOT)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return wheels[0], sdists[0]


def test_wheel_contents(artefacts):
    wheel, _ = artefacts
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(meta).decode()
    # the core's C sources are compiled into the wheel, not shipped in it
    missing = [n for n in _package_files() if n not in names
               and not n.startswith("natcoord/core/src/")]
    assert not missing, f"wheel lacks package files (package_data?): {missing}"
    assert any(n.startswith("natcoord/core/engine") and n.endswith((".so", ".pyd"))
               for n in names), "wheel lacks the compiled core natcoord/core/engine"
    assert any(n.endswith("__main__.py") for n in names)
    assert any(n.endswith(("licenses/LICENSE", ".dist-info/LICENSE")) for n in names), \
        sorted(n for n in names if "dist-info" in n)
    assert "BSD-3-Clause" in metadata
    assert "Programming Language :: Python :: 3.10" in metadata
    assert "Requires-Dist: matplotlib" in metadata and "extra == \"plot\"" in metadata
    assert not any(line.startswith("Requires-Dist: matplotlib") and "extra" not in line
                   for line in metadata.splitlines())


def test_sdist_contents(artefacts):
    _, sdist = artefacts
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for needed in ["LICENSE", "README.md", "setup.cfg", "pyproject.toml", "CHANGELOG.md",
                   "CITATION.cff", "mkdocs.yml", "docs/method.md", *_package_files()]:
        assert needed in names, f"sdist lacks {needed}"
