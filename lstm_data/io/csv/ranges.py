"""Row-aligned byte ranges of a large plain CSV file: partitions for a distributed convert."""
from __future__ import annotations

from typing import Any

from lstm_data.io.row_blocks import RowBlocks

__all__ = ["csv_partitions", "csv_range_blocks"]


def csv_partitions(path: str, split_bytes: int) -> list[tuple[int, int]] | None:
    """Byte ranges of ``path`` to parse apart, or ``None``: the file is one partition."""
    return None


def csv_range_blocks(path: str, start: int, end: int, *, schema: Any = None, **options: Any) -> RowBlocks:
    """Rows whose lines lie in bytes ``start .. end`` of ``path``, in blocks."""
    raise NotImplementedError
