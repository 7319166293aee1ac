"""Counts in messages and reports: ``1 batch``, ``2 batches``."""
from __future__ import annotations

__all__ = ["counted"]

#: nouns whose plural is not the noun + ``s``
_IRREGULAR = {"batch": "batches", "entry": "entries", "index": "indices"}


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``"{n} {noun}"`` with the noun's plural unless ``n`` is one.

    Parameters
    ----------
    n
        The count.
    noun
        Its singular (``"batch"``; the last word is what takes the plural: ``"prong variable"``).
    plural
        Its plural when neither :data:`_IRREGULAR` nor ``noun + "s"`` spells it.
    """
    if n == 1:
        return f"{n} {noun}"
    head, _, last = noun.rpartition(" ")
    last = plural or _IRREGULAR.get(last, last + "s")
    return f"{n} {head + ' ' if head else ''}{last}"
