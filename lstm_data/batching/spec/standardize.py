"""Per-variable :class:`Standardize` of a spec field, its checks, and its kernel arguments.

The output forms themselves (``Ragged``'s ``layout``) are classes of
:mod:`lstm_data.batching.spec.forms`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from lstm_data._util.types import PlainDict
from lstm_data.errors import SchemaError

__all__ = ["Standardize", "number_option", "AUTO", "check_standardize", "standardize_to_dict",
           "unresolved_auto", "column_transform", "apply_standardize"]

#: a ``Standardize`` center or scale to be computed from the data
AUTO = "auto"


def number_option(value: Any, name: str, where: str, *, auto: bool = False, nan: bool = False) -> float | str:
    """``value`` as a float (or ``"auto"`` when allowed), or the SchemaError naming it: a number
    (not a boolean), or a string a number is written as in TOML (``"nan"``, ``"inf"``)."""
    if auto and value == AUTO:
        return AUTO
    if isinstance(value, str):  # TOML keeps infinities and NaN as strings
        try:
            value = float(value)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        also = ' or "auto"' if auto else ""
        raise SchemaError(f"{where}: {name} must be a number{also}, got {value!r}")
    out = float(value)
    if math.isnan(out) and not nan:
        raise SchemaError(f"{where}: {name} must not be NaN")
    return out


@dataclass(frozen=True, init=False)
class Standardize:
    """How one variable's values are standardised when a batch is built.

    Each real value ``x`` becomes ``clip((x - center) * scale, clip_min, clip_max)``,
    computed in the output dtype (``center`` and ``scale`` are cast to it first, as
    weaver-core does in float32); NaN stays NaN. It is applied while the batch is
    gathered, in the same pass.

    Parameters
    ----------
    center, scale
        Finite numbers, or ``"auto"``: computed from the data by
        :func:`lstm_data.batching.spec.fitting.fit_standardize` (batches cannot be
        built before that).
    clip_min, clip_max
        Bounds of the result (default: none); ``clip_min <= clip_max``.
    pad_value
        Fill of this variable's padded slots in a ``Ragged`` field (default: the
        field's ``pad_value``).

    Raises
    ------
    SchemaError
        A parameter that is not a number (or ``"auto"``), a NaN or infinite center
        or scale, a NaN bound, or ``clip_min > clip_max``.
    """

    center: float | str = 0.0
    scale: float | str = 1.0
    clip_min: float = -math.inf
    clip_max: float = math.inf
    pad_value: float | None = None

    def __init__(self, center: float | str = 0.0, scale: float | str = 1.0, clip_min: float = -math.inf,
                 clip_max: float = math.inf, pad_value: float | None = None) -> None:
        where = "Standardize"
        c = number_option(center, "center", where, auto=True)
        s = number_option(scale, "scale", where, auto=True)
        for name, val in (("center", c), ("scale", s)):
            if val != AUTO and math.isinf(float(val)):
                raise SchemaError(f"{where}: {name} must be finite, got {val}")
        lo = float(number_option(clip_min, "clip_min", where))
        hi = float(number_option(clip_max, "clip_max", where))
        if lo > hi:
            raise SchemaError(f"{where}: clip_min ({lo}) > clip_max ({hi})")
        pad = None if pad_value is None else float(number_option(pad_value, "pad_value", where, nan=True))
        values: dict[str, float | str | None] = {"center": c, "scale": s, "clip_min": lo, "clip_max": hi,
                                                 "pad_value": pad}
        for key, value in values.items():
            object.__setattr__(self, key, value)

    @property
    def resolved(self) -> bool:
        """Neither ``center`` nor ``scale`` is ``"auto"``."""
        return self.center != AUTO and self.scale != AUTO

    @property
    def identity(self) -> bool:
        """The transform leaves values as they are (only ``pad_value`` may be set)."""
        return (self.center == 0.0 and self.scale == 1.0 and self.clip_min == -math.inf
                and self.clip_max == math.inf)

    def to_dict(self) -> PlainDict:
        """The options that differ from the defaults (infinities and NaN as strings).

        Returns
        -------
        dict
            A table of a spec file.
        """
        out: dict[str, Any] = {}
        for key, default in (("center", 0.0), ("scale", 1.0), ("clip_min", -math.inf),
                             ("clip_max", math.inf)):
            val = getattr(self, key)
            if val != default:
                out[key] = val if isinstance(val, str) or math.isfinite(val) else str(val)
        if self.pad_value is not None:
            out["pad_value"] = self.pad_value if math.isfinite(self.pad_value) else str(self.pad_value)
        return out

    def __eq__(self, other: object) -> bool:  # NaN pad values compare equal
        return isinstance(other, Standardize) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(sorted(self.to_dict().items())))

    def __repr__(self) -> str:
        return f"Standardize({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items())})"


def check_standardize(given: Any, vars: Sequence[str], where: str) -> dict[str, Standardize]:
    """A field's ``standardize`` as ``{variable: Standardize}``, every variable one of ``vars``.

    A value may be a :class:`Standardize` or its table (a mapping of its options).
    """
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise SchemaError(f"{where}: standardize must map variable names to Standardize, got {given!r}")
    out: dict[str, Standardize] = {}
    for var, std in given.items():
        if var not in vars:
            raise SchemaError(f"{where}: standardize names {var!r}, which is not one of the field's "
                              f"vars {list(vars)}", variable=str(var))
        if isinstance(std, Mapping):
            unknown = sorted(set(std) - {"center", "scale", "clip_min", "clip_max", "pad_value"})
            if unknown:
                raise SchemaError(f"{where}: standardize of {var!r}: unknown option(s) {unknown}; "
                                  "allowed: center, scale, clip_min, clip_max, pad_value", variable=var)
            try:
                std = Standardize(**std)
            except SchemaError as exc:
                raise SchemaError(f"{where}: standardize of {var!r}: {exc.message}", variable=var) from None
        if not isinstance(std, Standardize):
            raise SchemaError(f"{where}: standardize of {var!r} must be a Standardize, got {std!r}",
                              variable=var)
        out[var] = std
    return {v: out[v] for v in vars if v in out}  # in the field's variable order


def standardize_to_dict(std: Mapping[str, Standardize]) -> dict[str, dict[str, Any]]:
    """``{variable: table}`` of a field's ``standardize`` (for its spec file table)."""
    return {var: s.to_dict() for var, s in std.items()}


