"""The one way a renamed spelling keeps working: a ``DeprecationWarning`` naming the new one.

A keyword, attribute or command-line flag that was renamed (or moved to the
object that now owns its concern) is kept for one release. Every such spelling
goes through this module, so each says the same thing the same way::

    open_batches(shuffle=...) is deprecated: use permute=... (the old spelling is kept one release)

:func:`warn_renamed` says it; :func:`renamed_keywords` moves old keywords to their
new names (converting the value where the meaning was reshaped); :class:`RenamedAttribute`
keeps an old attribute name reading the new one; :class:`RenamedFlag` keeps an old
command-line flag working, hidden from ``--help``.
"""
from __future__ import annotations

import argparse
import warnings
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar, overload

__all__ = ["warn_renamed", "renamed_keywords", "Renamed", "RenamedAttribute", "RenamedFlag", "KEPT"]

#: how long an old spelling keeps working, said in every warning
KEPT = "the old spelling is kept one release"

T = TypeVar("T")


def warn_renamed(old: str, new: str, *, stacklevel: int = 2) -> None:
    """Warn that ``old`` is deprecated in favour of ``new`` (a ``DeprecationWarning``).

    Parameters
    ----------
    old, new
        The spellings as a user writes them (``"open_batches(shuffle=...)"``,
        ``"permute=..."``, ``"Order(read_ahead=...)"``, ``"--shuffle-seed"``).
    stacklevel
        As :func:`warnings.warn`'s, counted from the caller of this function.
    """
    warnings.warn(f"{old} is deprecated: use {new} ({KEPT})", DeprecationWarning, stacklevel=stacklevel + 1)


class Renamed:
    """An old keyword's new name, and how its value reads under the new name.

    Parameters
    ----------
    new
        The new keyword.
    convert
        Old value -> new value, where the meaning was reshaped (``compress=False``
        is ``compression=None``); ``None``: the value as it is.
    spelled
        How the warning names the new spelling (default ``"new=..."``).
    """

    def __init__(self, new: str, convert: Callable[[Any], Any] | None = None, spelled: str | None = None) -> None:
        self.new, self.convert = new, convert
        self.spelled = f"{new}=..." if spelled is None else spelled


def renamed_keywords(where: str, given: Mapping[str, Any], renames: Mapping[str, str | Renamed], *,
                     strict: bool = False, stacklevel: int = 2) -> dict[str, Any]:
    """``given`` with each old keyword of ``renames`` under its new name, warning once per old keyword.

    Parameters
    ----------
    where
        The function the keywords were given to, as the warning names it (``"open_batches"``).
    given
        The keywords of the call that may hold old spellings.
    renames
        Old keyword -> new keyword (or a :class:`Renamed`).
    strict
        ``given`` holds only old spellings (a function's ``**old`` keywords): any
        other keyword is a ``TypeError``, as Python says of an unknown keyword.
    stacklevel
        As :func:`warnings.warn`'s, counted from the caller of this function.

    Returns
    -------
    dict
        The keywords under their new names (those not renamed as they are).

    Raises
    ------
    TypeError
        An old keyword and its new one are both given (as Python says of a keyword
        given twice), or with ``strict`` a keyword that is no old spelling.
    """
    if strict:
        for name in given:
            if name not in renames:
                raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")
    out = dict(given)
    for old, rule in renames.items():
        if old not in out:
            continue
        rule = Renamed(rule) if isinstance(rule, str) else rule
        value = out.pop(old)
        if rule.new in out:
            raise TypeError(f"{where}() got both {old}= and {rule.new}= ({old} is the deprecated spelling of "
                            f"{rule.new}): give {rule.new} alone")
        warn_renamed(f"{where}({old}=...)", rule.spelled, stacklevel=stacklevel + 1)
        out[rule.new] = rule.convert(value) if rule.convert is not None else value
    return out


class RenamedAttribute(Generic[T]):
    """A class attribute that keeps an old attribute name reading (and writing) the new one.

    ``shuffle = RenamedAttribute[bool]("permute")`` in a class body makes ``obj.shuffle``
    warn and return ``obj.permute``.

    Parameters
    ----------
    new
        The attribute's new name, or a dotted path from the object (``"batches.seed"``).
    """

    def __init__(self, new: str) -> None:
        self.new = new
        self.old = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.old = name
        self.owner = owner.__name__

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> RenamedAttribute[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | RenamedAttribute[T]:
        if obj is None:
            return self
        warn_renamed(f"{self.owner}.{self.old}", f".{self.new}")
        value: Any = obj
        for part in self.new.split("."):
            value = getattr(value, part)
        result: T = value
        return result

    def __set__(self, obj: object, value: T) -> None:
        warn_renamed(f"{self.owner}.{self.old}", f".{self.new}")
        *path, last = self.new.split(".")
        target: Any = obj
        for part in path:
            target = getattr(target, part)
        setattr(target, last, value)


class RenamedFlag(argparse.Action):
    """An ``argparse`` action for an old flag: warns naming the new flag, then sets the new flag's value.

    ``parser.add_argument("--shuffle", action=RenamedFlag, new="--shuffle-seed",
    dest="shuffle_seed", type=int)`` keeps ``--shuffle 3`` working; ``nargs=0`` with
    ``const`` makes a flag without a value (``--no-compress`` is ``--compression none``).
    The flag is hidden from ``--help``.

    Parameters
    ----------
    option_strings, dest, nargs, const, type, metavar
        As for any ``argparse`` action.
    new
        The new flag as a user writes it (``"--compression none"``).
    """

    def __init__(self, option_strings: Sequence[str], dest: str, new: str, nargs: int | str | None = None,
                 const: Any = None, type: Callable[[str], Any] | None = None,  # noqa: A002 - argparse's name
                 metavar: str | None = None, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=nargs, const=const, type=type, metavar=metavar,
                         help=argparse.SUPPRESS, default=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        warn_renamed(option_string or self.option_strings[0], self.new, stacklevel=1)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
