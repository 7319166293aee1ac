"""Named types of the values the package passes on without typing them further.

Public signatures name these rather than ``typing.Any``, so that what a value is
stays written where it is taken or returned.
"""
from __future__ import annotations

from typing import Any, Mapping, TypeAlias

__all__ = ["PlainValue", "PlainDict", "PlainMapping", "Forwarded"]

#: a plain value: a str, int, float, bool or None, or a list or table of them (what TOML and
#: JSON hold, and a saved state, a store's record or an option's dict form)
PlainValue: TypeAlias = Any
#: a table of plain values: the dict form of a spec or of options, a saved state, a store's record
PlainDict: TypeAlias = dict[str, PlainValue]
#: a read-only table of plain values (what ``from_dict`` and ``load_state_dict`` take)
PlainMapping: TypeAlias = Mapping[str, PlainValue]
#: a keyword option handed on unchanged to the function that types and checks it (a reader's, a
#: writer's): named, typed and documented there
Forwarded: TypeAlias = Any
