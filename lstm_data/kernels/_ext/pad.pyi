"""Type stub of the compiled ``pad_ragged`` (the readable twin: ``lstm_data/kernels/_py/pad.py``)."""
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

def pad_ragged(values: ArrayLike, offsets: ArrayLike, rows: ArrayLike | None = None, *,
               max_len: int | None = None, pad_value: float = ..., columns: ArrayLike | None = None,
               sort_by: int | None = None, descending: bool = True, padding: str = "post",
               truncating: str = "post", dtype: DTypeLike = ...,
               out: np.ndarray[Any, Any] | None = None) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Gather ragged rows into one padded ``(rows, width[, V])`` batch; return ``(batch, lengths)``."""
