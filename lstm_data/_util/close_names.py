"""Close matches of a name that is not there, across every column, dotted names included.

``difflib`` alone misses the usual slip: a short name (``calE``) asked of data whose
columns carry their table's path (NOvA's ``rec.slc.calE``). A column whose name
ends with ``.`` + the name is a match first (after the name in another case), then
``difflib``'s close names, then the columns whose last part is close to the name's last part.
"""
from __future__ import annotations

import difflib
from typing import Iterable, Sequence

__all__ = ["close_names", "did_you_mean"]


def close_names(name: str, known: Sequence[str], others: Iterable[str] = (), n: int = 3) -> list[str]:
    """The names of ``known`` (then of ``others``) that ``name`` probably meant.

    Parameters
    ----------
    name
        The name asked for.
    known
        The names of the kind asked for (the scalars, for a scalar), suggested first.
    others
        Every other column (prong variables, group names), suggested after.
    n
        At most this many.

    Returns
    -------
    list of str
        The matches, best first.
    """
    first = list(dict.fromkeys(known))
    pool = list(dict.fromkeys([*first, *others]))
    rank = {c: i for i, c in enumerate(pool)}
    low = name.lower()
    same = [c for c in pool if c != name and c.lower() == low]  # another case
    suffix = sorted((c for c in pool if c != name and c.lower().endswith("." + low)),
                    key=lambda c: (rank[c] >= len(first), not c.endswith("." + name), len(c)))
    close = _close(name, pool, n, 0.6)
    last = name.rsplit(".", 1)[-1]
    by_last: dict[str, list[str]] = {}
    for c in pool:
        by_last.setdefault(c.rsplit(".", 1)[-1], []).append(c)
    near = [c for m in _close(last, list(by_last), n, 0.75) for c in by_last[m] if c != name]
    return list(dict.fromkeys(same + suffix + close + near))[:n]


def _close(word: str, pool: list[str], n: int, cutoff: float) -> list[str]:
    """``difflib.get_close_matches``, ties kept in the order of ``pool`` (not reverse name order)."""
    scored = []
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(word)
    for i, c in enumerate(pool):
        matcher.set_seq1(c)
        if matcher.real_quick_ratio() >= cutoff and matcher.quick_ratio() >= cutoff:
            ratio = matcher.ratio()
            if ratio >= cutoff:
                scored.append((-ratio, i, c))
    return [c for _, _, c in sorted(scored)[:n]]


def did_you_mean(name: str, known: Sequence[str], others: Iterable[str] = ()) -> str:
    """``"; did you mean 'a', 'b'?"`` for :func:`close_names`, or ``""``."""
    close = close_names(name, known, others)
    return f"; did you mean {', '.join(map(repr, close))}?" if close else ""