def unresolved_auto(std: Mapping[str, Standardize], output: str) -> None:
    """Raise the SchemaError of the first ``"auto"`` parameter left in ``std``.

    Raises
    ------
    SchemaError
        Naming the variable and how to compute its parameters.
    """
    for var, s in std.items():
        if not s.resolved:
            raise SchemaError(f"output {output!r}: standardize of {var!r} has center or scale 'auto', "
                              "not computed yet: compute it from the training data first, with "
                              "'lstm-data fit SPEC.toml --data PATH' (writes the numbers into the spec file) "
                              "or spec = spec.fit(dataset) in Python", variable=var)


def column_transform(std: Mapping[str, Standardize], vars: Sequence[str]) -> dict[str, np.ndarray] | None:
    """The kernel arguments ``center``, ``scale``, ``clip_min``, ``clip_max`` (float64, one
    per variable of ``vars``), or ``None`` when every transform is the identity."""
    if all(s.identity for s in std.values()):
        return None
    ident = Standardize()
    picked = [std.get(v, ident) for v in vars]
    return {key: np.array([float(getattr(s, key)) for s in picked], dtype=np.float64)
            for key in ("center", "scale", "clip_min", "clip_max")}


def apply_standardize(table: np.ndarray, params: Mapping[str, np.ndarray]) -> np.ndarray:
    """``table`` (2-D, a float dtype; changed in place) with :func:`column_transform`'s
    ``params`` applied per column, as the batch kernel applies them."""
    dt = table.dtype
    with np.errstate(over="ignore", invalid="ignore"):
        x = (table - params["center"].astype(dt)) * params["scale"].astype(dt)
        low, high = params["clip_min"].astype(dt), params["clip_max"].astype(dt)
        x = np.where(x < low, low, x)
        table[...] = np.where(x > high, high, x)
    return table
