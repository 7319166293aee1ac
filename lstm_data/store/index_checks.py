"""The index of a batch store checked against its own metadata and spec before any batch is read.

A store's ``_index`` says where each batch of an output lies in its 1-D data array
(``<key>.offsets``) and what shape it has (``<key>.shapes``). Before a batch is
served, at open:

* the index arrays must have the shapes the metadata's ``n_batches`` implies
  (``(n_batches + 1,)`` and ``(n_batches, ndim)``, ``ndim`` the output's in the
  stored spec), and all of them must fit in the memory this process may still
  allocate; the data array must be 1-D, of the dtype the spec gives;
* every recorded batch shape must have the spec's dimensions where the spec fixes
  them (a ``Ragged`` field's ``max_len`` with ``fixed=True``, its number of
  variables) and no negative size, and hold exactly the values its offsets give
  (so no shape of ``2**40`` is ever reshaped to);
* the offsets must start at 0, never go down and end inside the data array.

Any other index is a :class:`~lstm_data.errors.FormatError` naming the store, the
array and the two shapes (or sizes) that disagree.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import zarr

from lstm_data.batching.spec.batch_spec import OutputSignature
from lstm_data.batching.spec.sizes import human_bytes, memory_room
from lstm_data.errors import FormatError

__all__ = ["check_index_arrays", "check_batch_shapes", "stored_batch_count"]


def stored_batch_count(meta: Mapping[str, Any], n_outputs: int, name: str) -> int:
    """The metadata's ``n_batches``, once checked to be a count whose index fits in memory.

    Parameters
    ----------
    meta
        The store's recorded metadata.
    n_outputs
        The outputs, each with an index of ``n_batches`` entries.
    name
        The store, for messages.

    Returns
    -------
    int
        The number of batches.
    """
    n = meta.get("n_batches")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise FormatError(f"damaged batch store metadata: n_batches is {n!r}, not a count", file=name)
    need = (n + 1) * 8 * 4 * max(1, n_outputs)  # offsets and shapes of up to 3 dimensions, int64
    room = memory_room()
    if need > room:
        raise FormatError(f"the store's metadata records n_batches = {n}, whose index of {n_outputs} outputs takes "
                          f"{human_bytes(need)}, more than the {human_bytes(room)} this process may still "
                          "allocate: the metadata is damaged", file=name)
    return n


def check_index_arrays(name: str, output: str, data: zarr.Array[Any], offsets: zarr.Array[Any],
                       shapes: zarr.Array[Any], n_batches: int, signature: OutputSignature | None) -> None:
    """Refuse index arrays of ``output`` whose shapes (zarr metadata) disagree with the store's
    metadata and spec, before they are read.

    Parameters
    ----------
    name
        The store.
    output
        The output (its name in the spec).
    data, offsets, shapes
        Its data array and its two index arrays.
    n_batches
        The metadata's batch count.
    signature
        The output's signature in the stored spec (``None``: an output the spec does
        not list, e.g. a target's weights).
    """
    ndim = None if signature is None else len(signature.shape)
    want = ((offsets, (n_batches + 1,)), (shapes, (n_batches, ndim)))
    for array, shape in want:
        have = tuple(array.shape)
        if len(have) != len(shape) or any(w is not None and h != w for h, w in zip(have, shape)):
            shown = tuple("ndim" if w is None else w for w in shape)
            raise FormatError(f"array {array.path!r} of output {output!r} has shape {have}, but the store's "
                              f"metadata (n_batches = {n_batches}) and spec give {shown}: the index is damaged",
                              file=name)
    if data.ndim != 1:
        raise FormatError(f"array {data.path!r} of output {output!r} has shape {tuple(data.shape)}, not the 1-D "
                          "array of values a batch store keeps: the store is damaged", file=name)
    if signature is not None and data.dtype != signature.dtype:
        raise FormatError(f"array {data.path!r} of output {output!r} holds {data.dtype}, but the store's spec "
                          f"gives {signature.dtype}: the store is damaged", file=name)


def check_batch_shapes(name: str, output: str, path: str, offsets: np.ndarray, shapes: np.ndarray,
                       size: int, signature: OutputSignature | None) -> None:
    """Refuse recorded batch shapes and offsets of ``output`` that its spec and data array cannot hold.

    Parameters
    ----------
    name
        The store.
    output, path
        The output and the path of its shapes array.
    offsets, shapes
        The index read: ``(n_batches + 1,)`` and ``(n_batches, ndim)``.
    size
        The values in the output's data array.
    signature
        As :func:`check_index_arrays`.
    """
    if len(offsets) and offsets[0] != 0 or np.any(np.diff(offsets) < 0) or len(offsets) and offsets[-1] > size:
        raise FormatError(f"array {path.removesuffix('.shapes') + '.offsets'!r} of output {output!r} does not "
                          f"go from 0 up to at most the {size} values of its data array: the index is damaged",
                          file=name)
    if np.any(shapes < 0):
        i = int(np.flatnonzero(np.any(shapes < 0, axis=1))[0])
        raise FormatError(f"array {path!r} records shape {_shape(shapes[i])} for batch {i} of output {output!r}: "
                          "a negative size; the index is damaged", file=name)
    if signature is not None:
        fixed = [(d, w) for d, w in enumerate(signature.shape) if w is not None]
        for d, w in fixed:
            bad = np.flatnonzero(shapes[:, d] != w)
            if len(bad):
                i = int(bad[0])
                raise FormatError(f"array {path!r} records shape {_shape(shapes[i])} for batch {i} of output "
                                  f"{output!r}, but the store's own spec fixes its shape at "
                                  f"{_shape(signature.shape)}: the index is damaged", file=name)
    counts = np.diff(offsets)
    as_float = np.prod(shapes.astype(np.float64), axis=1)  # no wrap-around of huge sizes (2**40 * ...)
    exact = as_float < 2.0**53
    bad = np.flatnonzero((as_float != counts.astype(np.float64))
                         | exact & (np.prod(np.where(exact[:, None], shapes, 0), axis=1) != counts))
    if len(bad):
        i = int(bad[0])
        raise FormatError(f"array {path!r} records shape {_shape(shapes[i])} ({as_float[i]:.0f} values) for batch "
                          f"{i} of output {output!r}, but its offsets hold {int(counts[i])} values for it: the "
                          "index is damaged", file=name)


def _shape(shape: Any) -> str:
    """A shape for a message: ``(6, 8, 2)``, ``(None, 6, 2)``, ``(4,)``."""
    return "(" + ", ".join(str(s) for s in (shape.tolist() if isinstance(shape, np.ndarray) else shape)) + \
        ("," if len(shape) == 1 else "") + ")"
