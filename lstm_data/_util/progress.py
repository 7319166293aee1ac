"""Progress reporting for commands: a tqdm bar when tqdm is installed, plain lines otherwise."""
from __future__ import annotations

import importlib
import sys
import time
from typing import Protocol, cast

__all__ = ["ByteProgress"]


class _Bar(Protocol):
    """What :class:`ByteProgress` uses of a ``tqdm`` bar (tqdm ships no type information)."""

    total: float | None

    def update(self, n: float = 1) -> bool | None: ...

    def close(self) -> None: ...


class ByteProgress:
    """A byte-counting progress reporter usable as ``callback(done, total)``.

    Uses ``tqdm`` when it is installed (``pip install lstm_data[progress]``);
    otherwise prints a line to stderr about every 10 % and says how to get a bar.

    Parameters
    ----------
    desc
        Label of the bar.
    enabled
        ``False`` prints nothing.
    """

    _hinted = False

    def __init__(self, desc: str, *, enabled: bool = True) -> None:
        self.desc = desc
        self.enabled = enabled
        self._bar: _Bar | None = None
        self._last_tenth = -1
        self._done = 0
        self._start = time.perf_counter()
        if not enabled:
            return
        try:
            tqdm = importlib.import_module("tqdm.auto").tqdm
        except ImportError:
            if not ByteProgress._hinted:
                print("(install tqdm for a progress bar: pip install 'lstm_data[progress]')",
                      file=sys.stderr)
                ByteProgress._hinted = True
            return
        self._bar = cast(_Bar, tqdm(desc=desc, unit="B", unit_scale=True, unit_divisor=1024,
                                    dynamic_ncols=True, leave=True, file=sys.stderr))

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            if self._bar.total != total:
                self._bar.total = total
            self._bar.update(max(0, done - self._done))
        else:
            tenth = int(10 * done / total) if total else 10
            if tenth != self._last_tenth:
                self._last_tenth = tenth
                print(f"{self.desc}: {min(100, tenth * 10)}% of {total / 2**20:.1f} MiB "
                      f"({time.perf_counter() - self._start:.1f} s)", file=sys.stderr)
        self._done = done

    def close(self) -> None:
        """Finish the bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "ByteProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

