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
from lstm_data.io.plumbing.signatures import HDF5_SIGNATURE, PARQUET_MAGIC

__all__ = ["why_not_ours", "describe_output", "refusal", "check_replaceable", "check_target", "put_in_place"]


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
    if head == HDF5_SIGNATURE:
        return _hdf5_why_not(p)
    if head[:4] == PARQUET_MAGIC and tail == PARQUET_MAGIC:
        return _parquet_why_not(p)
    return "a file that lstm_data did not write"


def _entries(path: Path) -> str:
    """The first few names in a directory, for a message."""
    names = sorted(os.listdir(path))
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return f"{len(names)} {'entry' if len(names) == 1 else 'entries'} ({shown})"


def _root_attrs(path: Path) -> dict[str, object]:
    """A zarr store's root attributes (plain JSON), or an HDF5 file's; empty when unreadable."""
    try:
        if path.is_dir():
            return dict(json.loads((path / "zarr.json").read_bytes()).get("attributes") or {})
        import h5py

        with h5py.File(path, "r") as fh:
            return {k: fh.attrs[k] for k in fh.attrs}
    except Exception:  # noqa: BLE001 - described from what can be read
        return {}


def _ours(path: Path, kind: str) -> str:
    """What an output of ours holds: a batch store's batches, a dataset's rows."""
    attrs = _root_attrs(path)
    batches = attrs.get(BATCH_STORE_ATTR)
    if isinstance(batches, dict):
        n, size, seed = batches.get("n_batches"), batches.get("batch_size"), batches.get("seed")
        return (f"a batch store lstm_data precomputed ({n} batches of {size} rows, seed {seed}, "
                f"{batches.get('n_rows')} rows)")
    layout = attrs.get("lstm_data_layout")
    try:
        layout = json.loads(layout) if isinstance(layout, (str, bytes)) else layout
        rows = f" of {int(layout['n_rows'])} rows" if isinstance(layout, dict) else ""
    except (ValueError, KeyError, TypeError):
        rows = ""
    return f"{kind}{rows} that lstm_data wrote"


def describe_output(path: str | os.PathLike[str]) -> str:
    """What an existing output path is, in words, for a message about replacing it.

    Parameters
    ----------
    path
        The output.

    Returns
    -------
    str
        ``"nothing"`` when absent; else, e.g., ``"a batch store lstm_data precomputed (5
        batches of 1024 rows, seed 1, 5000 rows)"``, ``"an empty directory"``, ``"a directory
        that is not a zarr store (no zarr.json), holding 2 entries (notes.txt, sub)"``.
    """
    p = Path(path)
    if p.is_symlink():
        return f"a symbolic link to {os.readlink(p)}"
    if not p.exists():
        return "nothing"
    why = why_not_ours(p)
    if p.is_dir():
        try:
            if not any(p.iterdir()):
                return "an empty directory"
            if why is not None:
                return f"{why}, holding {_entries(p)}"
        except OSError:
            return why or "a directory that cannot be listed"
        return _ours(p, "a zarr store")
    if why is not None:
        return f"{why} ({p.stat().st_size} bytes)"
    with open(p, "rb") as fh:
        return _ours(p, "an HDF5 file") if fh.read(8) == HDF5_SIGNATURE else "a Parquet file that lstm_data wrote"


def check_replaceable(path: str | os.PathLike[str]) -> None:
    """Raise ``FileExistsError`` unless ``path`` is absent or may be replaced (see the module notes).

    Raises
    ------
    FileExistsError
        Naming the output and what it is.
    """
    if why_not_ours(path) is not None:
        raise FileExistsError(f"{os.fspath(path)} exists and is {describe_output(path)}; --overwrite "
                              "(overwrite=True) replaces only a store or file that lstm_data wrote: remove it "
                              "yourself or choose another output")


def refusal(path: str | os.PathLike[str]) -> str:
    """Why an existing ``path`` is not replaced without ``--overwrite``: what it is, and what
    ``--overwrite`` would do to it (replace it, or refuse too)."""
    what = describe_output(path)
    if why_not_ours(path) is None:
        return (f"{os.fspath(path)} already exists: it is {what}. --overwrite (overwrite=True) replaces it "
                "with the new output; or choose another output")
    return (f"{os.fspath(path)} already exists: it is {what}, which lstm_data never replaces, not even "
            "with --overwrite (overwrite=True): remove it yourself or choose another output")


def check_target(target: str | os.PathLike[str], overwrite: bool) -> None:
    """Before writing: ``target`` is absent, or ``overwrite`` is on and it is ours to replace.

    Raises
    ------
    FileExistsError
        ``target`` exists and ``overwrite`` is off (saying what it is and what ``overwrite``
        would do), or it is not ours (see :func:`check_replaceable`).
    """
    if os.path.lexists(target):
        if not overwrite:
            raise FileExistsError(refusal(target))
        check_replaceable(target)


def put_in_place(tmp: str | os.PathLike[str], target: str | os.PathLike[str], overwrite: bool) -> None:
    """Rename the complete output ``tmp`` to ``target``: replacing only an output of ours, and only
    with ``overwrite``; without it, never replacing what another process created meanwhile."""
    from lstm_data._util.safe_output import move_into_place

    if overwrite:
        check_replaceable(target)  # again: it may have changed while the output was written
    move_into_place(Path(tmp), Path(target), replace=overwrite)
