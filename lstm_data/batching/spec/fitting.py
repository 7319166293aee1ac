"""``"auto"`` standardisation: centers and scales computed from the data, once.

A ``Standardize(center="auto", scale="auto")`` of a spec field is filled in by
:func:`fit_standardize` with weaver-core's rule (``AutoStandardizer``): over the
values of a variable (every prong of the sampled rows, NaN counted as 0),

- ``center`` is the median (``numpy.percentile(values, 50)``);
- ``scale`` is ``1 / max(p84 - median, median - p16)``, or 1 when that width is 0,

computed in the variable's own dtype as weaver-core does, so the same rows give
the same numbers. The rows are a seeded sample of ``fraction`` of the spec's
rows (after its ``selection``, derived variables included), read in one pass
in ascending order, a block of rows at a time; only the sampled values of the
``auto`` variables are kept (``fraction`` of those columns). A fitted spec holds
plain numbers, so training and inference read the same ones:
:func:`lstm_data.batching.spec.fit_file.fit_spec_file` writes them back into the spec file (a temporary file,
then a rename).
"""
from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol, TypeVar

import numpy as np

from lstm_data.batching.spec.plain import SpecParts
from lstm_data.errors import SchemaError

if TYPE_CHECKING:
    from lstm_data.batching.spec.fields import Field, Standardize
    from lstm_data.data.dataset import Dataset

__all__ = ["fit_standardize", "auto_parameters", "FIT_BLOCK"]

_log = logging.getLogger("lstm_data")

#: rows read per step of the fitting pass
FIT_BLOCK = 1 << 15
AUTO = "auto"


class FittableSpec(SpecParts, Protocol):
    """What fitting reads of a spec (``BatchSpec`` has it all): its parts, and these methods."""

    def fields(self) -> Iterable[tuple[str, str, Field]]: ...

    def derive(self, dataset: Dataset) -> Dataset: ...

    def replace(self, **changes: Any) -> Any: ...


#: the spec type fitted and returned
S = TypeVar("S", bound=FittableSpec)


def _is_auto(std: Standardize) -> bool:
    return bool(std.center == AUTO or std.scale == AUTO)


def auto_variables(spec: FittableSpec) -> list[str]:
    """Every variable with an ``"auto"`` parameter, in the spec's order, each once."""
    out: dict[str, None] = {}
    for _, _, fld in spec.fields():
        for var, std in (getattr(fld, "standardize", None) or {}).items():
            if _is_auto(std):
                out.setdefault(var)
    return list(out)


def auto_parameters(values: np.ndarray, name: str = "variable") -> tuple[float, float]:
    """weaver-core's automatic ``(center, scale)`` of ``values``.

    Parameters
    ----------
    values
        Every value of the variable (any shape; NaN counts as 0, with a warning in the log).
    name
        The variable, named in messages.

    Returns
    -------
    center, scale : float
        The median, and 1 over the larger distance from it to the 16th and 84th
        percentiles (1 when both are 0).

    Raises
    ------
    SchemaError
        There are no values.
    """
    a = np.asarray(values).reshape(-1)
    if a.size == 0:
        raise SchemaError(f"cannot compute 'auto' standardisation of {name!r}: the sampled rows hold "
                          "no values of it (raise fraction=)", variable=name)
    if a.dtype.kind == "f" and np.isnan(a).any():
        _log.warning("auto standardisation: %s holds NaN, counted as 0 (as weaver-core does)", name)
        a = np.nan_to_num(a)
    low, center, high = np.percentile(a, [16, 50, 84])
    scale = max(high - center, center - low)
    scale = 1 if scale == 0 else 1.0 / scale
    return float(center), float(scale)


def sample_rows(n_rows: int, fraction: float, seed: int) -> np.ndarray:
    """Ascending rows: a seeded sample of ``fraction`` of ``n_rows`` (at least one row)."""
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1) or isinstance(fraction, bool):
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    if fraction >= 1:
        return np.arange(n_rows, dtype=np.intp)
    take = min(n_rows, max(1, int(round(fraction * n_rows))))
    rows = np.random.default_rng(seed).choice(n_rows, size=take, replace=False)
    return np.sort(rows).astype(np.intp)


def fit_standardize(spec: S, dataset: Dataset, *, fraction: float = 0.1, seed: int = 0) -> S:
    """``spec`` with every ``"auto"`` center and scale computed from ``dataset``.

    Parameters
    ----------
    spec
        A spec with ``Standardize(center="auto", ...)`` entries (others are kept).
    dataset
        The training data (the spec's derived variables and selection apply).
    fraction
        The share of rows sampled, in (0, 1]; 1 reads every row.
    seed
        Seed of the row sample.

    Returns
    -------
    BatchSpec
        The same spec with numbers in place of ``"auto"`` (``spec`` itself when it has none).

    Raises
    ------
    SchemaError
        A variable is unknown to the data, or the sampled rows hold none of its values.
    ValueError
        ``fraction`` is outside (0, 1].
    """
    wanted = auto_variables(spec)
    if not wanted:
        return spec
    data = spec.derive(dataset)
    prong_of = {v: g for g, names in data.groups.items() for v in names}
    scalars = set(data.scalar_names)
    for var in wanted:
        if var not in prong_of and var not in scalars:
            raise SchemaError(f"'auto' standardisation of {var!r}: no such variable in the data", variable=var)
    if not len(data):
        what = f"the selection {spec.selection!r} keeps no row" if spec.selection else "the data has no row"
        raise SchemaError(f"'auto' standardisation of {wanted}: {what}", variable=wanted[0])
    rows = sample_rows(len(data), fraction, seed)
    groups = sorted({prong_of[v] for v in wanted if v in prong_of})
    pieces: dict[str, list[np.ndarray]] = {v: [] for v in wanted}
    for start in range(0, len(rows), FIT_BLOCK):  # one ascending pass over the sample
        block = rows[start:start + FIT_BLOCK]
        for g in groups:
            values, _ = data.ragged(g, block)
            names = data.groups[g]
            for v in wanted:
                if prong_of.get(v) == g:
                    pieces[v].append(np.array(values[:, names.index(v)]))
        for v in wanted:
            if v not in prong_of:
                pieces[v].append(np.asarray(data.scalar(v, block)))
    fitted = {v: auto_parameters(np.concatenate(p) if p else np.zeros(0), v) for v, p in pieces.items()}
    _log.info("auto standardisation from %d of %d rows: %s", len(rows), len(data),
              ", ".join(f"{v}: center={c:.6g}, scale={s:.6g}" for v, (c, s) in fitted.items()))
    fitted_spec: S = spec.replace(inputs=_filled(spec.inputs, fitted), targets=_filled(spec.targets, fitted))
    return fitted_spec


def _filled(fields: Mapping[str, Field], fitted: Mapping[str, tuple[float, float]]) -> dict[str, Field]:
    out: dict[str, Field] = {}
    for name, fld in fields.items():
        std = getattr(fld, "standardize", None) or {}
        if not any(_is_auto(s) for s in std.values()):
            out[name] = fld
            continue
        new = {}
        for var, s in std.items():
            if _is_auto(s):
                center, scale = fitted[var]
                s = dataclasses.replace(s, center=center if s.center == AUTO else s.center,
                                        scale=scale if s.scale == AUTO else s.scale)
            new[var] = s
        out[name] = dataclasses.replace(fld, standardize=new)
    return out
