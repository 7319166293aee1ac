"""Ratio floors for ``--check``, read from ``floors.toml`` (also ``bench/floors.toml``)."""
from __future__ import annotations

from pathlib import Path

import tomllib

from bench.timing import Report

__all__ = ["DEFAULT_FLOORS", "load_floors", "apply_floors"]

DEFAULT_FLOORS = Path(__file__).with_name("floors.toml")


def load_floors(path: str | Path | None = None) -> dict[tuple[str, str], tuple[float, str]]:
    """``{(stage, ratio name): (bound, "min" | "max", advisory)}`` from a floors TOML file.

    An ``advisory`` floor is reported (and missed visibly) but does not fail ``--check``.

    Raises
    ------
    ValueError
        An entry is not ``{ min = X }`` or ``{ max = X }``.
    """
    p = Path(path) if path is not None else DEFAULT_FLOORS
    with open(p, "rb") as fh:
        data = tomllib.load(fh)
    floors = {}
    for stage, entries in data.items():
        for name, bound in entries.items():
            kinds = [k for k in bound if k in ("min", "max")] if isinstance(bound, dict) else []
            extra = set(bound) - {"min", "max", "advisory"} if isinstance(bound, dict) else set()
            if len(kinds) != 1 or extra:
                raise ValueError(f"{p}: [{stage}] {name!r} must be {{ min = X }} or {{ max = X }}"
                                 " (optionally with advisory = true)")
            floors[(stage, name)] = (float(bound[kinds[0]]), kinds[0],
                                     bool(bound.get("advisory", False)))
    return floors


def apply_floors(report: Report, floors: dict) -> None:
    """Set every ratio's bound from ``floors`` (ratios without an entry get none)."""
    for r in report.ratios:
        bound = floors.get((r.stage, r.name))
        r.floor, r.kind, r.advisory = bound if bound is not None else (None, "min", False)
