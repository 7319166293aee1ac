"""Type stub of the compiled ``interleave_columns`` (twin: ``lstm_data/kernels/_py/interleave.py``)."""
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

TILE_BYTES: int

def interleave_columns(columns: Sequence[ArrayLike], out: np.ndarray) -> np.ndarray:
    """Write column ``j`` of ``columns`` (either byte order) into ``out[:, j]``, for every ``j``, in one
    GIL-free pass."""
