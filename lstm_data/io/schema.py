"""``Schema``: the columns a text file holds, declared instead of inferred.

A schema names ragged groups (``{group: [variables]}``), optionally the scalar
columns to keep, and the value dtype. In TOML::

    dtype = "float32"                       # or "float64"
    scalars = ["calE", "nHit", "trueE"]     # optional: omit to keep every other column
    [groups]
    png = ["png.calE", "png.energy"]        # a list of column names, in values order
    png2d = "png2d.*"                       # or one glob pattern, matched in file order

NOvA HDF5 tables (:mod:`lstm_data.io.nova`) take three more entries; every
other reader refuses them::

    tables = ["rec.slc", "rec.energy.numu", "rec.vtx.elastic.fuzzyk.png*"]  # names or patterns
    slice_table = "rec.slc"                 # whose keys are the slices (default: the union)
    [aliases]                               # new name = table or variable of the file
    png = "rec.vtx.elastic.fuzzyk.png"      # a table: png.calE, png.nhit, ... and group png
    calE = "rec.slc.calE"                   # one variable

Names in ``groups`` and ``scalars`` are the names after aliasing.
"""
from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, TypeAlias

import numpy as np
from numpy.typing import DTypeLike

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data.errors import SchemaError

__all__ = ["SchemaLike", "Schema"]

_DTYPES = {"float32": np.dtype(np.float32), "float64": np.dtype(np.float64)}

#: what a schema may be given as: a Schema, a TOML path, its table, or None for none
SchemaLike: TypeAlias = "Schema | str | os.PathLike[str] | Mapping[str, object] | None"


