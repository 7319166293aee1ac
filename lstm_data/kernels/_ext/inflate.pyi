"""Type stub of the compiled ``inflate_baskets`` (twin: ``lstm_data/kernels/_py/inflate.py``)."""
from typing import Any

import numpy as np

def inflate_baskets(raw: Any, table: Any, out: np.ndarray, functions: tuple[int, int, int]) -> tuple[int, int, int]:
    """Inflate each basket of ``table`` from ``raw`` into ``out``, in one call without the GIL."""
