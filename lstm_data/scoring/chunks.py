"""The flushed chunks of a scoring run and its progress record (what a rerun resumes from).

A run writes its chunks (``chunk-NNNNNNNN.npz``: the keys, scores and observers of a
few batches) into a work directory beside its outputs, each under a temporary
name renamed when complete, and a record (``record.json``) of what it scores:
the fingerprint of its settings, model and data. A rerun with the same fingerprint
continues after the last complete chunk; another fingerprint starts afresh.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

__all__ = ["WorkDir", "fingerprint"]

_log = logging.getLogger("lstm_data")


def fingerprint(settings: Mapping[str, Any], sources: tuple[str, ...]) -> str:
    """SHA-256 of ``settings`` (JSON values) and of each source's name, size and mtime."""
    stamps = []
    for src in sources:
        try:
            st = os.stat(src)
            stamps.append([src, st.st_size, st.st_mtime_ns])
        except OSError:
            stamps.append([src, None, None])
    text = json.dumps({"settings": settings, "sources": stamps}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class WorkDir:
    """The chunks and the record of one rank's run.

    Parameters
    ----------
    path
        The work directory (made if missing).
    digest
        :func:`fingerprint` of the run.
    resume
        Keep the chunks of an earlier run of the same fingerprint.
    """

    def __init__(self, path: Path, digest: str, resume: bool) -> None:
        self.path = path
        record = path / "record.json"
        old = None
        if record.exists():
            try:
                old = json.loads(record.read_text()).get("fingerprint")
            except (OSError, ValueError, AttributeError):
                old = None
        if path.exists() and (not resume or old != digest):
            if old is not None and old != digest:
                _log.info("%s: the chunks of a run of other settings, model or data are discarded", path)
            shutil.rmtree(path)
        path.mkdir(parents=True, exist_ok=True)
        if not record.exists():
            tmp = path / "record.json.tmp"
            tmp.write_text(json.dumps({"fingerprint": digest}))
            os.replace(tmp, record)
        self.done = 0
        while (self.chunk_path(self.done)).exists():
            self.done += 1
        if self.done:
            _log.info("%s: resuming after %d flushed chunks", path, self.done)

    def chunk_path(self, index: int) -> Path:
        """The file of chunk ``index``."""
        return self.path / f"chunk-{index:08d}.npz"

    def flush(self, index: int, columns: Mapping[str, np.ndarray]) -> None:
        """Write chunk ``index`` under a temporary name, then rename it into place."""
        tmp = self.path / f"chunk-{index:08d}.tmp.npz"
        with open(tmp, "wb") as fh:
            arrays: dict[str, Any] = {f"c{j}": v for j, v in enumerate(columns.values())}
            arrays["names"] = np.array(list(columns), dtype=str)
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.chunk_path(index))

    def chunks(self, count: int) -> Iterator[dict[str, np.ndarray]]:
        """Chunks ``0 .. count - 1``, in order, one in memory at a time."""
        for index in range(count):
            with np.load(self.chunk_path(index), allow_pickle=False) as data:
                names = [str(n) for n in data["names"]]
                yield {n: data[f"c{j}"] for j, n in enumerate(names)}

    def remove(self) -> None:
        """Remove the work directory (its outputs are in place)."""
        shutil.rmtree(self.path, ignore_errors=True)
