"""What a saved iteration state is bound to: the spec, the order settings and the data.

:meth:`Batches.state_dict` records the settings that decide the batches by name
(so a refused state names the setting that differs) and one digest of the spec,
those settings and the data: a fingerprint of its first and last rows and, from
format 3, the digest of every value of each file part
(:mod:`~lstm_data.batching.epochs.data_digest`), recorded one by one too so a
refused state names the file. Rank, world size, worker count and the number of
batches of an epoch are left out: they may change between a save and a resume.
A state of an earlier format is checked by that format's recipe (:data:`_RECIPES`).
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

import numpy as np

from lstm_data.batching.order.options import Order
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.data.dataset import Dataset

__all__ = ["STATE_FORMAT", "order_settings", "data_fingerprint", "identity_digest", "legacy_digests",
           "full_data"]

#: the format of saved states; a state without ``state_format`` is format 1 (saved before it was
#: recorded). Each format's identity recipe is in :data:`_RECIPES`.
STATE_FORMAT = 3

#: rows read from each end of the data for its fingerprint
_SAMPLE_ROWS = 64


def order_settings(order: Order) -> dict[str, Any]:
    """Every setting of ``order`` that decides its batches, as plain values (array weights as a digest)."""
    out: dict[str, Any] = {}
    for name in Order.option_names():
        value = getattr(order, name)
        if name == "policies" and value is None:  # unset: states saved before it existed stay valid
            continue
        if name in Order.NOT_IN_BATCHES:  # how batches are made, not what they hold
            continue
        if isinstance(value, np.ndarray):
            value = "sha256:" + hashlib.sha256(np.ascontiguousarray(value, np.float32).tobytes()).hexdigest()[:16]
        out[name] = value
    return out


def data_fingerprint(dataset: Dataset, view: np.ndarray | None) -> str:
    """A digest of the data's shape, names, row lengths and the values of its first and last rows.

    Cheap (a few hundred rows are read), so a state refuses data that is not the
    data it was saved with; it does not prove every value equal.
    """
    h = hashlib.sha256()
    h.update(json.dumps([len(dataset), dataset.scalar_names, dataset.groups]).encode())
    n = len(dataset)
    rows = np.unique(np.concatenate([np.arange(min(n, _SAMPLE_ROWS)),
                                     np.arange(max(0, n - _SAMPLE_ROWS), n)])).astype(np.intp)
    for name in dataset.scalar_names:
        h.update(np.ascontiguousarray(dataset.scalar(name, rows)).tobytes())
    for group in dataset.groups:
        values, offsets = dataset.ragged(group, rows)
        h.update(np.ascontiguousarray(values).tobytes())
        h.update(np.ascontiguousarray(offsets).tobytes())
        h.update(str(int(dataset.offsets(group)[-1])).encode())
    if view is not None:
        h.update(np.ascontiguousarray(view, dtype=np.int64).tobytes())
    return h.hexdigest()[:32]


def full_data(sampled: str, parts: list[str]) -> str:
    """The data of a format-3 identity: the sampled fingerprint and every file part's digest of all its values."""
    return sampled + ":" + ",".join(parts)


def identity_digest(spec: BatchSpec, settings: dict[str, Any], data: str) -> str:
    """One digest of the spec, the order settings and the data (:func:`full_data` of the data now)."""
    return _digest(spec.to_dict(), settings, data)


def _digest(spec: dict[str, Any], settings: dict[str, Any], data: str) -> str:
    text = json.dumps([spec, settings, data], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _unversioned(spec: BatchSpec) -> dict[str, Any]:
    plain = spec.to_dict()
    plain.pop("version", None)
    return plain


#: the identity digests a state of each earlier format carries, from (spec, settings, sampled fingerprint):
#: formats 1 and 2 bound the data by its sampled fingerprint only; format 1 was saved by releases whose spec
#: form had no ``version`` key, and by the release that added it
_RECIPES: dict[int, Callable[[BatchSpec, dict[str, Any], str], set[str]]] = {
    1: lambda spec, settings, sampled: {_digest(_unversioned(spec), settings, sampled),
                                        _digest(spec.to_dict(), settings, sampled)},
    2: lambda spec, settings, sampled: {_digest(spec.to_dict(), settings, sampled)},
}


def legacy_digests(spec: BatchSpec, settings: dict[str, Any], sampled: str, state_format: int) -> set[str]:
    """The digests a state of an earlier ``state_format`` carries for the same spec, settings and data.

    Parameters
    ----------
    spec, settings
        What the digest is made of (:func:`identity_digest`).
    sampled
        The data's :func:`data_fingerprint`.
    state_format
        The format the state was saved in (1 up to ``STATE_FORMAT - 1``).

    Returns
    -------
    set of str
        Each digest that the same batches had in that format.
    """
    return _RECIPES[state_format](spec, settings, sampled)
