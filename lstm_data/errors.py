"""Exception types raised by lstm_data.

Every error says what is wrong and where: file, line, column, variable, row, cell
or character offset, whichever apply.
"""
from __future__ import annotations

import os
import re
import sys
import warnings
from types import FrameType
from typing import Any, Callable, SupportsIndex

__all__ = ["ParseError", "SchemaError", "FormatError", "OptionError", "RemoteError", "MissingExtraError",
           "BrokenRowsWarning", "redact", "PrecisionWarning", "UncheckedStoreWarning", "SpecVersionWarning"]

_WHERE_KEYS = ("file", "line", "column", "variable", "row", "cell", "offset", "token")
#: characters of a bad token quoted in a message; a longer one is cut and its length given
TOKEN_QUOTE = 80


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#@]*@")
#: names of query parameters (and options) that carry secrets
SECRET_NAME = r"[^=&;#]*(?:token|key|secret|sig|pass|pwd|auth|credential|session|code)[^=&;#]*"
_SECRET_PARAM = re.compile(rf"([?&;]{SECRET_NAME}=)[^&;#]*", re.IGNORECASE)


def _redact_url(match: re.Match[str]) -> str:
    url = _USERINFO.sub(r"\g<1>***@", match.group(0))
    return _SECRET_PARAM.sub(r"\g<1>***", url)


def redact(text: object) -> str:
    """``str(text)`` with the credentials of every URL in it replaced by ``***``: the user
    information of ``scheme://user:password@host/...`` and the values of query parameters
    whose names carry secrets (``token``, ``key``, ``signature``, ``X-Amz-Credential``, ...).
    Every error of lstm_data shows its message and file through it."""
    text = str(text)
    return _URL_IN_TEXT.sub(_redact_url, text) if "://" in text else text


class _Located(ValueError):
    """A ``ValueError`` carrying where the problem was found.

    Parameters
    ----------
    message
        What is wrong.
    **where
        Any of ``file``, ``line``, ``column``, ``variable``, ``row``, ``cell``,
        ``offset`` and ``token``. They become attributes (``None`` when not given)
        and are appended to the message. A token longer than :data:`TOKEN_QUOTE`
        characters is kept and quoted cut to that many, with its length
        (``token_length``; a reader that cut it already passes ``token_length``).
    """

    # set in ``__init__`` from the location keys (``None`` when not given); declared for type checkers
    file: str | os.PathLike[str] | None
    line: int | None
    column: int | None
    variable: str | None
    row: int | None
    cell: int | None
    offset: int | None
    token: str | bytes | None

    def __init__(self, message: str, **where: object) -> None:
        given = where.pop("token_length", None)
        length = given.__index__() if isinstance(given, SupportsIndex) else None
        unknown = set(where) - set(_WHERE_KEYS)
        if unknown:
            raise TypeError(f"unknown location keys {sorted(unknown)}")
        for key in _WHERE_KEYS:
            setattr(self, key, where.get(key))
        token = self.token
        if isinstance(token, (str, bytes)) and (len(token) > TOKEN_QUOTE or length is not None):
            length = max(len(token), length or 0)
            self.token = token[:TOKEN_QUOTE]
        #: the bad token's full length when ``token`` holds only its start
        self.token_length: int | None = length if length is not None and length > TOKEN_QUOTE else None
        if isinstance(self.file, str):
            self.file = redact(self.file)
        self.message = redact(message)
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        for k in _WHERE_KEYS:
            value = getattr(self, k)
            if value is None:
                continue
            if k == "token" and self.token_length is not None:
                parts.append(f"token {value!r}... ({self.token_length} long, the first {len(value)} shown)")
            else:
                parts.append(f"{k} {value!r}" if k == "token" else f"{k} {value}")
        return f"{self.message} ({', '.join(parts)})" if parts else self.message

    def _fields(self) -> dict[str, Any]:
        fields = {k: getattr(self, k) for k in _WHERE_KEYS if getattr(self, k) is not None}
        if self.token_length is not None:
            fields["token_length"] = self.token_length
        return fields

    def located(self, **where: object) -> "_Located":
        """A copy of this error with more location fields filled in.

        Parameters
        ----------
        **where
            Location keys (``file``, ``line``, ``column``, ...) -> value; ``None`` values
            are ignored.

        Returns
        -------
        _Located
            An error of the same class and message.
        """
        fields = self._fields()
        fields.update({k: v for k, v in where.items() if v is not None})
        return type(self)(self.message, **fields)

    def __reduce__(self) -> tuple[Callable[..., _Located], tuple[type[_Located], str, dict[str, Any]]]:
        return (_rebuild, (type(self), self.message, self._fields()))


