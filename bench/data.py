"""Seeded NOvA-like benchmark inputs, generated once into a cache directory and reused.

The cache lives in ``$LSTM_DATA_BENCH_CACHE`` or ``~/.cache/lstm_data/bench``. File
names carry the row count, seed and a format version, and every file is written
to a temporary name and renamed, so an interrupted run never leaves a file that
looks complete.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from functools import cached_property
from pathlib import Path
from typing import Callable

from lstm_data.data.synthetic import make_dataset, write_csv

__all__ = ["BenchData", "cache_dir"]

FORMAT_VERSION = 2  # 2: the CSV holds the realistic token mix
FULL_ROWS = 100_000
QUICK_ROWS = 20_000


def cache_dir() -> Path:
    """The benchmark cache directory (created if needed)."""
    root = os.environ.get("LSTM_DATA_BENCH_CACHE") or Path.home() / ".cache" / "lstm_data" / "bench"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


class BenchData:
    """Lazily generated, cached inputs of one size (``quick`` or full) and seed."""

    def __init__(self, quick: bool = False, seed: int = 0, n_rows: int | None = None,
                 root: str | Path | None = None) -> None:
        self.n_rows = n_rows or (QUICK_ROWS if quick else FULL_ROWS)
        self.seed = seed
        self.root = Path(root) if root is not None else cache_dir()
        self.root.mkdir(parents=True, exist_ok=True)

    @property
    def stem(self) -> str:
        return f"nova_v{FORMAT_VERSION}_{self.n_rows}_{self.seed}"

    def cached(self, suffix: str, build: Callable[[Path], None]) -> Path:
        """Path of ``<stem><suffix>``, calling ``build(tmp_path)`` first if it is missing."""
        target = self.root / f"{self.stem}{suffix}"
        if target.exists():
            return target
        tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
        try:
            build(tmp)
            os.replace(tmp, target)
        finally:
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            elif tmp.exists():
                tmp.unlink()
        return target

    @cached_property
    def dataset(self):
        """The in-RAM NOvA-like dataset (float32): ``csv``'s rows, before its numbers were
        written in the token mix (so their low bits differ)."""
        return make_dataset(self.n_rows, self.seed)

    @property
    def csv(self) -> Path:
        """lstm_ee-style CSV: scalars plus quoted comma-list prong cells.

        Its numbers are the realistic token mix of real dumps (``write_csv(...,
        token_mix=True)``): columns of ``%g``, ``%.6f``, ``%.9g`` and 17-digit ``repr``.
        """
        return self.cached(".csv", lambda tmp: write_csv(tmp, self.n_rows, self.seed,
                                                         token_mix=True))

    @property
    def zarr(self) -> Path:
        """The dataset in our zarr v3 layout (on disk, as ``lstm_data.open`` reads it)."""
        return self.cached(".zarr", lambda tmp: self.dataset.to_zarr(tmp))

    @property
    def csv_xz(self) -> Path:
        """The same CSV compressed with xz (the ``xz`` tool when present, else lzma)."""
        def build(tmp: Path) -> None:
            src = self.csv
            if shutil.which("xz"):
                with open(tmp, "wb") as out:
                    subprocess.run(["xz", "-c", "-6", "-T2", str(src)], stdout=out, check=True)
            else:
                import lzma
                with open(src, "rb") as fin, lzma.open(tmp, "wb", preset=6) as fout:
                    shutil.copyfileobj(fin, fout, 1 << 20)
        return self.cached(".csv.xz", build)
