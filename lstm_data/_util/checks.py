"""Argument checks shared by every layer: counts (seeds, epochs, workers), indices, and the
checks of option values (``Order``'s and ``ReadOptions``' fields)."""
from __future__ import annotations

from typing import Any, Callable, TypeVar

import numpy as np

from lstm_data.errors import OptionError

__all__ = ["check_count", "check_index", "option_check", "positive_int_option", "count_option", "flag_option",
           "text_option", "seconds_option"]

T = TypeVar("T")


def check_count(value: object, name: str) -> int:
    """``value`` as an int >= 0 (a seed or an epoch), or a ``ValueError`` naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")
    return int(value)


def check_index(index: object, n: int) -> int:
    """Batch ``index`` (negative counts from the end) as 0..n-1, or the error naming it."""
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"batch index must be an int, got {type(index).__name__}")
    if not -n <= index < n:
        raise IndexError(f"batch index {index} out of range for {n} batches")
    return int(index) % n


def _is_int(value: Any) -> bool:
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))


def option_check(name: str, ok: Callable[[Any], bool], convert: Callable[[Any], T],
                 want: str) -> Callable[[Any], T]:
    """The check of option ``name``: ``convert(value)`` where ``ok(value)``, else an
    :class:`~lstm_data.errors.OptionError` saying ``"<name> must <want>, got <value>"``."""
    def check(value: Any) -> T:
        if not ok(value):
            raise OptionError(f"{name} must {want}, got {value!r}")
        return convert(value)
    return check


def positive_int_option(name: str) -> Callable[[Any], int]:
    """The check of an option that is an int >= 1."""
    return option_check(name, lambda v: _is_int(v) and v >= 1, int, "be a positive int")


def count_option(name: str) -> Callable[[Any], int]:
    """The check of an option that is an int >= 0."""
    return option_check(name, lambda v: _is_int(v) and v >= 0, int, "be a count of 0 or more")


def flag_option(name: str) -> Callable[[Any], bool]:
    """The check of an option that is true or false."""
    return option_check(name, lambda v: isinstance(v, (bool, np.bool_)), bool, "be true or false")


def text_option(name: str, want: str = "be a non-empty string") -> Callable[[Any], str]:
    """The check of an option that is a non-empty string (``want`` says which)."""
    return option_check(name, lambda v: isinstance(v, str) and bool(v), str, want)


def seconds_option(name: str) -> Callable[[Any], float]:
    """The check of an option that is a finite number of seconds > 0."""
    return option_check(name, lambda v: not isinstance(v, (bool, np.bool_)) and isinstance(
        v, (int, float, np.integer, np.floating)) and 0 < float(v) < float("inf"), float,
        "be a positive number of seconds")
