"""NOvA HDF5 ntuple tables: the names :func:`lstm_data.open` dispatches to (see :mod:`lstm_data.io.nova`)."""
from __future__ import annotations

from lstm_data.io.nova import (
    KEY_COLUMNS,
    NovaDataset,
    PrecisionWarning,
    is_nova_file,
    read_nova,
)

__all__ = ["is_nova_file", "read_nova", "NovaDataset", "PrecisionWarning", "KEY_COLUMNS"]
