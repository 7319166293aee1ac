"""Declared option objects: checked names with suggestions, dict and TOML round trips.

Each concern of the library (what a batch looks like, how rows are ordered, how
data is read) has one frozen dataclass of options. This module gives them the
shared parts: an unknown or misspelt name is an :class:`~lstm_data.errors.OptionError`
that names it and the close match, values are checked when the object is made,
and :meth:`DeclaredOptions.to_dict` / :meth:`DeclaredOptions.from_dict` /
:meth:`DeclaredOptions.to_toml` / :meth:`DeclaredOptions.from_toml` round-trip
every setting that differs from its default.
"""
from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import os
from typing import Any, Callable, ClassVar, Iterable, Mapping, TypeVar

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data.errors import OptionError

__all__ = ["DeclaredOptions", "suggest", "unknown_option", "toml_text", "read_toml_table"]

T = TypeVar("T", bound="DeclaredOptions")


def suggest(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices``, or ``""``."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_option(name: str, choices: Iterable[str], where: str) -> OptionError:
    """The error for option ``name``, unknown to ``where``, which takes ``choices``."""
    known = sorted(choices)
    return OptionError(f"{where}: unknown option {name!r}{suggest(name, known)}; "
                       f"it takes {', '.join(known) or 'no options'}")


class SuggestsKeywords(type):
    """Metaclass of the public classes users build by keyword: a keyword the class does not take is
    an :class:`~lstm_data.errors.OptionError` naming the close one (``Order(batchsize=...)``: did you
    mean ``'batch_size'``?), where Python's own ``TypeError`` would name none. It is a
    ``TypeError`` too, with Python's own words first."""

    @property
    def __signature__(cls) -> inspect.Signature:
        """The class's own signature (its ``__init__`` without ``self``), not this ``__call__``'s."""
        sig = inspect.signature(cls.__init__)  # type: ignore[misc]
        return sig.replace(parameters=list(sig.parameters.values())[1:], return_annotation=inspect.Signature.empty)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            taken = _keywords_of(cls)
            if taken is not None:
                for name in kwargs:
                    if name not in taken:
                        raise OptionError(f"{cls.__name__}() got an unexpected keyword argument {name!r}"
                                          f"{suggest(name, taken)}; it takes {', '.join(sorted(taken))}")
        return super().__call__(*args, **kwargs)


def _keywords_of(cls: type) -> frozenset[str] | None:
    """The keywords ``cls(...)`` takes, or ``None`` when its ``__init__`` takes any (``**kwargs``)."""
    if "_taken_keywords" in cls.__dict__:
        cached: frozenset[str] | None = cls.__dict__["_taken_keywords"]
        return cached
    params = inspect.signature(cls.__init__).parameters.values()  # type: ignore[misc]
    found = None if any(p.kind is p.VAR_KEYWORD for p in params) else frozenset(
        p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self")
    type.__setattr__(cls, "_taken_keywords", found)
    return found


class DeclaredOptions(metaclass=SuggestsKeywords):
    """Base of the option dataclasses (frozen, keyword-only).

    A subclass declares its fields with :func:`dataclasses.field` and, for each
    field that needs it, a checker in :attr:`CHECKS` (name -> function of the
    value that returns the normalised value or raises :class:`OptionError`).
    ``TOML_TABLE`` names the table the options live in inside a TOML file, so one
    file can hold a spec, an order and reader options side by side.
    """

    TOML_TABLE: ClassVar[str] = ""
    # set by @dataclass on each subclass; declared so that type checkers see a dataclass
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    CHECKS: ClassVar[Mapping[str, Callable[[Any], Any]]] = {}

    def __post_init__(self) -> None:
        for name, check in self.CHECKS.items():
            value = getattr(self, name)
            if value is not None:
                try:
                    object.__setattr__(self, name, check(value))
                except OptionError:
                    raise
                except (TypeError, ValueError) as exc:
                    raise OptionError(f"{type(self).__name__}.{name}: {exc}") from None

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Every option this object holds, in declaration order.

        Returns
        -------
        tuple of str
            The option names.
        """
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def check_names(cls, names: Iterable[str], where: str | None = None) -> None:
        """Raise :class:`OptionError` for the first of ``names`` this object does not hold.

        Parameters
        ----------
        names
            Option names to check.
        where
            What the names were given to, for the message (default: the class name).
        """
        known = cls.option_names()
        for name in names:
            if name not in known:
                raise unknown_option(name, known, where or cls.__name__)

    def replace(self: T, **changes: object) -> T:
        """A copy with some options changed (their names and values checked).

        Parameters
        ----------
        **changes
            Option name -> new value.

        Returns
        -------
        DeclaredOptions
            A new object of the same class.
        """
        self.check_names(changes)
        return dataclasses.replace(self, **changes)

    def changed(self) -> PlainDict:
        """The options whose value differs from the default.

        Returns
        -------
        dict
            Option name -> value.
        """
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            default = f.default if f.default is not dataclasses.MISSING else None
            if not _same(value, default):
                out[f.name] = value
        return out

    def to_dict(self) -> PlainDict:
        """The options that differ from their defaults, as plain TOML/JSON values.

        Returns
        -------
        dict
            Option name -> value (lists, numbers, strings, tables).
        """
        return {name: _plain(value, f"{type(self).__name__}.{name}")
                for name, value in self.changed().items()}

    @classmethod
    def from_dict(cls: type[T], data: PlainMapping, *, source: str | None = None) -> T:
        """The options of ``data``, in the form :meth:`to_dict` writes; names are checked.

        Parameters
        ----------
        data
            Option name -> value.
        source
            Where ``data`` came from (a file and table), for messages.

        Returns
        -------
        DeclaredOptions
            A new object of this class.
        """
        where = source or cls.__name__
        if not isinstance(data, Mapping):
            raise OptionError(f"{where}: options must be a table, got {type(data).__name__}")
        cls.check_names(data, where)
        try:
            return cls(**dict(data))
        except OptionError as exc:  # named with where the options came from
            if source is None:
                raise
            raise OptionError(f"{where}: {exc}") from None

    def to_toml(self) -> str:
        """The ``[TOML_TABLE]`` table of the options that differ from their defaults.

        Returns
        -------
        str
            TOML text that :meth:`from_toml` reads back.
        """
        return toml_text({self.TOML_TABLE: self.to_dict()})

    @classmethod
    def from_toml(cls: type[T], path: str | os.PathLike[str]) -> T:
        """The options in table ``[TOML_TABLE]`` of a TOML file (defaults where absent).

        Parameters
        ----------
        path
            The TOML file; it may also hold a spec's and other options' tables.

        Returns
        -------
        DeclaredOptions
            A new object of this class.
        """
        return cls.from_dict(read_toml_table(path, cls.TOML_TABLE),
                             source=f"{os.fspath(path)} [{cls.TOML_TABLE}]")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b) and type(a) is type(b) or (a is None and b is None)
    except (TypeError, ValueError):  # arrays
        return False


def _plain(value: Any, what: str) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, what) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v, what) for k, v in value.items()}
    raise OptionError(f"{what}: a {type(value).__name__} cannot be written to TOML or JSON; "
                      "give it in a form that can (a name, a number or a list)")


def read_toml_table(path: str | os.PathLike[str], table: str) -> PlainDict:
    """Table ``table`` of the TOML file ``path`` (``{}`` when the file has none), read within
    the bounds of :mod:`lstm_data._util.spec_files`."""
    from lstm_data._util.spec_files import load_toml

    data = load_toml(path, OptionError)
    found = data.get(table, {})
    if not isinstance(found, dict):
        raise OptionError(f"{os.fspath(path)}: [{table}] must be a table")
    return found


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise OptionError(f"cannot write a {type(value).__name__} to TOML")


def _toml_key(key: str) -> str:
    bare = key and all(c.isalnum() or c in "-_" for c in key)
    return key if bare else _toml_value(key)


def toml_text(tables: Mapping[str, Any], prefix: str = "") -> str:
    """TOML text of nested ``tables``: plain values first, then one ``[a.b]`` table per mapping.

    ``None`` values are left out (TOML has no null; every option's default is its absence).
    """
    plain = [(k, v) for k, v in tables.items() if not isinstance(v, Mapping) and v is not None]
    nested = [(k, v) for k, v in tables.items() if isinstance(v, Mapping)]
    lines = [f"[{prefix}]"] if prefix and (plain or not nested) else []
    lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in plain]
    text = "\n".join(lines) + ("\n" if lines else "")
    for key, sub in nested:
        name = f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key)
        text += ("\n" if text else "") + toml_text(sub, name)
    return text
