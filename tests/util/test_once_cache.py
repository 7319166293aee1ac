"""OnceCache: one make per key across threads, errors forgotten, least-recently-used eviction."""
from __future__ import annotations

import threading
import time

import pytest

from lstm_data._util.once_cache import OnceCache


def test_threads_asking_at_once_share_one_make():
    cache: OnceCache[int, list] = OnceCache(keep=2)
    calls = []
    gate = threading.Barrier(4)

    def make():
        calls.append(1)
        time.sleep(0.05)  # long enough for every other thread to ask meanwhile
        return ["plan"]

    got = []

    def ask():
        gate.wait()
        got.append(cache.get(3, make))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)
    assert cache.peek(3).done()


def test_a_failed_make_reaches_the_caller_and_is_made_again():
    cache: OnceCache[str, int] = OnceCache(keep=1)
    attempts = []

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise MemoryError("first try")
        return 7

    with pytest.raises(MemoryError, match="first try"):
        cache.get("k", flaky)
    assert cache.peek("k") is None
    assert cache.get("k", flaky) == 7 and len(attempts) == 2


def test_prepare_never_raises_and_get_raises_where_needed():
    cache: OnceCache[int, int] = OnceCache(keep=2)

    def broken():
        raise ValueError("bad order")

    cache.prepare(1, broken)  # a spare thread's work: no error here
    assert cache.peek(1) is None
    with pytest.raises(ValueError, match="bad order"):
        cache.get(1, broken)
    cache.prepare(2, lambda: 4)
    assert cache.get(2, lambda: pytest.fail("made twice")) == 4


def test_least_recently_used_entries_leave_first():
    cache: OnceCache[int, int] = OnceCache(keep=2)
    cache.get(0, lambda: 0)
    cache.get(1, lambda: 1)
    cache.get(0, lambda: pytest.fail("0 was cached"))  # 0 is now the most recent
    cache.get(2, lambda: 2)
    assert cache.peek(1) is None and cache.peek(0) is not None and cache.peek(2) is not None
    with pytest.raises(ValueError, match="keep"):
        OnceCache(keep=0)


def test_discard_forgets_a_key_and_the_next_get_makes_it_again():
    cache: OnceCache[int, list] = OnceCache(keep=3)
    first = cache.get(1, lambda: ["a"])
    cache.discard(1)
    cache.discard(2)  # absent: nothing happens
    assert cache.peek(1) is None
    again = cache.get(1, lambda: ["b"])
    assert first == ["a"] and again == ["b"]
