"""Schema files lying beside the data, named when a column the data lacks is asked for.

A NOvA file's names carry their tables' paths (``rec.slc.calE``); the short names a
spec uses (``calE``) come from a schema's ``[aliases]``, a TOML file kept beside the
data and usually named like it (``nova_sample.h5`` and ``nova_sample.toml``). When a
spec asks for a name the data lacks, the error says which schema file beside the data
names it, and how to give it.

A TOML file is a schema when its top-level keys are all schema keys (``groups``,
``scalars``, ``dtype``, ``tables``, ``slice_table``, ``aliases``); spec files (``inputs``,
``targets``) and others are not. At most 50 files of a folder are read.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterable

__all__ = ["schemas_beside", "schema_hint"]

_KEYS = frozenset({"groups", "scalars", "dtype", "tables", "slice_table", "aliases"})
_MAX_FILES = 50


def _load(path: Path) -> dict[str, Any] | None:
    """A schema file's tables, or ``None`` when ``path`` is no readable schema."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python < 3.11
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError):
        return None
    return data if data and set(data) <= _KEYS else None


def _stem(path: Path) -> str:
    return path.name.split(".", 1)[0]


def schemas_beside(sources: Iterable[str | os.PathLike[str]]) -> list[tuple[Path, dict[str, Any]]]:
    """The schema files in the folders of local ``sources``, those named like a source first.

    Parameters
    ----------
    sources
        The data's files or stores (URLs are passed over).

    Returns
    -------
    list of (Path, dict)
        Each schema file and its tables.
    """
    found: dict[Path, dict[str, Any]] = {}
    folders: dict[Path, list[str]] = {}
    for src in sources:
        text = os.fspath(src)
        if "://" in text:
            continue
        path = Path(text)
        folders.setdefault(path.parent, []).append(_stem(path))
    for folder, stems in list(folders.items())[:3]:
        try:
            files = sorted(folder.glob("*.toml"))[:_MAX_FILES]
        except OSError:
            continue
        files.sort(key=lambda f: _stem(f) not in stems)  # named like the data first
        for f in files:
            data = _load(f)
            if data is not None:
                found.setdefault(f, data)
    return list(found.items())


def _names(data: dict[str, Any], name: str) -> str | None:
    """How a schema's tables give ``name``, or ``None``."""
    aliases = data.get("aliases") or {}
    if isinstance(aliases, dict):
        if name in aliases:
            return f"names {name!r} (an alias of {aliases[name]!r})"
        head = next((a for a in aliases if name.startswith(f"{a}.")), None)
        if head is not None:
            return f"names {name!r} (its table {head!r} is an alias of {aliases[head]!r})"
    groups = data.get("groups") or {}
    if isinstance(groups, dict) and any(name == g or name.startswith(f"{g}.") for g in groups):
        return f"declares {name!r}"
    scalars = data.get("scalars") or []
    if isinstance(scalars, list) and name in scalars:
        return f"declares the scalar {name!r}"
    return None


def schema_hint(sources: Iterable[str | os.PathLike[str]], name: str) -> str:
    """A sentence naming the schema file beside the data that gives ``name``, or ``""``.

    Parameters
    ----------
    sources
        The data's files or stores.
    name
        The column asked for.

    Returns
    -------
    str
        E.g. ``"examples/nova_sample.toml, a schema beside the data, names 'calE' (an alias
        of 'rec.slc.calE'): open the data with schema='examples/nova_sample.toml' (--schema
        examples/nova_sample.toml)"``; a schema that does not name it is still mentioned.
    """
    found = schemas_beside(sources)
    if not found:
        return ""
    for path, data in found:
        how = _names(data, name)
        if how is not None:
            return (f"{path}, a schema beside the data, {how}: open the data with "
                    f"schema={str(path)!r} (--schema {path})")
    shown = ", ".join(str(p) for p, _ in found[:3])
    return (f"schema files beside the data: {shown}; if they describe it, open the data with one "
            f"(schema=..., --schema FILE)")