def _rebuild(cls: type[_Located], message: str, fields: dict[str, Any]) -> _Located:
    return cls(message, **fields)


class ParseError(_Located):
    """A token or a line of text input could not be read as numbers.

    Parameters
    ----------
    message
        What is wrong, in words a user can act on.
    **where
        Where it was found: any of ``file``, ``line``, ``column``, ``variable``,
        ``row``, ``cell``, ``offset`` and ``token`` (see the attributes of the same
        names, ``None`` when not given); they are appended to the message.
    """


class SchemaError(_Located):
    """Columns, groups or variables do not match what was declared or expected.

    Parameters
    ----------
    message, **where
        As for :class:`ParseError`: what is wrong, and where it was found.
    """


class FormatError(_Located):
    """A file is not in a format lstm_data can read, or it is damaged.

    Parameters
    ----------
    message, **where
        As for :class:`ParseError`: what is wrong, and where it was found.
    """


class OptionError(TypeError, ValueError):
    """An option that does not exist, does not apply where it was given, or has a bad value.

    The message names the option and where it was given, and suggests the close
    match for a misspelt name. It is a ``TypeError`` (as Python's own "unexpected
    keyword argument") and a ``ValueError`` (as a bad value), so code catching
    either keeps working.
    """


class RemoteError(OSError):
    """A file or store at a URL could not be read: the server failed, not the data.

    No server, no answer in time, an HTTP error status, a connection closed before the
    end of an answer. The message names the URL (without credentials, see :func:`redact`)
    and what happened.
    Subclasses are also the built-in error of the case: ``FileNotFoundError`` (HTTP 404),
    ``PermissionError`` (401, 403), ``TimeoutError``, ``ConnectionError``. A server that
    answers with other bytes than those asked is a :class:`FormatError` naming the URL.

    Parameters
    ----------
    message
        What happened, naming the URL.
    url
        The URL (kept without credentials as :attr:`url`).

    Attributes
    ----------
    url : str or None
        The URL, without credentials.
    status : int or None
        The HTTP status of the answer, when an answer said what went wrong.
    """

    url: str | None
    #: the HTTP status of the answer, when an answer said what went wrong
    status: int | None = None

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(redact(message))
        self.url = None if url is None else redact(url)


class MissingExtraError(ImportError):
    """An optional dependency is not installed: the message names the extra that installs it.

    It is an ``ImportError`` (code catching that keeps working); the command line shows
    it as one line, ``pip install 'lstm_data[EXTRA]'``, and exits with status 2.

    Parameters
    ----------
    message
        What needs the missing modules, and the install command.
    extra
        The ``lstm_data`` extra that installs them (``"parquet"``).

    Attributes
    ----------
    extra : str
        The extra to install.
    """

    extra: str

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra

    @property
    def install(self) -> str:
        """The command that installs the extra: ``pip install 'lstm_data[EXTRA]'``."""
        return f"pip install 'lstm_data[{self.extra}]'"


class PrecisionWarning(UserWarning):
    """Numbers that the float dtype asked for does not hold exactly.

    Above 2**24 in float32 and 2**53 in float64 not every integer has a float: every
    reader and batch building warn once per column, naming the column and the first
    value changed. A spec's fill value (a ``pad_value``, ``nan_to``) that its field's
    dtype holds only rounded warns naming the key, the field and the value held.
    """


class UncheckedStoreWarning(UserWarning):
    """A store opened whose damage cannot all be detected: it has no manifest.

    A precomputed batch store written before manifests (or by another tool) opens
    with this warning, which names the store and what is not checked there (chunks
    moved, swapped or copied from elsewhere read as other numbers; edited metadata
    goes unnoticed). ``ReadOptions(trust_unchecked=True)`` opens it without.
    """


class SpecVersionWarning(FutureWarning):
    """A spec file without ``version``: read as spec format 1, whose ragged fields pad with NaN.

    Such a file keeps the meaning it was written with (lstm_ee's NaN padding), but NaN
    reaches a model silently. Loading one warns once, naming the file and the fields
    padded with NaN: add ``version = 2`` at its top for 0.0 padding, or write
    ``pad_value = nan`` in those fields to keep NaN and say so.
    """


class BrokenRowsWarning(UserWarning):
    """Data that reads, but whose shape suggests a few broken rows (e.g. one extra value)."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning]) -> None:
    """Warn at the first caller outside lstm_data: the user's line, whatever the call depth.

    ``warnings.warn`` needs a fixed ``stacklevel``, which is wrong as soon as a
    reader is reached through ``open``, ``Batches`` or the CLI; Python 3.11 has
    no ``skip_file_prefixes``. So the frames inside the package are counted.
    """
    level = 2  # warnings.warn counts warn_user as 1, its caller as 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
