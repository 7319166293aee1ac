"""Write a batch store's arrays by ranges of batches, on Dask workers (``precompute(client=...)``).

Every output array holds the batches one after another, and every batch's shape
is planned before anything is built (:func:`~lstm_data.store.write.precompute`),
so batch ``i`` of output ``n`` goes to the known elements
``offsets[n][i] .. offsets[n][i + 1]``. A task builds a run of consecutive
batches and writes the chunks that lie wholly inside its elements, each chunk
whole, exactly as the one-process writer does; the (at most two) chunks it
shares with its neighbours are returned as pieces, and the caller writes each
shared chunk once, from its pieces. No chunk is written twice or partly, so the
store is bitwise the one made in one process, whatever the number of tasks. A
worker that dies while it runs a task of ours fails the precompute
(:class:`WorkerLostError`, no store left), rather than trusting Dask's rerun;
a task whose store was removed (the precompute failed) stops before writing more.

Tasks receive the :class:`~lstm_data.batching.epochs.batches.Batches` object: an
on-disk dataset travels as its path, an in-RAM one as shared memory
(workers on the same machine; on a remote cluster, convert to zarr on storage
the workers share first).
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Mapping

import numpy as np

from lstm_data._util.dask import as_completed
from lstm_data.batching.epochs.batches import Batches
from lstm_data.io.ours.chunk_ranges import Piece, RangeWriter, write_shared_chunks
from lstm_data.store.format import flat_outputs

_log = logging.getLogger("lstm_data")
__all__ = ["write_ranges", "build_range", "task_ranges", "WorkerLostError"]


def task_ranges(n_batches: int, n_tasks: int) -> list[tuple[int, int]]:
    """``n_tasks`` (at most ``n_batches``) runs of consecutive batches, as equal as possible."""
    n_tasks = max(1, min(n_tasks, n_batches))
    cuts = np.linspace(0, n_batches, n_tasks + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def build_range(batches: Batches, store: str, names: list[str], offsets: Mapping[str, np.ndarray],
                chunks: Mapping[str, int], lo: int, hi: int,
                keys: Mapping[str, str] | None = None) -> dict[str, list[Piece]]:
    """Build batches ``lo .. hi - 1`` of epoch 0, write the chunks wholly theirs, return the others.

    Returns
    -------
    dict
        Output -> pieces ``(first element, values)`` of the chunks this run shares
        with the runs before and after it.
    """
    import zarr

    root = zarr.open_group(store, mode="r+", zarr_format=3)
    keys = keys or {}
    writers = {n: RangeWriter(root[f"data/{keys.get(n, n)}"], int(offsets[n][lo]), int(offsets[n][hi]), chunks[n])
               for n in names}
    for i in range(lo, hi):
        if not os.path.isdir(store):  # the precompute failed and removed it: write nothing more
            raise RuntimeError(f"the store {store} was removed (the precompute failed): task stopped")
        flat = flat_outputs(batches.spec, batches.batch(i, epoch=0))
        for n in names:
            want = int(offsets[n][i + 1] - offsets[n][i])
            if flat[n].size != want:
                raise RuntimeError(f"batch {i} output {n!r} has {flat[n].size} values, planned {want}")
            writers[n].append(flat[n].reshape(-1))
    return {n: w.close(int(offsets[n][hi])) for n, w in writers.items()}


class WorkerLostError(ChildProcessError):
    """A Dask worker died while it built batches: the precompute fails rather than trust a rerun."""


def _workers(client: Any) -> set[tuple[str, str]]:
    """``(address, id)`` of the client's workers (a restarted worker gets a new id)."""
    info = client.scheduler_info().get("workers", {})
    return {(addr, str(w.get("id", ""))) for addr, w in info.items()}


def _check_no_worker_lost(client: Any, futures: list[Any], before: set[tuple[str, str]]) -> None:
    """Raise :class:`WorkerLostError` if a task of ours ran on a worker that died, or a worker
    present at the start is gone."""
    keys = [f.key for f in futures]

    def suspicious(dask_scheduler: Any = None) -> dict[str, int]:  # runs on the scheduler
        tasks = dask_scheduler.tasks
        return {str(k): int(tasks[k].suspicious) for k in keys if k in tasks and tasks[k].suspicious}

    hit = client.run_on_scheduler(suspicious)
    gone = sorted(addr for addr, wid in before - _workers(client))
    if hit or gone:
        raise WorkerLostError(f"a Dask worker died during precompute ({len(hit)} task(s) were running "
                              f"on it{'; workers gone: ' + ', '.join(gone) if gone else ''}); the "
                              "store was not written: run it again")


def write_ranges(client: Any, batches: Batches, store: str, names: list[str],
                 offsets: Mapping[str, np.ndarray], chunks: Mapping[str, int],
                 on_done: Callable[[int], object] | None = None,
                 keys: Mapping[str, str] | None = None) -> None:
    """Build and write every batch of epoch 0 on the workers of the Dask ``client``.

    Parameters
    ----------
    client
        A ``distributed.Client``.
    batches, store, names, offsets, chunks
        The batch sequence, the (temporary) store, its outputs, their planned
        element offsets per batch and chunk lengths.
    keys
        Output -> its node key under ``data/`` (default: the output's name).
    on_done
        Called with the number of batches of each finished task (progress).

    Raises
    ------
    WorkerLostError
        A worker died while it ran a task of ours (Dask would run the task again, but
        the store is not trusted to a rerun); the caller removes the store.
    Exception
        The first task's error (e.g. a damaged chunk of the dataset), as raised on
        the worker; the store is then incomplete and the caller removes it.
    """
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    ranges = task_ranges(len(batches), 4 * n_workers)
    # each task carries the Batches (a path, or shared memory, plus the spec: small), rather than one
    # scattered copy that a dying worker could take with it
    futures = {client.submit(build_range, batches, store, names, offsets, chunks, a, b, keys,
                             key=f"lstm-data-precompute-{a}-{b}-{id(batches)}", pure=False): (a, b)
               for a, b in ranges}
    _log.info("precompute: %d batches in %d tasks on %d Dask workers", len(batches), len(ranges), n_workers)
    pieces: dict[str, list[Piece]] = {n: [] for n in names}
    workers = _workers(client)
    try:
        for future in as_completed(futures):
            for n, got in future.result().items():
                pieces[n] += got
            if on_done is not None:
                a, b = futures[future]
                on_done(b - a)
        _check_no_worker_lost(client, list(futures), workers)
    except BaseException:
        client.cancel(list(futures))
        raise
    import zarr

    root = zarr.open_group(store, mode="r+", zarr_format=3)
    for n in names:
        write_shared_chunks(root[f"data/{(keys or {}).get(n, n)}"], chunks[n], pieces[n])
