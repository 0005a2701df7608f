"""Shared test set-up: the benchmark experiments (``benchmarks/natcoord_bench``) are
not part of the installed package, so tests that exercise them import them from the
repository; real robot models come from the ``models`` extra."""
import sys
from importlib import metadata
from pathlib import Path

import pytest

BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)


@pytest.fixture
def robots_folder():
    """The URDFs of example-robot-data (the ``models`` extra), or a skip."""
    try:
        share = metadata.distribution("example-robot-data").locate_file(
            "cmeel.prefix/share/example-robot-data/robots")
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (pip install natcoord[models])")
    return Path(share)
