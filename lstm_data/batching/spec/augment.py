"""Deterministic noise on the inputs of a batch, declared in the spec (applied by
:mod:`lstm_data.batching.building.noise`).

``BatchSpec(augment={"png.calE": {"gaussian": 0.05}, "calE": {"relative": 0.1}})``
adds noise to those input variables each time a batch is built:

* ``gaussian = sigma``: ``x + sigma * z``;
* ``relative = sigma``: ``x * (1 + sigma * z)`` (lstm_ee-style scale noise),

with ``z`` a standard normal number drawn for each ``(seed, epoch, row, element,
variable)``: ``seed`` is the order's seed, ``row`` the dataset row, ``element``
the position of the element in its row as output (0 for a scalar). The numbers
come from a counter-based hash (SplitMix64 over the whole batch at once, then
Box-Muller in float32 on two 24-bit uniforms of one 64-bit hash; about 16 ns per
value), not from a random stream, so a batch has the same noise whichever
thread, process, shard or resumed run builds it, and other noise in every epoch.

Noise goes to real elements only (never to padding, nor to the padded step of an
empty row) and to inputs only (never to targets), after every other step of the
build (standardisation, ``nan_to``): ``sigma`` is in the units of the output.
A NaN value stays NaN.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from lstm_data.errors import OptionError, SchemaError


__all__ = ["Noise", "NOISE_KINDS", "check_augment", "augment_to_dict", "refuse_augment"]

#: the kinds of noise, by the key that declares them
NOISE_KINDS = ("gaussian", "relative")



@dataclass(frozen=True)
class Noise:
    """One variable's noise: its ``kind`` (``"gaussian"`` or ``"relative"``) and ``sigma``."""

    kind: str
    sigma: float

    def to_dict(self) -> dict[str, float]:
        """The noise as its table, ``{kind: sigma}``.

        Returns
        -------
        dict
            One key.
        """
        return {self.kind: self.sigma}


def check_augment(value: Any, input_vars: Sequence[str]) -> dict[str, Noise] | None:
    """``augment`` checked: variable -> :class:`Noise`, or ``None`` when empty.

    Parameters
    ----------
    value
        ``{variable: {"gaussian": sigma}}`` (or ``"relative"``), or ``None``.
    input_vars
        The variables of the spec's inputs: only those can be augmented.

    Returns
    -------
    dict or None
        The declared noise by variable.

    Raises
    ------
    OptionError
        Not a table of tables, an unknown kind, two kinds for one variable, or a
        ``sigma`` that is not a finite number >= 0.
    SchemaError
        A variable that no input of the spec holds (naming it).
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise OptionError(f"augment must be a table of variable -> {{kind: sigma}}, got {value!r}")
    out: dict[str, Noise] = {}
    known = set(input_vars)
    for var, table in value.items():
        if isinstance(table, Noise):
            table = table.to_dict()
        if not isinstance(var, str) or not isinstance(table, Mapping) or len(table) != 1:
            raise OptionError(f"augment[{var!r}] must be one {{kind: sigma}} table with kind in "
                              f"{list(NOISE_KINDS)}, got {table!r}")
        ((kind, sigma),) = table.items()
        if kind not in NOISE_KINDS:
            raise OptionError(f"augment[{var!r}]: unknown noise {kind!r}; kinds: {list(NOISE_KINDS)}")
        if isinstance(sigma, bool) or not isinstance(sigma, (int, float, np.integer, np.floating)) \
                or not math.isfinite(sigma) or sigma < 0:
            raise OptionError(f"augment[{var!r}]: {kind} sigma must be a finite number >= 0, got {sigma!r}")
        if var not in known:
            raise SchemaError(f"augment: {var!r} is not a variable of any input of the spec (noise is "
                              "added to inputs only)", variable=var)
        out[var] = Noise(kind, float(sigma))
    return out or None


def augment_to_dict(augment: Mapping[str, Noise] | None) -> dict[str, dict[str, float]] | None:
    """``augment`` as plain tables (for TOML and JSON), or ``None``."""
    if not augment:
        return None
    return {var: noise.to_dict() for var, noise in augment.items()}


def refuse_augment(spec: Any, where: str) -> None:
    """Raise an :class:`OptionError` when ``spec`` declares noise that ``where`` cannot vary per epoch.

    A precomputed store holds one epoch's batches; stored noise would be the same
    in every epoch.
    """
    if getattr(spec, "augment", None):
        names = ", ".join(repr(v) for v in spec.augment)
        raise OptionError(
            f"{where}: the spec declares augment (noise on {names}), which differs in every epoch, but a "
            "precomputed store holds the batches of one epoch: its noise would repeat each epoch. "
            "Precompute with spec.replace(augment=None) and train on Batches with the augmenting spec, "
            "or leave augment out")
