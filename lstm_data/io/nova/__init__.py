"""NOvA-style HDF5 tables (one group per table, one dataset per column, keyed by slice).

:func:`read_nova` reads them into one in-RAM dataset of slices; :func:`is_nova_file`
tells such a file from the other HDF5 layouts. Modules: ``tables`` (detection, columns, names,
aliases), ``keys`` (slice keys: runs, packed codes, matching), ``columns`` (chunked column reads
into the output), ``reader`` (:func:`read_nova`).
"""
from __future__ import annotations

from lstm_data.io.nova.reader import NovaDataset, PrecisionWarning, read_nova
from lstm_data.io.nova.tables import KEY_COLUMNS, is_nova_file

__all__ = ["read_nova", "is_nova_file", "NovaDataset", "PrecisionWarning", "KEY_COLUMNS"]
