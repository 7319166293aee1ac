"""What every output form of a ``Ragged`` field has: :class:`Form`, the padded ``(B, P, V)`` rule.

A form owns its output names, their dtypes and shapes (before any data, and per
batch from row lengths), its mask, the order of its value axes, the kernel layout
it is gathered in and what it makes of the kernel's output, and the fill of its
padded slots. The subclasses of the other modules of this package change only what
differs; :mod:`lstm_data.batching.spec.forms` registers them by the name that
``Ragged(layout=...)`` gives.
"""
from __future__ import annotations

import math
from typing import Any, Callable, ClassVar, Mapping, MutableMapping, Protocol, Sequence

import numpy as np

from lstm_data.errors import SchemaError
from lstm_data.kernels import KERNEL_LAYOUTS

__all__ = ["Form", "RaggedField", "LENGTHS_SUFFIX", "MASK_SUFFIX", "CU_SEQLENS_SUFFIX", "MAX_SEQLEN_SUFFIX",
           "PAD_MODES"]

#: suffix of the per-row prong count output of a ``Ragged(..., lengths=True)`` field
LENGTHS_SUFFIX = "_lengths"
#: suffix of the boolean mask output of a ``Ragged(..., mask=True)`` field
MASK_SUFFIX = "_mask"
#: suffix of the ``(B + 1,)`` int32 prefix sum of lengths of a packed field
CU_SEQLENS_SUFFIX = "_cu_seqlens"
#: suffix of the 0-d int32 longest row of a packed field
MAX_SEQLEN_SUFFIX = "_max_seqlen"
#: how a ragged output fills the slots after a row's elements
PAD_MODES = ("constant", "wrap")

#: an output's dims, ``None`` where they vary per batch
Dims = tuple[int | None, ...]


class RaggedField(Protocol):
    """The options of a ``Ragged`` field a form reads."""

    @property
    def vars(self) -> tuple[str, ...]: ...

    @property
    def max_len(self) -> int | None: ...

    @property
    def fixed(self) -> bool: ...

    @property
    def pad_value(self) -> float: ...

    @property
    def padding(self) -> str: ...

    @property
    def lengths(self) -> bool: ...

    @property
    def mask(self) -> bool: ...

    @property
    def standardize(self) -> Mapping[str, Any]: ...

    @property
    def np_dtype(self) -> np.dtype: ...


