"""What ``overwrite=True`` (``--overwrite``) may replace: only a store or file lstm_data wrote.

An existing output is replaced only when it is one of ours: a zarr store whose
root records our layout or a precomputed batch store, an HDF5 file in our
layout, a Parquet file with our schema metadata, or an empty directory. Anything
else (a directory of the user's files, a foreign store, a symbolic link) is
refused with a ``FileExistsError`` that says why, before anything is written.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from lstm_data.io.ours.layout import BATCH_STORE_ATTR, FORMAT_NAME

__all__ = ["why_not_ours", "check_replaceable", "check_target", "put_in_place"]

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _zarr_why_not(path: Path) -> str | None:
    meta = path / "zarr.json"
    if not meta.is_file():
        return "a directory that is not a zarr store (no zarr.json)"
    try:
        attrs = json.loads(meta.read_bytes()).get("attributes") or {}
    except (OSError, ValueError, AttributeError) as exc:
        return f"a zarr store whose zarr.json cannot be read ({type(exc).__name__})"
    if attrs.get("lstm_data_format") == FORMAT_NAME or BATCH_STORE_ATTR in attrs:
        return None
    return "a zarr store that lstm_data did not write (no lstm_data layout or batch record)"


def _hdf5_why_not(path: Path) -> str | None:
    import h5py

    try:
        with h5py.File(path, "r") as fh:
            fmt = fh.attrs.get("lstm_data_format")
    except Exception as exc:  # noqa: BLE001 - unreadable: not known to be ours
        return f"an HDF5 file that cannot be read ({type(exc).__name__})"
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    return None if fmt == FORMAT_NAME else "an HDF5 file that lstm_data did not write"


def _parquet_why_not(path: Path) -> str | None:
    try:
        import pyarrow.parquet as pq

        meta = pq.read_schema(path).metadata or {}
    except Exception as exc:  # noqa: BLE001 - no pyarrow, or unreadable
        return f"a Parquet file whose schema cannot be read ({type(exc).__name__})"
    return None if b"lstm_data" in meta else "a Parquet file that lstm_data did not write"


def why_not_ours(path: str | os.PathLike[str]) -> str | None:
    """``None`` when ``path`` is absent or an output lstm_data wrote (or an empty directory);
    else what it is, for the refusal message."""
    p = Path(path)
    if p.is_symlink():
        return "a symbolic link"
    if not p.exists():
        return None
    if p.is_dir():
        try:
            if not any(p.iterdir()):
                return None
        except OSError as exc:
            return f"a directory that cannot be listed ({exc.strerror})"
        return _zarr_why_not(p)
    if not p.is_file():
        return "not a regular file"
    try:
        with open(p, "rb") as fh:
            head = fh.read(8)
            fh.seek(-4, os.SEEK_END) if p.stat().st_size >= 8 else None
            tail = fh.read(4)
    except OSError as exc:
        return f"a file that cannot be read ({exc.strerror})"
    if head == _HDF5_SIGNATURE:
        return _hdf5_why_not(p)
    if head[:4] == b"PAR1" and tail == b"PAR1":
        return _parquet_why_not(p)
    return "a file that lstm_data did not write"


def check_replaceable(path: str | os.PathLike[str]) -> None:
    """Raise ``FileExistsError`` unless ``path`` is absent or may be replaced (see the module notes).

    Raises
    ------
    FileExistsError
        Naming the output and what it is.
    """
    why = why_not_ours(path)
    if why is not None:
        raise FileExistsError(f"{os.fspath(path)} exists and is {why}; --overwrite (overwrite=True) "
                              "replaces only a store or file that lstm_data wrote: remove it "
                              "yourself or choose another output")


def check_target(target: str | os.PathLike[str], overwrite: bool) -> None:
    """Before writing: ``target`` is absent, or ``overwrite`` is on and it is ours to replace.

    Raises
    ------
    FileExistsError
        ``target`` exists and ``overwrite`` is off, or it is not ours (see
        :func:`check_replaceable`).
    """
    if os.path.lexists(target):
        if not overwrite:
            raise FileExistsError(f"{os.fspath(target)} exists; pass overwrite=True (or --overwrite) "
                                  "to replace it")
        check_replaceable(target)


def put_in_place(tmp: str | os.PathLike[str], target: str | os.PathLike[str], overwrite: bool) -> None:
    """Rename the complete output ``tmp`` to ``target``: replacing only an output of ours, and only
    with ``overwrite``; without it, never replacing what another process created meanwhile."""
    from lstm_data._util.safe_output import move_into_place

    if overwrite:
        check_replaceable(target)  # again: it may have changed while the output was written
    move_into_place(Path(tmp), Path(target), replace=overwrite)
