"""Studies: many runs on Dask, and the records (CSV files) every experiment writes.

The top library layer: it imports the layers below (models, integrate, io)
and nothing imports it but the application (``natcoord``, ``cli``).
Modules, lowest first:

* :mod:`~natcoord.study.records` — CSV files under a machine header, the one
  rule for writing a cell and the one parser reading it, tables, progress
  bars (used by the benchmarks, the sweeps and ``paper/figures.py``);
* :mod:`~natcoord.study.grid` — grid points (dicts of lists, lists, Monte
  Carlo samplers), their split into factory and ``simulate`` keywords, the
  model of a point;
* :mod:`~natcoord.study.keys` — the key of a row: point, model content and
  run settings, hashed;
* :mod:`~natcoord.study.tasks` — what a Dask task does: run points, measure
  them, reference runs;
* :mod:`~natcoord.study.cluster` — the Dask client: a local cluster or a
  scheduler;
* :mod:`~natcoord.study.log` — a study's CSV: one row per key, read back to
  resume, appended under a lock shared with other writers;
* :mod:`~natcoord.study.sweep` — ``nc.sweep``, the driver;
* :mod:`~natcoord.study.command` — ``natcoord sweep`` on the command line.
"""
