"""What a batch store holds, for ``lstm-data inspect STORE``: outputs, shapes, batches, spec, order.

Everything comes from the store's record and its index (the batch shapes); no batch
is read. The spec and the order are given back as TOML, the form a spec file takes,
so a store's settings can be reused or compared.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from lstm_data._util.declared import toml_text
from lstm_data._util.redact import redact
from lstm_data.batching.order.options import Order
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.io.ours.checked_store import open_checked
from lstm_data.store.format import ATTR, STORE_FORMAT, output_key
from lstm_data.io.plumbing.remote import is_url
from lstm_data.store.read import PrecomputedBatches, read_metadata, stored_metadata, stored_node
from lstm_data._util.plural import counted

__all__ = ["StoreDescription", "describe_store", "is_batch_store", "shape_text"]


def shape_text(shapes: np.ndarray) -> str:
    """``(B, 10, 33)`` for the stored shapes of one output (``lo..hi`` where batches differ).

    Parameters
    ----------
    shapes
        ``(n_batches, ndim)``: each batch's shape of the output.

    Returns
    -------
    str
        The batch axis as ``B``, the others as numbers or ranges.
    """
    if not len(shapes):
        return "(no batches)"
    cols = ["B"]
    for j in range(1, shapes.shape[1]):
        lo, hi = int(shapes[:, j].min()), int(shapes[:, j].max())
        cols.append(str(hi) if lo == hi else f"{lo}..{hi}")
    return "(" + ", ".join(cols) + ("," if len(cols) == 1 else "") + ")"


def is_batch_store(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a zarr store whose root records a batch store (any version).

    Parameters
    ----------
    path
        A path or URL.

    Returns
    -------
    bool
        ``True`` for a store ``precompute`` wrote, damaged ones included.
    """
    try:
        if is_url(path):
            meta = stored_metadata(str(path))
        else:
            attrs = json.loads((Path(path) / "zarr.json").read_bytes()).get("attributes") or {}
            meta = attrs.get(ATTR)
    except Exception:  # noqa: BLE001 - unreadable: not known to be a batch store
        return False
    return isinstance(meta, dict) and meta.get("format") == STORE_FORMAT


@dataclass
class StoreDescription:
    """A batch store, as ``lstm-data inspect`` shows it.

    Attributes
    ----------
    path : str
        The store (credentials of a URL left out).
    n_batches, n_rows, batch_size : int
        Its batches, the rows in them, and the rows per batch (the last may hold fewer).
    outputs : dict
        Output name -> ``{"role", "shape", "dtype"}``; ``shape`` as :func:`shape_text`.
    spec, order : str
        TOML of the spec the batches were built with and of their order.
    source : list of str
        The data the store was made of, as given then.
    fingerprint : str
        The digest of every value of that data.
    notes : list of str
        What the store cannot detect (see ``PrecomputedBatches.notes``).
    """

    path: str
    n_batches: int
    n_rows: int
    batch_size: int
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    spec: str = ""
    order: str = ""
    source: list[str] = field(default_factory=list)
    fingerprint: str = ""
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The plain-text report.

        Returns
        -------
        list of str
            One line each.
        """
        out = [f"{self.path}: batch store (lstm-data precompute; read with lstm_data.open_batches)",
               f"batches: {self.n_batches} of {counted(self.batch_size, 'row')} ({counted(self.n_rows, 'row')})",
               f"made of: {', '.join(self.source) or 'data in memory'} (fingerprint {self.fingerprint[:16]})",
               "", f"{'output':<28} {'role':<7} {'shape':<20} dtype"]
        out += [f"{n:<28} {o['role']:<7} {o['shape']:<20} {o['dtype']}" for n, o in self.outputs.items()]
        out += ["", "order:"] + [f"  {line}".rstrip() for line in self.order.strip().splitlines()]
        out += ["", "spec:"] + [f"  {line}".rstrip() for line in self.spec.strip().splitlines()]
        out += [f"note: {n}" for n in self.notes]
        return out

    def to_dict(self) -> dict[str, Any]:
        """The description as plain JSON values.

        Returns
        -------
        dict
            Every attribute.
        """
        return asdict(self)


def describe_store(path: str | os.PathLike[str]) -> StoreDescription:
    """What the batch store at ``path`` holds, from its record and index.

    Parameters
    ----------
    path
        The store.

    Returns
    -------
    StoreDescription
        Outputs (role, shape, dtype), batches, spec, order, source and fingerprint.

    Raises
    ------
    FormatError
        ``path`` is not a batch store, or a damaged one.
    """
    stored = PrecomputedBatches(path)  # checks the record, the index and every array's metadata
    meta = read_metadata(path)
    name = redact(os.fspath(path))
    index = stored_node(open_checked(os.fspath(path), name)[0], "_index", zarr.Group, name)
    spec = BatchSpec.from_dict(meta["spec"])
    sig = spec.signature()
    outputs = {}
    for n in meta["outputs"]:
        shapes = np.asarray(stored_node(index, f"{output_key(meta, n, file=name)}.shapes", zarr.Array, name)[:])
        role, dtype = (sig[n].role, str(sig[n].dtype)) if n in sig else ("weight", "float32")
        outputs[n] = {"role": role, "shape": shape_text(shapes), "dtype": dtype}
    bucketing = meta.get("bucketing") or {}
    recorded = {"batch_size": meta["batch_size"], "seed": meta["seed"], "shuffle": meta["shuffle"],
                **{k: bucketing[k] for k in ("bucket_by", "bucket_window") if k in bucketing},
                **(meta.get("order") or {})}
    order = toml_text({Order.TOML_TABLE: {**recorded, **Order.from_dict(recorded).to_dict()}})
    return StoreDescription(name, len(stored), int(meta["n_rows"]), int(meta["batch_size"]), outputs,
                            spec.to_toml(), order, [redact(str(s)) for s in meta.get("source") or []],
                            str(meta.get("fingerprint", "")), list(stored.notes))
