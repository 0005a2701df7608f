"""The Dask cluster a study runs on: a local one started for it, or one it connects to.

:func:`local_client` starts a ``LocalCluster`` on the loopback interface
(one single-threaded worker process per core); :func:`connected` gives the
client of a study (a ``Client`` passed in, a scheduler address, or a local
cluster closed again afterwards); :func:`check_workers` warns when the
workers import another natcoord than this process.
"""
from __future__ import annotations

import logging
import os
import sys
import warnings
from contextlib import contextmanager

#: the natcoord package directory this process imports (``natcoord/study/..``)
NATCOORD_DIRECTORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def local_client(workers=None, **kwargs):
    """A ``Client`` of a new ``LocalCluster``: one single-threaded worker process per core.

    Loopback only (scheduler, workers and dashboard listen on 127.0.0.1, on
    free ports); BLAS and OpenMP single-threaded in the workers. Closing the
    client closes the cluster. ``kwargs`` go to ``LocalCluster`` (e.g.
    ``processes=False``: worker threads in this process, talking in-process).
    """
    from dask.distributed import Client, LocalCluster
    options = dict(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                   processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                   worker_dashboard_address=None, silence_logs=logging.ERROR,
                   env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                        "MKL_NUM_THREADS": "1"})
    options.update(kwargs)
    if not options["processes"]:        # worker threads in this process: its environment,
        options.pop("env")              # and in-process communication (no network at all)
        if "host" not in kwargs:
            options.pop("host")
    cluster = LocalCluster(**options)
    client = Client(cluster, set_as_default=False)
    client._natcoord_owns_cluster = True
    return client


def close_client(client):
    """Close ``client`` and, when ``local_client`` started it, its cluster."""
    cluster = client.cluster if getattr(client, "_natcoord_owns_cluster", False) else None
    client.close()
    if cluster is not None:
        cluster.close()


def natcoord_location():
    """The directory of the natcoord package this process imports (run on the workers)."""
    return NATCOORD_DIRECTORY


@contextmanager
def connected(client, workers, verbose):
    """The study's client: ``client`` itself, a ``Client`` of the scheduler address
    ``client`` (closed afterwards), or (``None``) a new local cluster of ``workers``
    processes (closed afterwards)."""
    if client is None:
        client = local_client(workers)
        if verbose:
            print(f"natcoord: LocalCluster with {len(client.scheduler_info()['workers'])} "
                  f"workers; dashboard: {client.dashboard_link}", file=sys.stderr, flush=True)
        try:
            yield client
        finally:
            close_client(client)
    elif isinstance(client, str):
        from dask.distributed import Client
        client = Client(client, set_as_default=False)
        if verbose:
            print(f"natcoord: connected to {client.scheduler.address}; dashboard: "
                  f"{client.dashboard_link}", file=sys.stderr, flush=True)
        try:
            yield client
        finally:
            client.close()
    else:
        yield client


def check_workers(client):
    """Warn when the Dask workers import another natcoord than this process does;
    returns the workers' natcoord directories."""
    here = natcoord_location()
    there = set(client.run(natcoord_location).values())
    if there and there != {here}:
        warnings.warn(f"Dask workers import natcoord from {sorted(there)}, this process from "
                      f"{here}: results may differ (set PYTHONPATH for the workers)",
                      stacklevel=3)
    return there
