"""Temporary names and the removal of stale temporaries (issue 16, item 10)."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import time

import pytest

from lstm_data._util.safe_output import remove_stale_temporaries, temp_path


def dead_pid() -> int:
    """The PID of a real process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _host() -> str:
    """This host as temporary names record it."""
    return temp_path("x").name[len(".x.tmp-"):].rsplit("-", 2)[0]


def _make(path, size=1000):
    if path.name.endswith("zarr") or ".zarr." in path.name:
        path.mkdir()
        (path / "c").mkdir()
        (path / "c" / "0").write_bytes(b"\0" * size)
    else:
        path.write_bytes(b"\0" * size)
    return path


def test_temp_path_names_host_pid_and_kind(tmp_path):
    tmp = temp_path(tmp_path / "out.h5")
    assert tmp.parent == tmp_path and tmp.name.startswith(".out.h5.tmp-")
    host, pid, tag = tmp.name[len(".out.h5.tmp-"):].rsplit("-", 2)
    assert host and int(pid) == os.getpid() and len(tag) == 8
    assert temp_path(tmp_path / "out.h5", "old").name.startswith(".out.h5.old-")
    assert temp_path(tmp_path / "out.h5") != tmp
    with pytest.raises(ValueError, match="kind"):
        temp_path(tmp_path / "out.h5", "bak")


@pytest.mark.parametrize("target", ["out.h5", "out.zarr"])
def test_dead_writers_temporaries_are_removed_and_logged(tmp_path, caplog, target):
    pid = dead_pid()
    host = _host()
    stale = [_make(tmp_path / f".{target}.tmp-{host}-{pid}-0123abcd", 5000),
             _make(tmp_path / f".{target}.old-{host}-{pid}-0123abce"),
             _make(tmp_path / f".{target}.tmp-{pid}-89abcdef"),  # the form of earlier versions
             _make(tmp_path / f".{target}.tmp-{pid}")]  # earlier precompute
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        removed = remove_stale_temporaries(tmp_path / target)
    assert sorted(p for p, _ in removed) == sorted(stale)
    assert not any(p.exists() for p in stale)
    assert dict(removed)[stale[0]] == 5000
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("lstm_data")]
    assert len(logged) == 4
    assert any(str(stale[0]) in m and f"process {pid}" in m and "gone" in m for m in logged)


def test_live_and_foreign_temporaries_and_other_files_are_kept(tmp_path, caplog):
    pid = dead_pid()
    host = _host()
    kept = [_make(temp_path(tmp_path / "out.h5")),  # this process writes it now
            _make(tmp_path / f".out.h5.tmp-{os.getpid()}-0123abcd"),
            _make(tmp_path / f".out.h5.tmp-other-host-{pid}-0123abcd"),  # its PID means nothing here
            _make(tmp_path / f".out.h5.tmp-{host}-{pid}-notatag"),
            _make(tmp_path / f".out.h5.tmpfoo-{pid}"),
            _make(tmp_path / f"out.h5.tmp-{host}-{pid}-0123abcd"),  # not hidden: not ours
            _make(tmp_path / f".other.h5.tmp-{host}-{pid}-0123abcd"),  # another output
            _make(tmp_path / "out.h5")]
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        assert remove_stale_temporaries(tmp_path / "out.h5") == []
    assert all(p.exists() for p in kept)
    assert any("other-host" in r.getMessage() and "remove it yourself" in r.getMessage()
               for r in caplog.records)


def test_a_reused_pid_does_not_keep_a_temporary_forever(tmp_path):
    """A live process that started after the temporary last changed did not write it."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        host = _host()
        old = _make(tmp_path / f".out.h5.tmp-{host}-{sleeper.pid}-0123abcd")
        hour_ago = time.time() - 3600
        os.utime(old, (hour_ago, hour_ago))
        fresh = _make(tmp_path / f".out.h5.tmp-{host}-{sleeper.pid}-0123abce")  # changed now
        removed = remove_stale_temporaries(tmp_path / "out.h5")
        if not os.path.exists(f"/proc/{sleeper.pid}/stat"):
            pytest.skip("no /proc: start times unknown, a live PID always keeps its temporary")
        assert [p for p, _ in removed] == [old] and fresh.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_nothing_to_do_in_a_missing_directory(tmp_path):
    assert remove_stale_temporaries(tmp_path / "nowhere" / "out.h5") == []
