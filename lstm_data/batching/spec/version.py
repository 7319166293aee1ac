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

A file without ``version`` is read as version 1, whatever other keys it holds: the
padding depends only on ``version`` and a field's own ``pad_value``, never on
another key (``empty``, ``mask``, ...). Loading such a file whose ragged fields
pad with the implied NaN warns once (:class:`~lstm_data.errors.SpecVersionWarning`),
naming the fields and ``version = 2``.

A precomputed store records its spec with every ``pad_value`` written out, so
it reloads to the values it was built with whatever the file's version.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from lstm_data.errors import SchemaError, SpecVersionWarning, warn_user

__all__ = ["SPEC_VERSION", "PAD_DEFAULTS", "spec_version", "with_version_defaults", "warn_implied_padding"]

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
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SchemaError(f"{source}: version must be a positive int (the spec format version), "
                          f"got {version!r}")
    if version > SPEC_VERSION:
        raise SchemaError(f"{source}: spec format version {version} is newer than this lstm_data reads "
                          f"(up to {SPEC_VERSION}); upgrade lstm_data")
    return version


def warn_implied_padding(data: Mapping[str, Any], source: str = "spec") -> None:
    """Warn once when a spec without ``version`` pads ragged fields with version 1's NaN.

    Parameters
    ----------
    data
        The top-level tables of a spec file.
    source
        Where the data came from (a file name), named in the warning.
    """
    if "version" in data:
        return
    implied = [f"{role}.{name}" for role in ("inputs", "targets")
               for name, table in (data.get(role) or {}).items()
               if isinstance(table, Mapping) and table.get("type") == "ragged" and "pad_value" not in table]
    if implied:
        warn_user(f"{source}: no 'version' key, so it is read as spec format 1: its ragged fields "
                  f"{', '.join(implied)} pad with NaN (lstm_ee's padding), which reaches a model as loss: nan. "
                  "Add version = 2 at the top of the file to pad with 0.0, or write pad_value = nan in "
                  "those fields to keep NaN", SpecVersionWarning)


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