@dataclass(frozen=True)
class Schema:
    """Declared ragged groups, optional scalar selection and dtype.

    Each parameter is kept as the attribute of the same name (``dtype`` as a
    ``numpy.dtype``).

    Parameters
    ----------
    groups : dict
        Group name -> list of column names or one glob pattern (``"png.*"``).
    scalars : list of str or None
        Scalar columns to read. ``None``: every column not in a group is read
        and its kind inferred. A list: only these scalars are read, every other
        non-group column is skipped.
    dtype : numpy.dtype
        ``float32`` (default) or ``float64``.
    tables : list of str or None
        NOvA HDF5 only: the tables to read (names or glob patterns); ``None``: all.
    slice_table : str or None
        NOvA HDF5 only: the table whose keys are the slices; ``None``: the union of
        the keys of every table with at most one row per key.
    aliases : dict
        NOvA HDF5 only: new name -> a table (renames it and the start of its
        variables' names, and of its sub-tables') or a variable of the file.
    """

    groups: Mapping[str, Sequence[str] | str] = field(default_factory=dict)
    scalars: Sequence[str] | None = None
    dtype: DTypeLike = np.float32
    tables: Sequence[str] | None = None
    slice_table: str | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        dt = np.dtype(self.dtype)
        if dt not in _DTYPES.values():
            raise SchemaError(f"schema dtype must be float32 or float64, got {dt}")
        object.__setattr__(self, "dtype", dt)
        groups: dict[str, str | list[str]] = {}
        for name, members in dict(self.groups).items():
            if isinstance(members, str):
                groups[str(name)] = members
            else:
                listed = [str(m) for m in members]
                if not listed:
                    raise SchemaError(f"group {name!r} declares no variables", variable=name)
                groups[str(name)] = listed
        object.__setattr__(self, "groups", groups)
        if self.scalars is not None:
            object.__setattr__(self, "scalars", [str(s) for s in self.scalars])
        if isinstance(self.tables, str):
            object.__setattr__(self, "tables", [self.tables])
        elif self.tables is not None:
            object.__setattr__(self, "tables", [str(t) for t in self.tables])
        if self.slice_table is not None:
            object.__setattr__(self, "slice_table", str(self.slice_table))
        object.__setattr__(self, "aliases", {str(k): str(v) for k, v in dict(self.aliases).items()})

    def table_entries(self) -> list[str]:
        """The NOvA-only entries that are set.

        Returns
        -------
        list of str
            Those of ``tables``, ``slice_table`` and ``aliases`` that are set.
        """
        return [k for k, v in (("tables", self.tables), ("slice_table", self.slice_table),
                               ("aliases", self.aliases or None)) if v is not None]

    # -- construction ------------------------------------------------------
    @classmethod
    def from_dict(cls, data: PlainMapping) -> "Schema":
        """Build from ``{"groups": {...}, "scalars": [...], "dtype": "float32"}``.

        Parameters
        ----------
        data
            The schema's keys (also ``tables``, ``slice_table``, ``aliases``). A
            mapping without any of those keys is read as ``{group: [variables]}``.

        Returns
        -------
        Schema
            The checked schema.
        """
        keys = {"groups", "scalars", "dtype", "tables", "slice_table", "aliases"}
        if not set(data) & keys:
            return cls(groups=dict(data))
        unknown = set(data) - keys
        if unknown:
            raise SchemaError(f"unknown schema keys {sorted(unknown)}; expected {sorted(keys)}")
        return cls(groups=dict(data.get("groups") or {}), scalars=data.get("scalars"),
                   dtype=data.get("dtype", "float32"), tables=data.get("tables"),
                   slice_table=data.get("slice_table"), aliases=dict(data.get("aliases") or {}))

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> "Schema":
        """Read a TOML schema file (see the module documentation).

        Parameters
        ----------
        path
            The TOML file.

        Returns
        -------
        Schema
            The checked schema.
        """
        from lstm_data._util.spec_files import load_toml

        data = load_toml(path, lambda message: SchemaError(f"invalid schema TOML: {message}", file=str(path)))
        return cls.from_dict(data)

    @classmethod
    def coerce(cls, schema: SchemaLike) -> "Schema | None":
        """A schema from what a user may give.

        Parameters
        ----------
        schema
            ``None``, a :class:`Schema`, a TOML path or a mapping (see :meth:`from_dict`).

        Returns
        -------
        Schema or None
            ``None`` for ``None``, else the checked schema.
        """
        if schema is None or isinstance(schema, Schema):
            return schema
        if isinstance(schema, (str, os.PathLike)):
            return cls.from_toml(schema)
        if isinstance(schema, Mapping):
            return cls.from_dict(schema)
        raise TypeError(f"schema must be a Schema, a mapping or a TOML path, "
                        f"got {type(schema).__name__}")

    def to_dict(self) -> PlainDict:
        """The plain-data form that :meth:`from_dict` reads back.

        Returns
        -------
        dict
            ``dtype``, ``groups`` and the keys that are set.
        """
        out: dict[str, Any] = {"dtype": np.dtype(self.dtype).name, "groups": dict(self.groups)}
        if self.scalars is not None:
            out["scalars"] = list(self.scalars)
        if self.tables is not None:
            out["tables"] = list(self.tables)
        if self.slice_table is not None:
            out["slice_table"] = self.slice_table
        if self.aliases:
            out["aliases"] = dict(self.aliases)
        return out

    # -- resolution against a header -------------------------------------------
    def resolve(self, columns: Sequence[str], *, tables: bool = False
                ) -> tuple[dict[str, list[str]], list[str] | None]:
        """Expand patterns and check every name against the file's ``columns``.

        Parameters
        ----------
        columns
            The file's column names (after aliasing, for NOvA tables).
        tables
            Whether the caller reads NOvA tables, which alone honour ``tables``,
            ``slice_table`` and ``aliases``; other callers get a ``SchemaError``
            when those are set.

        Returns
        -------
        groups : dict
            Group name -> column names, in values order.
        scalars : list of str or None
            The scalar columns to read (``None``: every other numeric column).

        Raises
        ------
        SchemaError
            A declared variable is not a column, a pattern matches nothing, or a
            column is declared twice; or NOvA-only entries for another format.
        """
        from lstm_data.data.dataset import unknown_name_error

        if not tables and self.table_entries():
            raise SchemaError(f"schema entries {', '.join(self.table_entries())} apply to NOvA HDF5 "
                              "tables only; this file has columns, not tables: drop them")

        known = list(columns)
        known_set = set(known)
        groups: dict[str, list[str]] = {}
        seen: dict[str, str] = {}

        def claim(names: list[str], group: str | None) -> None:
            """Each of ``names`` is a column, declared once (in ``group``; ``None``: as scalar)."""
            for var in names:
                if var not in known_set:
                    raise unknown_name_error("column", var, known)
                if var in seen:
                    where = f"in {seen[var]!r} and {group!r}" if group is not None \
                        else f"as scalar and in {seen[var]!r}"
                    raise SchemaError(f"column {var!r} declared {where}", variable=var)
                seen[var] = "scalars" if group is None else group

        for name, members in self.groups.items():
            if isinstance(members, str):
                names = [c for c in known if fnmatch.fnmatchcase(c, members)]
                if not names:
                    raise SchemaError(f"group {name!r}: pattern {members!r} matches no column")
            else:
                names = list(members)
            claim(names, name)
            groups[name] = names
        scalars = None if self.scalars is None else list(self.scalars)
        if scalars is not None:
            claim(scalars, None)
        return groups, scalars
