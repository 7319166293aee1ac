"""The format version of a spec file, and the defaults each version means.

A spec written by :meth:`BatchSpec.to_toml <lstm_data.batching.spec.batch_spec.BatchSpec.to_toml>`
(or :meth:`~lstm_data.batching.spec.batch_spec.BatchSpec.to_dict`) carries ``version = 2`` at
its top level. A default may change between versions; a file keeps the meaning it
was written with:

========  ======================================================================
version   default ``pad_value`` of a ``ragged`` table that does not give one
========  ======================================================================
1 (none)  NaN (lstm_ee's padding; every file written before versions existed)
2         0.0 (as Keras ``pad_sequences``, torch ``pad_sequence`` and weaver)
========  ======================================================================

A file without ``version`` is read as version 1, unless it uses a key that only
version 2 has (``derived``, ``selection``, ``augment``; a field's ``layout``,
``pad_mode``, ``mask``, ``standardize`` or ``empty``): it was then written by
hand for version 2, and gets version 2's defaults.

A precomputed store records its spec with every ``pad_value`` written out, so
it reloads to the values it was built with whatever the file's version.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from lstm_data.errors import SchemaError

__all__ = ["SPEC_VERSION", "PAD_DEFAULTS", "spec_version", "with_version_defaults"]

#: the version written into every spec file and dict
SPEC_VERSION = 2
#: the default ``pad_value`` of a ragged field, by spec file version
PAD_DEFAULTS: dict[int, float] = {1: math.nan, 2: 0.0}


def spec_version(data: Mapping[str, Any], source: str = "spec") -> int:
    """The format version of a spec's tables: its ``version`` key, 1 when there is none.

    Parameters
    ----------
    data
        The top-level tables of a spec file (or a :meth:`BatchSpec.to_dict` dict).
    source
        Where the data came from, named in errors.

    Returns
    -------
    int
        1 or 2.

    Raises
    ------
    SchemaError
        ``version`` is not an int, or newer than this release reads.
    """
    version = data.get("version", _unversioned(data))
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SchemaError(f"{source}: version must be a positive int (the spec format version), "
                          f"got {version!r}")
    if version > SPEC_VERSION:
        raise SchemaError(f"{source}: spec format version {version} is newer than this lstm_data reads "
                          f"(up to {SPEC_VERSION}); upgrade lstm_data")
    return version


#: what a version-1 spec could hold: a file without ``version`` using anything else was written
#: for version 2 (by hand), and gets version 2's defaults
V1_KEYS = frozenset({"inputs", "targets", "nan_to", "pad_to_multiple_of", "order", "read"})
V1_FIELD_KEYS = frozenset({"type", "vars", "max_len", "pad_value", "sort_by", "descending", "padding",
                           "truncating", "lengths", "dtype", "fixed"})


def _unversioned(data: Mapping[str, Any]) -> int:
    """The version of a spec without a ``version`` key: 1, unless it uses what only 2 has."""
    if set(data) - V1_KEYS:
        return 2
    for role in ("inputs", "targets"):
        tables = data.get(role)
        if isinstance(tables, Mapping) and any(isinstance(t, Mapping) and set(t) - V1_FIELD_KEYS
                                               for t in tables.values()):
            return 2
    return 1


def with_version_defaults(table: Mapping[str, Any], version: int) -> dict[str, Any]:
    """A field table with the defaults of spec format ``version`` filled in where it gives none.

    Parameters
    ----------
    table
        One ``[inputs.NAME]`` / ``[targets.NAME]`` table.
    version
        The spec file's format version.

    Returns
    -------
    dict
        ``table``, plus ``pad_value`` for a ``ragged`` table without one when the
        version's default differs from the current one.
    """
    out = dict(table)
    if out.get("type") == "ragged" and "pad_value" not in out \
            and not _same(PAD_DEFAULTS[version], PAD_DEFAULTS[SPEC_VERSION]):
        out["pad_value"] = PAD_DEFAULTS[version]
    return out


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))
