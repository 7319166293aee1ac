"""CSV text as blocks of rows, parsed as it is read (bounded memory): :func:`csv_blocks`."""
from __future__ import annotations

import os
from typing import Any

from lstm_data.io.row_blocks import BLOCK_BYTES, RowBlocks, dataset_blocks

__all__ = ["csv_blocks"]


def csv_blocks(path: str, *, schema: Any = None, block_bytes: int = BLOCK_BYTES, **options: Any) -> RowBlocks:
    """The rows of the CSV file ``path`` in blocks of about ``block_bytes`` parsed bytes."""
    from lstm_data.io.csv.reader import read_csv

    dataset = read_csv(path, schema=schema, **options)
    blocks = dataset_blocks(dataset, block_bytes=block_bytes)
    blocks.total = os.path.getsize(path)
    return blocks
