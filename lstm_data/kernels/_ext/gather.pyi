"""Type stub of the compiled ``BatchGather`` (twin: ``lstm_data/kernels/_py/gather.py``)."""
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

class BatchGather:
    """Every padded field and every ``table[rows]`` of one batch, in one GIL-free call."""

    def __init__(self, ragged: Sequence[Mapping[str, Any]] = (), tables: Sequence[ArrayLike] = ()) -> None: ...
    def __call__(self, rows: ArrayLike, arena: Any = None) -> tuple[list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]],
                                                 list[np.ndarray[Any, Any]]]: ...
