"""The benchmark experiments (``benchmarks/natcoord_bench``) are not part of the
installed package; tests that exercise them import them from the repository."""
import sys
from pathlib import Path

BENCHMARKS = str(Path(__file__).resolve().parent.parent / "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)
