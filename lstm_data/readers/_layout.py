"""Our on-disk layout (design §5), shared by the zarr v3 and HDF5 readers and writers.

Root attributes::

    lstm_data_format   "lstm_data"
    lstm_data_version  1
    lstm_data_layout   {"n_rows": N,
                        "scalars": {variable: node key},
                        "groups": {group: {"key": node key, "names": [variables]}}}

Scalars are 1-D arrays at the root; each ragged group is a subgroup holding
``offsets`` (N + 1, int64) and ``values`` (total, V). The layout attribute is
written last, so a half-written store is never mistaken for a complete one.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping

from ..batch_store import ATTR as BATCH_STORE_ATTR
from ..errors import FormatError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "node_keys", "make_layout", "parse_layout",
           "layout_attrs", "is_ours", "CHUNK_BYTES"]

FORMAT_NAME = "lstm_data"
FORMAT_VERSION = 1
#: target size of one uncompressed chunk
CHUNK_BYTES = 1 << 20

_SAFE_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")


def _key_for(name: str, fallback: str, taken: set[str]) -> str:
    """``name`` when it is a safe node name, else ``fallback``; never a taken key."""
    ok = bool(_SAFE_KEY.match(name)) and not name.startswith("__") and name not in (".", "..")
    key = name if ok and name not in taken else fallback
    taken.add(key)
    return key


def node_keys(scalar_names: list[str], groups: Mapping[str, list[str]]):
    """Store keys for scalars and groups: the names themselves when safe and unique.

    Returns
    -------
    scalars : dict, variable -> key
    groups : dict, group -> key
    """
    taken: set[str] = set()
    group_keys = {g: _key_for(g, f"_group{i}", taken) for i, g in enumerate(groups)}
    scalar_keys = {s: _key_for(s, f"_scalar{i}", taken) for i, s in enumerate(scalar_names)}
    return scalar_keys, group_keys


def make_layout(n_rows: int, scalar_keys: Mapping[str, str], group_keys: Mapping[str, str],
                groups: Mapping[str, list[str]]) -> dict[str, Any]:
    """The ``lstm_data_layout`` attribute."""
    return {"n_rows": int(n_rows), "scalars": dict(scalar_keys),
            "groups": {g: {"key": group_keys[g], "names": list(groups[g])} for g in groups}}


def layout_attrs(layout: dict[str, Any], *, as_json: bool) -> dict[str, Any]:
    """Root attributes to write (JSON text for HDF5, a mapping for zarr)."""
    return {"lstm_data_format": FORMAT_NAME, "lstm_data_version": FORMAT_VERSION,
            "lstm_data_layout": json.dumps(layout) if as_json else layout}


def is_ours(attrs: Mapping[str, Any]) -> bool:
    """Whether root attributes mark our layout."""
    fmt = attrs.get("lstm_data_format")
    return (fmt.decode() if isinstance(fmt, bytes) else fmt) == FORMAT_NAME


def parse_layout(attrs: Mapping[str, Any], *, file: str) -> dict[str, Any]:
    """Validate root attributes and return the layout mapping.

    Raises
    ------
    FormatError
        Not our layout, a newer version, or a damaged layout attribute.
    """
    if not is_ours(attrs):
        if BATCH_STORE_ATTR in attrs:  # made by precompute
            raise FormatError("this is a store of precomputed batches, not a dataset; open it "
                              "with lstm_data.open_batches()", file=file)
        raise FormatError("not an lstm_data store (root attribute 'lstm_data_format' missing; "
                          "an interrupted write leaves it out)", file=file)
    version = int(attrs.get("lstm_data_version", -1))
    if version > FORMAT_VERSION:
        raise FormatError(f"layout version {version} is newer than this lstm_data "
                          f"(reads up to {FORMAT_VERSION}); upgrade lstm_data", file=file)
    raw = attrs.get("lstm_data_layout")
    try:
        layout = json.loads(raw) if isinstance(raw, (str, bytes)) else dict(raw)
        layout["n_rows"] = int(layout["n_rows"])
        layout["scalars"] = dict(layout["scalars"])
        layout["groups"] = {g: {"key": str(v["key"]), "names": list(v["names"])}
                            for g, v in dict(layout["groups"]).items()}
    except (TypeError, KeyError, ValueError) as exc:
        raise FormatError(f"damaged 'lstm_data_layout' attribute ({exc})", file=file) from None
    return layout


def check_group_arrays(group: str, offsets, values, width: int, n_rows: int, *, file: str) -> None:
    """Raise ``FormatError`` unless a stored group's ``offsets``/``values`` fit ``n_rows`` rows
    of ``width`` variables."""
    if offsets.shape != (n_rows + 1,) or offsets[0] != 0 or offsets[-1] != values.shape[0]:
        raise FormatError(f"offsets of group {group!r} do not match its {values.shape[0]} "
                          f"values and {n_rows} rows", file=file, variable=group)
    if values.ndim != 2 or values.shape[1] != width:
        raise FormatError(f"values of group {group!r} have shape {values.shape}, expected "
                          f"(total, {width})", file=file, variable=group)