class Form:
    """An output form of a ``Ragged`` field: padded slots, the value axes in order :attr:`axes`.

    Instances hold no state; the field a method is about is passed to it. This class
    is the ``(B, P, V)`` form; a subclass sets :attr:`name`, :attr:`axes` and
    :attr:`kernel_layout`, and overrides what else differs.
    """

    #: the name ``Ragged(layout=...)`` gives
    name: ClassVar[str] = "padded"
    #: the output's axes in order: ``B`` rows, ``P`` padded slots, ``V`` variables
    #: (``T``: the real elements of every row one after another)
    axes: ClassVar[str] = "BPV"
    #: the kernel layout it is gathered in (a name of ``kernels.KERNEL_LAYOUTS``)
    kernel_layout: ClassVar[str] = "padded"
    #: why the form needs one element count per row (a field over several groups cannot be
    #: of it), or ``None``
    one_count: ClassVar[str | None] = None

    @property
    def kernel_code(self) -> int:
        """The code of :attr:`kernel_layout` (its index in ``kernels.KERNEL_LAYOUTS``)."""
        return KERNEL_LAYOUTS.index(self.kernel_layout)

    @property
    def has_slots(self) -> bool:
        """Whether the output has padded slots (a width that options, buckets and masks set)."""
        return "P" in self.axes

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # -- options ---------------------------------------------------------------------------
    def check(self, where: str, pad_mode: str, mask: bool) -> None:
        """Raise the SchemaError of ``Ragged`` options that this form cannot take."""

    # -- outputs ---------------------------------------------------------------------------
    def suffixes(self, field: RaggedField) -> list[str]:
        """The suffixes of the field's outputs after its own, in signature order."""
        out = []
        if field.lengths:
            out.append(LENGTHS_SUFFIX)
        if field.mask:
            out.append(MASK_SUFFIX)
        return out

    def dims(self, field: RaggedField, width: Any, rows: Any, elements: Any = None) -> tuple[Any, ...]:
        """The value output's dims in :attr:`axes` order, given each axis' size."""
        size = {"B": rows, "P": width, "V": len(field.vars), "T": elements}
        return tuple(size[a] for a in self.axes)

    def signature(self, field: RaggedField) -> dict[str, tuple[np.dtype, Dims]]:
        """Suffix (``""``: the values) -> ``(dtype, dims)`` of every output, before any data."""
        width = field.max_len if field.fixed else None
        extra: dict[str, tuple[Any, Dims]] = {
            LENGTHS_SUFFIX: (np.int64, (None,)), MASK_SUFFIX: (np.bool_, (None, width)),
            CU_SEQLENS_SUFFIX: (np.int32, (None,)), MAX_SEQLEN_SUFFIX: (np.int32, ())}
        out = {"": (field.np_dtype, self.dims(field, width, None))}
        for suffix in self.suffixes(field):
            dtype, dims = extra[suffix]
            out[suffix] = (np.dtype(dtype), dims)
        return out

    def output_shapes(self, name: str, field: RaggedField, sizes: np.ndarray, widths: np.ndarray,
                      row_lengths: Callable[[], Sequence[np.ndarray]]) -> dict[str, np.ndarray]:
        """Every output's shape in every batch, from row lengths alone.

        Parameters
        ----------
        name, field
            The output name and its ``Ragged`` field.
        sizes
            The rows of each batch.
        widths
            The padded width ``P`` of each batch (unused by a form without slots).
        row_lengths
            Gives, per batch, its rows' element counts (before ``max_len``); called only
            by a form whose shapes follow them.

        Returns
        -------
        dict of str to ndarray
            Output name -> ``(n_batches, ndim)`` int64 shapes, as the batches give them.
        """
        n = len(sizes)
        sizes = np.asarray(sizes, dtype=np.int64)
        widths = np.asarray(widths, dtype=np.int64).reshape(-1)
        elements = self._elements(field, row_lengths) if "T" in self.axes else None
        columns = self.dims(field, widths, sizes, elements)
        shapes = {name: np.column_stack([np.broadcast_to(c, (n,)) for c in columns])}
        for suffix in self.suffixes(field):
            shapes[name + suffix] = self._extra_shape(suffix, sizes, widths)
        return shapes

    @staticmethod
    def _elements(field: RaggedField, row_lengths: Callable[[], Sequence[np.ndarray]]) -> np.ndarray:
        """The kept elements of each batch (its rows' lengths cut at ``max_len``)."""
        cap = field.max_len
        return np.array([int(np.minimum(lens, cap).sum() if cap is not None else lens.sum())
                         for lens in row_lengths()], dtype=np.int64)

    def _extra_shape(self, suffix: str, sizes: np.ndarray, widths: np.ndarray) -> np.ndarray:
        """The shapes of the output of ``suffix`` in every batch."""
        if suffix == MASK_SUFFIX:
            return np.column_stack([sizes, widths])
        if suffix == CU_SEQLENS_SUFFIX:
            return (sizes + 1).reshape(-1, 1)
        if suffix == MAX_SEQLEN_SUFFIX:
            return np.zeros((len(sizes), 0), dtype=np.int64)
        return sizes.reshape(-1, 1)  # lengths

    # -- a built batch ---------------------------------------------------------------------
    def finish(self, batch: np.ndarray) -> np.ndarray:
        """The output in this form from the kernel's output in :attr:`kernel_layout` (here: itself)."""
        return batch

    def width(self, batch: np.ndarray) -> int:
        """The padded width ``P`` of a built output."""
        return int(batch.shape[self.axes.index("P")])

    def rows_view(self, batch: np.ndarray) -> np.ndarray:
        """A ``(B, P, V)`` view of a built output (no copy)."""
        return batch.transpose([self.axes.index(a) for a in "BPV"])

    def from_rows(self, rows: np.ndarray) -> np.ndarray:
        """The C-contiguous output in this form of a ``(B, P, V)`` array."""
        return np.ascontiguousarray(rows.transpose(["BPV".index(a) for a in self.axes]))

    def extras(self, name: str, field: RaggedField, batch: np.ndarray, lengths: np.ndarray,
               dest: MutableMapping[str, np.ndarray]) -> None:
        """Put the output ``name`` and its lengths and mask into ``dest``."""
        dest[name] = batch
        if field.lengths:
            dest[name + LENGTHS_SUFFIX] = lengths
        if field.mask:
            width = self.width(batch)
            slot = np.arange(width)
            kept = lengths[:, None]
            dest[name + MASK_SUFFIX] = slot >= width - kept if field.padding == "pre" else slot < kept

    # -- the padded fill -------------------------------------------------------------------
    def fill_value(self, field: RaggedField, nan_to: float | None) -> float:
        """The field's own fill of a padded slot: its ``pad_value``, NaN replaced by ``nan_to`` when given."""
        pad = float(field.pad_value)
        return float(nan_to) if nan_to is not None and math.isnan(pad) else pad

    def fill(self, field: RaggedField, nan_to: float | None) -> list[float]:
        """The fill of a padded slot of each variable, in ``vars`` order.

        A variable's ``Standardize(pad_value=...)`` when given, else the field's
        ``pad_value``; then, with ``nan_to`` (an input's, when the spec sets it), a NaN
        fill becomes ``nan_to``. (``pad_mode="wrap"`` fills with a row's own elements; a
        row without any gets these.)
        """
        pads = []
        for v in field.vars:
            own = getattr(field.standardize.get(v), "pad_value", None)
            pad = self.fill_value(field, nan_to) if own is None else float(own)
            pads.append(float(nan_to) if nan_to is not None and math.isnan(pad) else pad)
        return pads

    def per_variable_fill(self, field: RaggedField) -> bool:
        """Whether some variable has a fill of its own (a ``Standardize.pad_value``)."""
        return any(getattr(s, "pad_value", None) is not None for s in field.standardize.values())


def unknown_layout(where: str, layout: Any, known: Sequence[str]) -> SchemaError:
    """The SchemaError of a ``layout`` that names no registered form."""
    return SchemaError(f"{where}: layout must be one of {tuple(known)}, got {layout!r}")
