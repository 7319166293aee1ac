"""``--scheduler ADDRESS``: a Dask ``distributed.Client`` for the CLI and scripts.

``ADDRESS`` is a scheduler address (``tcp://host:8786``, anything
``distributed.Client`` accepts) or ``local:N`` for a ``LocalCluster`` of ``N``
single-threaded worker processes on this machine (the kernels release the GIL,
but parsing and writing hold it in places: processes use every core).
"""
from __future__ import annotations

import contextlib
import logging
import re
from typing import Any, Iterator

from lstm_data._util.optional import require

__all__ = ["connect", "parse_scheduler"]

_log = logging.getLogger("lstm_data")
_LOCAL = re.compile(r"^local:(\d+)$")


def parse_scheduler(address: str) -> tuple[str, int | None]:
    """``("local", N)`` for ``local:N``, else ``("address", None)``.

    Raises
    ------
    ValueError
        ``local:`` without a positive worker count, or an empty address.
    """
    text = str(address).strip()
    if not text:
        raise ValueError("--scheduler needs an address (tcp://host:port) or local:N")
    if text.startswith("local"):
        m = _LOCAL.match(text)
        if not m or int(m.group(1)) < 1:
            raise ValueError(f"--scheduler {text!r}: write local:N with N >= 1 worker processes")
        return "local", int(m.group(1))
    return "address", None


def _distributed() -> Any:
    return require("--scheduler and client= (Dask's distributed scheduler)", "dask", "distributed")


@contextlib.contextmanager
def connect(address: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``address`` (see the module docstring), closed on exit.

    A ``local:N`` cluster is started here and shut down on exit; a remote scheduler
    is only disconnected from.

    Raises
    ------
    ImportError
        ``distributed`` is not installed (names the extra).
    OSError
        The scheduler cannot be reached (``distributed``'s error, with the address).
    """
    kind, n = parse_scheduler(address)
    distributed = _distributed()
    if kind == "local":
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=logging.ERROR)
        try:
            with distributed.Client(cluster) as client:
                _log.info("Dask: local cluster of %d worker processes", n)
                yield client
        finally:
            cluster.close()
        return
    try:
        client = distributed.Client(address, timeout="20s")
    except OSError as exc:
        raise OSError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        _log.info("Dask: connected to %s (%d workers)", address,
                  len(client.scheduler_info().get("workers", {})))
        yield client
    finally:
        client.close()
