"""Beyond one process: Dask clusters for ``convert`` and ``precompute`` (extra ``dask``).

Modules
-------
cluster
    :func:`connect`: a ``distributed.Client`` for ``--scheduler ADDRESS`` (``tcp://...``)
    or ``local:N`` (a ``LocalCluster`` of ``N`` worker processes).
"""
