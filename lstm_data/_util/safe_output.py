"""The one rule every writer follows before it replaces anything: never the input.

``precompute``, ``write_zarr`` / ``write_hdf5`` and ``lstm-data convert`` all write
to a temporary name and rename it over the target when complete. That protects the
target from a half-written output, but not the data being read: a target that is
one of the sources (``convert 'g/*.h5' g/all.h5`` run twice), holds one, or lies
inside one would be destroyed or read back into itself.

Temporary names (:func:`temp_path`) record the host and the process that writes
them: ``.out.h5.tmp-HOST-PID-XXXXXXXX`` (and ``.out.h5.old-HOST-PID-XXXXXXXX`` for
a replaced output on its way out). A writer that is killed leaves its temporary,
as large as the output, behind; :func:`remove_stale_temporaries`, called by every
writer before it starts, removes those of the same output whose process is gone.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path
from typing import Iterable

__all__ = ["check_not_input", "temp_path", "remove_stale_temporaries", "move_into_place", "remove_path",
           "spill_dir"]

#: ``lstm_data.cleanup``: what was removed for the user (the CLI shows it unless ``--quiet``)
_log = logging.getLogger("lstm_data.cleanup")
#: the siblings a writer makes: its output being written, the replaced one, shuffle spill files and
#: the parts of a distributed convert
_KINDS = ("tmp", "old", "shuffle", "parts")
#: seconds of clock slack when telling a reused PID from the writer that made a temporary
_START_SLACK = 2.0
#: temporaries this process handed out and still writes (others of this PID are leftovers)
_ACTIVE: set[str] = set()


def check_not_input(out: str | Path, sources: Iterable[str]) -> None:
    """Raise ``ValueError`` if ``out`` is, holds or lies inside one of ``sources``.

    Parameters
    ----------
    out
        The output path about to be written or replaced.
    sources
        The input files of the data being written (a dataset's ``source``);
        labels that are not paths never match.
    """
    target = Path(out).resolve()
    for src in sources:
        path = Path(src).resolve()
        if target == path or path.is_relative_to(target) or target.is_relative_to(path):
            raise ValueError(f"output {out} would overwrite the input data {src}; "
                             "choose another output")


def _host() -> str:
    """This host's name, as it goes into temporary names (``-`` and ``.`` kept)."""
    return re.sub(r"[^A-Za-z0-9.-]", "_", socket.gethostname()) or "localhost"


def temp_path(target: str | Path, kind: str = "tmp") -> Path:
    """A new hidden sibling of ``target`` for this process: ``.NAME.KIND-HOST-PID-XXXXXXXX``.

    Parameters
    ----------
    target
        The output.
    kind
        ``"tmp"`` (the output being written) or ``"old"`` (a replaced output
        being removed).
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    target = Path(target)
    path = target.with_name(f".{target.name}.{kind}-{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    _ACTIVE.add(str(path))
    return path


def _parse(name: str, target_name: str) -> tuple[str | None, int] | None:
    """``(host or None, pid)`` of a temporary name of ``target_name``, else ``None``.

    Besides :func:`temp_path`'s names, the forms of earlier versions are known:
    ``.NAME.tmp-PID-XXXXXXXX`` (dataset writers) and ``.NAME.tmp-PID`` (precompute),
    which record no host; they are taken as made on this host.
    """
    prefix = re.escape(f".{target_name}.")
    kinds = "|".join(_KINDS)
    m = re.fullmatch(rf"{prefix}(?:{kinds})-(?P<host>.+)-(?P<pid>\d+)-[0-9a-f]{{8}}", name)
    if m is None:
        m = re.fullmatch(rf"{prefix}(?:{kinds})-(?P<pid>\d+)(?:-[0-9a-f]{{8}})?", name)
    if m is None:
        return None
    return m.groupdict().get("host"), int(m.group("pid"))


def _boot_time() -> float | None:
    try:
        with open("/proc/stat") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return None


def _process_state(pid: int) -> tuple[str, float | None] | None:
    """``(state letter, start time in epoch seconds)`` from Linux's ``/proc``, else ``None``."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    boot = _boot_time()
    start = None if boot is None else boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return fields[0], start


def _writer_alive(pid: int, made_at: float) -> bool:
    """Whether process ``pid`` of this host may still be writing a file last changed at ``made_at``.

    Gone (or a zombie) is dead. A live process that started after the file's last
    change is a newer process that reuses the PID, so the writer is gone too.
    Anything uncertain counts as alive: a live writer's file is never removed.
    """
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        pass
    except OSError:
        return True
    state = _process_state(pid)
    if state is None:
        return True
    letter, start = state
    if letter in ("Z", "X"):
        return False
    return not (start is not None and start > made_at + _START_SLACK)


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size


def remove_stale_temporaries(target: str | Path) -> list[tuple[Path, int]]:
    """Remove the temporaries of ``target`` left by writers that are gone (killed, crashed).

    Only siblings named as :func:`temp_path` names them (or as earlier versions
    did) are considered, and only when their process ran on this host and is
    gone, or is this process, which no longer writes them (a failed write whose
    straggling threads or Dask tasks wrote on after its removal). A live process's temporary, or one made on another host (a shared file
    system: its PID means nothing here), is left alone. Each removal is logged
    at INFO on the ``lstm_data`` logger (``lstm-data -v`` shows it) with the
    file, its size and the PID; temporaries of other hosts are logged too.

    Parameters
    ----------
    target
        The output about to be written.

    Returns
    -------
    list of (path, bytes)
        What was removed.
    """
    target = Path(target)
    parent = target.parent if str(target.parent) else Path(".")
    try:
        siblings = [p for p in parent.iterdir() if p.name.startswith(f".{target.name}.")]
    except OSError:
        return []
    here, removed = _host(), []
    for path in sorted(siblings):
        parsed = _parse(path.name, target.name)
        if parsed is None:
            continue
        host, pid = parsed
        try:
            made_at, size = path.lstat().st_mtime, _size(path)
        except OSError:  # gone meanwhile (its writer finished)
            continue
        if host is not None and host != here:
            _log.info("left %s (%.1f MiB) alone: made by process %d on host %s, which this host "
                      "cannot check; remove it yourself if no process there writes %s", path,
                      size / 2**20, pid, host, target.name)
            continue
        ours_left = pid == os.getpid() and host is not None and str(path) not in _ACTIVE
        if not ours_left and _writer_alive(pid, made_at):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if not path.exists():
            removed.append((path, size))
            _log.info("removed %s (%.1f MiB): a temporary of %s left by process %d, which is "
                      "gone (killed or crashed)", path, size / 2**20, target.name, pid)
    return removed


def spill_dir(kind: str, parent: str | os.PathLike[str] | None = None) -> str:
    """A new directory ``lstm_data_KIND_HOST-PID-XXXXXXXX`` in ``parent`` (default: the system
    temp dir), for files one process shares with its workers.

    Its maker removes it at exit; one that was killed (``kill -9``) cannot, so the
    directories of this kind left by processes of this host that are gone are
    removed first (logged at INFO on ``lstm_data.cleanup``).
    """
    import tempfile

    parent = Path(parent or tempfile.gettempdir())
    prefix = f"lstm_data_{kind}_"
    try:
        found = [p for p in parent.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        found = []
    here = _host()
    for path in found:
        m = re.fullmatch(rf"{re.escape(prefix)}(?P<host>.+)-(?P<pid>\d+)-[^-]+", path.name)
        if m is None or m.group("host") != here:
            continue
        pid = int(m.group("pid"))
        try:
            made_at, size = path.lstat().st_mtime, _size(path)
        except OSError:
            continue
        if pid != os.getpid() and not _writer_alive(pid, made_at):
            shutil.rmtree(path, ignore_errors=True)
            if not path.exists():
                _log.info("removed %s (%.1f MiB): left by process %d, which is gone (killed or "
                          "crashed)", path, size / 2**20, pid)
    return tempfile.mkdtemp(prefix=f"{prefix}{here}-{os.getpid()}-", dir=parent)


def remove_path(path: str | Path, attempts: int = 5) -> None:
    """Remove a file or a directory tree, if it is there.

    A tree that a straggling writer thread still adds to is removed again, up to
    ``attempts`` times; what then remains is logged (the next writer to the same
    output removes it, see :func:`remove_stale_temporaries`).
    """
    path = Path(path)
    _ACTIVE.discard(str(path))
    for attempt in range(attempts):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            path.unlink(missing_ok=True)
        if not (path.exists() or path.is_symlink()):
            return
        time.sleep(0.05 * (attempt + 1))
    _log.warning("could not remove %s (still written to?); the next write of that output removes it",
                 path)


def move_into_place(tmp: str | Path, target: str | Path, *, replace: bool = True) -> None:
    """Rename the complete output ``tmp`` to ``target``.

    With ``replace``, an old ``target`` is moved aside first and removed only once
    the new one is in place, so ``target`` never names a partial output. Without
    it the rename is exclusive: if ``target`` exists (another process created it
    while this one wrote), nothing is replaced and ``FileExistsError`` says so.
    """
    from lstm_data._util.exclusive import rename_noreplace

    tmp, target = Path(tmp), Path(target)
    _ACTIVE.discard(str(tmp))
    if not replace:
        try:
            rename_noreplace(tmp, target)
        except FileExistsError:
            raise FileExistsError(errno.EEXIST, f"{target} was created by another process while "
                                  "this one wrote it; it was left as it is and this output was "
                                  "discarded (pass overwrite=True / --overwrite to replace it)",
                                  str(target)) from None
        return
    if target.exists():
        trash = temp_path(target, "old")
        os.replace(target, trash)
        os.replace(tmp, target)
        remove_path(trash)
    else:
        os.replace(tmp, target)
