"""A real two-process Dask cluster, shared by the tests of this folder."""
from __future__ import annotations

import logging

import pytest


@pytest.fixture(scope="session")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as c:
        yield c


@pytest.fixture
def client(cluster):
    distributed = pytest.importorskip("distributed")
    with distributed.Client(cluster) as c:
        yield c
