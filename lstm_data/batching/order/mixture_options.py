"""The options of the ``mixture`` policy: its proportions and schedule, and its sources' rows.

Read by :func:`~lstm_data.batching.order.mixture.make_mixture`; every bad value is an
:class:`~lstm_data.errors.OptionError` naming its key (``policies.mixture.schedule[1].step``).
"""
from __future__ import annotations

import fnmatch
import math
import os
from fractions import Fraction
from typing import Mapping, Sequence

import numpy as np

from lstm_data.batching.order.registry import PlanContext
from lstm_data.errors import OptionError

__all__ = ["WHERE", "proportions", "schedule_of", "file_sources", "column_sources", "integers"]

#: where the options are, as errors name them
WHERE = "policies.mixture"


def proportions(value: object, where: str) -> dict[str, Fraction]:
    """Source -> proportion (exact) of the table ``value`` at ``where``."""
    if not isinstance(value, Mapping) or not value:
        raise OptionError(f"{where} must be a table of source -> proportion, got {value!r}")
    out: dict[str, Fraction] = {}
    for name, p in value.items():
        if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) \
                or not math.isfinite(float(p)) or p < 0:
            raise OptionError(f"{where}[{str(name)!r}]: a proportion must be a finite number >= 0, got {p!r}")
        out[str(name)] = Fraction(repr(float(p))) if isinstance(p, (float, np.floating)) else Fraction(int(p))
    if sum(out.values()) <= 0:
        raise OptionError(f"{where}: the proportions must sum to a positive number, got {dict(value)!r}")
    return out


def schedule_of(options: Mapping[str, object]) -> list[tuple[int, dict[str, Fraction]]]:
    """``[(step, proportions), ...]`` of ``weights`` (from step 0) or ``schedule``."""
    weights, schedule = options.get("weights"), options.get("schedule")
    if (weights is None) == (schedule is None):
        raise OptionError(f"{WHERE}: give either weights (fixed proportions) or schedule (a list of "
                          f"[step, proportions]), not {'both' if weights is not None else 'neither'}")
    if weights is not None:
        return [(0, proportions(weights, f"{WHERE}.weights"))]
    if not isinstance(schedule, (list, tuple)) or not schedule:
        raise OptionError(f"{WHERE}.schedule must be a non-empty list of [step, proportions], got {schedule!r}")
    out: list[tuple[int, dict[str, Fraction]]] = []
    for i, entry in enumerate(schedule):
        where = f"{WHERE}.schedule[{i}]"
        if isinstance(entry, Mapping) and set(entry) == {"step", "weights"}:
            step, props = entry["step"], entry["weights"]
        elif isinstance(entry, (list, tuple)) and len(entry) == 2:
            step, props = entry
        else:
            raise OptionError(f"{where} must be [step, proportions] or {{step, weights}}, got {entry!r}")
        if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
            raise OptionError(f"{where}.step must be an int >= 0, got {step!r}")
        if i == 0 and step != 0:
            raise OptionError(f"{where}.step: the schedule must start at step 0, got {step!r}")
        if out and step <= out[-1][0]:
            raise OptionError(f"{where}.step: steps must increase, got {step!r} after {out[-1][0]!r}")
        out.append((int(step), proportions(props, f"{where}.weights")))
    return out


def file_sources(context: PlanContext, names: Sequence[str]) -> list[np.ndarray]:
    """The view positions of each source named by a file's index or a glob of its path."""
    view = context.rows
    bounds = view.file_bounds
    bounds = np.asarray([0, len(view.dataset)] if bounds is None else bounds, dtype=np.int64)
    n_files = len(bounds) - 1
    paths = list(getattr(view.dataset, "source", ()) or ())
    paths = paths if len(paths) == n_files else [str(i) for i in range(n_files)]
    file_of = np.searchsorted(bounds, view.row_numbers(), side="right") - 1
    taken: dict[int, str] = {}
    out = []
    for name in names:
        files = [i for i, path in enumerate(paths) if name == str(i) or fnmatch.fnmatch(path, name)
                 or fnmatch.fnmatch(os.path.basename(path), name)]
        if not files:
            raise OptionError(f"{WHERE}: unknown source {name!r}: it names no file by index (0 .. "
                              f"{n_files - 1}) or glob; the files: {', '.join(paths)}")
        for f in files:
            if f in taken:
                raise OptionError(f"{WHERE}: file {paths[f]!r} is named by two sources, "
                                  f"{taken[f]!r} and {name!r}")
            taken[f] = name
        out.append(np.flatnonzero(np.isin(file_of, files)))
    return out


def column_sources(context: PlanContext, by: object, names: Sequence[str]) -> list[np.ndarray]:
    """The view positions of each source named by a value of the column ``by``."""
    if not isinstance(by, str):
        raise OptionError(f"{WHERE}.by must name a scalar column, got {by!r}")
    values = np.asarray(context.rows.column(by))
    out = []
    for name in names:
        try:
            wanted = float(name)
        except ValueError:
            raise OptionError(f"{WHERE}: unknown source {name!r}: the values of column {by!r} are "
                              f"numbers") from None
        rows = np.flatnonzero(values == wanted)
        if not len(rows):
            raise OptionError(f"{WHERE}: unknown source {name!r}: no row has {by} == {name}")
        out.append(rows)
    return out


def integers(props: Mapping[str, Fraction], names: Sequence[str]) -> tuple[int, ...]:
    """The proportions of ``names`` as integers of the same ratios."""
    values = [props.get(name, Fraction(0)) for name in names]
    scale = math.lcm(*(v.denominator for v in values))
    return tuple(int(v * scale) for v in values)
