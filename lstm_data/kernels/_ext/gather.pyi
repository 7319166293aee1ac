"""Type stub of the compiled ``BatchGather`` (twin: ``lstm_data/kernels/_py/gather.py``)."""
from typing import Any, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import Buffer

from lstm_data.kernels._job import RaggedJob

class BatchGather:
    """Every padded field and every ``table[rows]`` of one batch, in one GIL-free call.

    Each ragged job is a mapping of ``pad_ragged``'s arguments by name (``max_len``,
    ``pad_value``, ``columns``, ``sort_by``, ``descending``, ``padding``,
    ``truncating``, ``dtype``) plus ``fixed`` and ``multiple_of``, and its rows:
    either ``values`` and ``offsets``, or ``parts=[(values, offsets), ...]``, pairs
    whose rows are numbered one after another (gathered across in one pass, never
    concatenated). Values are float32, float64, any native integer dtype or boolean,
    converted to the output dtype as C converts them. The output form: ``center``,
    ``scale``, ``clip_min``, ``clip_max`` (one per output column) transform each real
    element in the output dtype, ``pad_values`` fill each column's padded slots,
    ``pad_mode`` is ``"constant"`` or ``"wrap"``, ``layout`` is ``"padded"``,
    ``"channels_first"`` or ``"packed"`` (see ``_ragged.ragged_job``), all in the
    same pass. A job may also be a ``RaggedJob`` that ``_ragged.ragged_job`` made (typed
    arguments, checked when it was made). ``more`` (with ``at``) adds sources of other counts per row, each padded
    by its own counts into its output columns of the same output (see ``_sources``).
    """

    ragged: list[RaggedJob]
    tables: list[np.ndarray]

    def __init__(self, ragged: Sequence[Mapping[str, Any] | RaggedJob] = (),
                 tables: Sequence[ArrayLike] = ()) -> None:
        """Check every ragged job and table once."""

    def __call__(self, rows: ArrayLike, arena: Buffer | np.ndarray | None = None,
                 ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[np.ndarray]]:
        """``[(batch, lengths) per ragged job], [table[rows] per table]`` for ``rows``.

        With ``arena`` (a writable, C-contiguous buffer starting at a multiple of 64
        bytes in memory) the outputs are placed in it, in the order ``lengths`` then
        ``batch`` of each job, then each table, each at the next multiple of 64 bytes
        from its start while they fit; the others are allocated as usual.
        """
