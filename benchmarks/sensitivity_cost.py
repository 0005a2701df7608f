"""Sensitivity run time over forward simulation time, n_θ = 1, 2, 4 -> data/sensitivity_cost.csv."""
from natcoord_bench.sensitivity_cost import main

if __name__ == "__main__":
    raise SystemExit(main())
