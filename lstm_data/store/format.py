"""The precomputed-batch store: its metadata, the data fingerprint and the reuse check.

A store is a zarr v3 group. Each output (flat name, see :meth:`BatchSpec.flat_names`)
is a 1-D array holding every batch's values one after another; the group
``_index`` holds, per output, ``<name>.offsets`` (n_batches + 1) and
``<name>.shapes`` (n_batches, ndim), so batch ``i`` is
``array[offsets[i]:offsets[i + 1]].reshape(shapes[i])``: exact, with no padding
beyond the batch's own. The root attribute ``lstm_data_batches`` records the spec,
batch size, seed, shuffle mode, number of batches and rows, a fingerprint of
the source data, and ``requires``: what a reader must find and check to read the
store (:data:`REQUIRES`; see :func:`check_requires`).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from lstm_data._util.confined import check_plain_name
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.errors import FormatError
from lstm_data.io.ours.manifest import REQUIRES
from lstm_data.io.ours.manifest import check_requires as check_requires_of
from lstm_data.io.ours.layout import BATCH_STORE_ATTR

__all__ = ["STORE_FORMAT", "STORE_VERSION", "ATTR", "fingerprint", "flat_outputs", "StoreMismatchError",
           "compare_metadata", "output_keys", "output_key", "REQUIRES", "check_requires"]

STORE_FORMAT = "lstm_data.batches"
STORE_VERSION = 1
#: root attribute holding the metadata mapping (the io layer knows it, to refuse opening a store as data)
ATTR = BATCH_STORE_ATTR
#: rows whose ragged values are hashed per read (bounds the memory of hashing on-disk data)
_HASH_ROWS = 1 << 16
#: changes when the hashed content changes, so a store fingerprinted another way never matches
_SCHEME = "sha256-all-v2"


def output_keys(names: list[str]) -> dict[str, str]:
    """Node keys of the outputs ``names``: the names themselves when they are plain, safe path
    components, else generated ones (an output named ``a/b`` or ``zarr.json`` must not become a
    path inside the store); recorded in the metadata as ``keys``."""
    from lstm_data.io.ours.layout import node_keys

    keys, _ = node_keys(list(names), {})
    return {n: k.replace("_scalar", "_output", 1) if k != n else k for n, k in keys.items()}


def output_key(meta: Mapping[str, Any], name: str, *, file: str = "") -> str:
    """The node key of output ``name`` in a store with metadata ``meta`` (older stores: the name).

    Raises
    ------
    FormatError
        The key leaves the store (a ``..`` component, an absolute path); ``file``
        (the store) is named.
    """
    key = (meta.get("keys") or {}).get(name, name)
    return check_plain_name(key, file=file, key=f"{ATTR}: keys/{name}")


def check_requires(meta: Mapping[str, Any], *, has_manifest: bool, name: str) -> None:
    """Raise :class:`~lstm_data.errors.FormatError` unless the store can be read as it requires.

    ``meta["requires"]`` (absent in stores written before it) lists what the reader
    must find and check (see :func:`lstm_data.io.ours.manifest.check_requires`).

    Parameters
    ----------
    meta
        The store's recorded metadata.
    has_manifest
        Whether the store's manifest was found (and parsed).
    name
        The store, for messages.
    """
    check_requires_of(meta.get("requires"), has_manifest=has_manifest, name=name, attribute=ATTR,
                      redo="Recompute the store (lstm-data precompute --overwrite)")


class StoreMismatchError(ValueError):
    """A precomputed store was made with other settings or other data than those asked for."""


def fingerprint(dataset: Dataset) -> str:
    """A content hash of ``dataset``: its schema and every scalar, offset and prong value.

    Any change of a single value changes it, so a precomputed store is never
    reused for edited data. In-RAM columns are hashed in place; on-disk groups are
    read ``_HASH_ROWS`` rows at a time, one pass over the data (SHA-256, about
    1.5 GB/s with the CPU's SHA instructions).
    """
    h = hashlib.sha256()
    n = len(dataset)
    h.update(json.dumps({"scheme": _SCHEME, "n_rows": n, "scalars": dataset.scalar_names,
                         "groups": dataset.groups}).encode())
    for name in dataset.scalar_names:
        _update(h, dataset.scalar(name))
    for group in dataset.groups:
        _update(h, dataset.offsets(group).astype(np.int64, copy=False))
        for k, values in enumerate(_value_blocks(dataset, group)):
            if k == 0:  # the same bytes whether read whole or in blocks
                h.update(f"{values.dtype.str}{values.shape[1:]}".encode())
            h.update(_raw(values))
    return h.hexdigest()


def _value_blocks(dataset: Dataset, group: str) -> Iterator[np.ndarray]:
    """``group``'s values in row order: whole when in RAM, else ``_HASH_ROWS`` rows per read."""
    n = len(dataset)
    if isinstance(dataset, InMemoryDataset) or n == 0:
        values, offsets = dataset.ragged(group)
        yield values[offsets[0]:offsets[-1]] if len(offsets) else values
        return
    for lo in range(0, n, _HASH_ROWS):
        yield dataset.ragged(group, np.arange(lo, min(n, lo + _HASH_ROWS)))[0]


def flat_outputs(spec: BatchSpec, batch: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """``batch`` (its ``(inputs, targets, weights)`` dicts) as output name -> array, in the
    spec's flat order (:meth:`~lstm_data.batching.spec.batch_spec.BatchSpec.flatten` as a dict)."""
    flat = spec.flatten(batch, as_dict=True)
    if not isinstance(flat, dict):  # as_dict=True gives a dict
        raise TypeError(f"BatchSpec.flatten(as_dict=True) gave a {type(flat).__name__}")
    return flat


def _update(h: Any, array: np.ndarray) -> None:
    """Feed ``array``'s dtype, shape and bytes to ``h``."""
    h.update(f"{array.dtype.str}{array.shape}".encode())
    h.update(_raw(array))


def _raw(array: np.ndarray) -> memoryview:
    """``array``'s bytes in C order (no copy when it is contiguous)."""
    flat = np.ascontiguousarray(array).reshape(-1)  # also for (0, V): cast() refuses zero shapes
    return flat.view(np.uint8).data


def compare_metadata(recorded: Mapping[str, Any], expected: Mapping[str, Any], *, where: str,
                     writing: bool = False) -> None:
    """Raise :class:`StoreMismatchError` naming every key whose recorded value differs.

    Only keys present (and not ``None``) in ``expected`` are checked. ``writing``: the
    store is the output of a precompute (the message says what ``--overwrite`` does),
    else it is being opened.
    """
    diffs = []
    for key, want in expected.items():
        if want is None:
            continue
        have = recorded.get(key)
        if key == "spec":
            have = _current_form(have)
        if have != want:
            if key == "spec":
                diffs.append(f"spec: {_spec_difference(have, want)}")
                continue
            diffs.append(f"{key}: store has {have!r}, asked for {want!r}")
    if diffs:
        differs = "; ".join(diffs)
        if writing:
            raise StoreMismatchError(
                f"{where} already exists: it is a batch store lstm_data precomputed with other settings or "
                f"data ({differs}), so refusing to reuse it. --overwrite (overwrite=True) replaces it with "
                "the batches asked for; or choose another output")
        raise StoreMismatchError(f"{where} was precomputed with other settings or data; refusing to "
                                 f"reuse it ({differs}). Open it with the settings it records, or "
                                 "recompute it (precompute --overwrite)")


def _current_form(spec: Any) -> Any:
    """A recorded spec dict as this release writes it (format version, options added since), so
    a store written before compares equal to the same spec now; unreadable: as it is."""
    from lstm_data.batching.spec.batch_spec import BatchSpec

    if not isinstance(spec, Mapping):
        return spec
    try:
        return BatchSpec.from_dict(spec).to_dict()
    except (TypeError, ValueError):  # lstm_data's errors are ValueErrors
        return spec


def _spec_difference(have: Any, want: Any) -> str:
    """Which outputs of two spec dicts (``BatchSpec.to_dict``) differ, by role and name."""
    if not isinstance(have, Mapping) or not isinstance(want, Mapping):
        return "store has another spec"
    parts = []
    for role in ("inputs", "targets"):
        old, new = dict(have.get(role) or {}), dict(want.get(role) or {})
        for name in sorted(set(old) | set(new)):
            if name not in new:
                parts.append(f"{role[:-1]} {name!r} only in the store")
            elif name not in old:
                parts.append(f"{role[:-1]} {name!r} not in the store")
            elif old[name] != new[name]:
                keys = sorted(k for k in set(old[name]) | set(new[name])
                              if old[name].get(k) != new[name].get(k))
                parts.append(f"{role[:-1]} {name!r} differs in {', '.join(keys)}")
    return "; ".join(parts) or "store has another spec"
