"""The packed form, ``Ragged(layout="packed")``: ``(T, V)``, what variable-length attention takes."""
from __future__ import annotations

from typing import MutableMapping

import numpy as np

from lstm_data.batching.spec.forms.base import (
    CU_SEQLENS_SUFFIX,
    LENGTHS_SUFFIX,
    MAX_SEQLEN_SUFFIX,
    Form,
    RaggedField,
)
from lstm_data.errors import SchemaError

__all__ = ["Packed"]


class Packed(Form):
    """``(T, V)``: the kept elements of every row one after another, no padded slot.

    Its rows are given by ``<name>_cu_seqlens`` ``(B + 1,)`` int32 (the prefix sum of
    the lengths, from 0) and ``<name>_max_seqlen`` (0-d int32); ``padding`` and the pad
    values play no part, and lengths are cut at ``max_len``.
    """

    name = "packed"
    axes = "TV"
    kernel_layout = "packed"
    one_count = "layout='packed' (the real elements of each row, one count per row)"

    def check(self, where: str, pad_mode: str, mask: bool) -> None:
        if pad_mode == "wrap":
            raise SchemaError(f"{where}: layout='packed' holds only real elements: there is nothing to wrap")
        if mask:
            raise SchemaError(f"{where}: layout='packed' has no padded slots to mask; its rows are given "
                              "by <name>_cu_seqlens")

    def suffixes(self, field: RaggedField) -> list[str]:
        return [*super().suffixes(field), CU_SEQLENS_SUFFIX, MAX_SEQLEN_SUFFIX]

    def extras(self, name: str, field: RaggedField, batch: np.ndarray, lengths: np.ndarray,
               dest: MutableMapping[str, np.ndarray]) -> None:
        dest[name] = batch
        if field.lengths:
            dest[name + LENGTHS_SUFFIX] = lengths
        cu = np.zeros(len(lengths) + 1, dtype=np.int32)
        np.cumsum(lengths, out=cu[1:])
        dest[name + CU_SEQLENS_SUFFIX] = cu
        dest[name + MAX_SEQLEN_SUFFIX] = np.array(lengths.max() if len(lengths) else 0, dtype=np.int32)
