"""Plain-text help: command docstrings (reST) as a terminal shows them, and close matches."""
from __future__ import annotations

import difflib
import re
from typing import Iterable

__all__ = ["plain_text", "close_matches"]

#: ``:role:`~a.b.Name``` and ``:role:`text <target>```: the name, or the text
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|ref|doc):`(?:([^`<]*?)\s*<[^`>]*>|~?([^`]*))`")


def _role(match: re.Match[str]) -> str:
    text, target = match.group(1), match.group(2)
    if text:
        return str(text)
    return str(target).rsplit(".", 1)[-1] if "~" in match.group(0) else str(target)


def plain_text(doc: str) -> str:
    """``doc`` (a module docstring in reST) as plain text: ``Examples::`` becomes ``Examples:``,
    double backticks and cross-reference roles go, the names stay.

    Parameters
    ----------
    doc
        The docstring.

    Returns
    -------
    str
        The text a terminal shows.
    """
    text = _ROLE.sub(_role, doc)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"\1", text)
    return re.sub(r"(\S)::[ \t]*$", r"\1:", text, flags=re.M)  # "Examples::" -> "Examples:"


def close_matches(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """The candidates ``word`` begins, then those close to it (``difflib.get_close_matches``),
    case-insensitively.

    Parameters
    ----------
    word
        What was given.
    candidates
        What exists.
    n
        At most this many.

    Returns
    -------
    list of str
        The candidates, as they are spelt.
    """
    by_lower: dict[str, str] = {}
    for c in candidates:
        by_lower.setdefault(c.lower(), c)
    low = word.lower()
    prefixed = [c for c in by_lower if c.startswith(low) and c != low]  # a flag or name cut short
    close = difflib.get_close_matches(low, list(by_lower), n=n, cutoff=0.6)
    return [by_lower[m] for m in dict.fromkeys(prefixed[:n] + close)][:n]
