"""Type stub of the compiled ``parse_float_lists`` (twin: ``lstm_data/kernels/_py/parse.py``)."""
from typing import Any, Sequence

import numpy as np

def parse_float_lists(cells: Sequence[Any] | np.ndarray[Any, Any], dtype: Any = ...,
                      sep: str = ",") -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Comma-string cells to ragged floats: ``(values, offsets (len(cells) + 1,))``."""
