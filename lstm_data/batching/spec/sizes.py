"""The size of a batch a spec implies, checked before any batch is allocated.

Every size option bounds what one batch takes: a ``Ragged`` field's ``max_len``
(with ``fixed=True``), the spec's ``pad_to_multiple_of`` (a per-batch width is at
least that), the number of variables, the dtype and the batch size. When
``Batches`` is made, the bytes of one batch (its padded outputs, masks and
lengths; packed outputs hold only real elements and are left out) are compared
with the memory this process may still allocate; a batch that cannot fit is a
:class:`~lstm_data.errors.SchemaError` naming the field, the option that sets its
width and the bytes, instead of a ``MemoryError`` at the first batch. A width
itself is at most :data:`MAX_SLOTS` (checked when the spec is made).
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

import numpy as np

from lstm_data.errors import OptionError, SchemaError

__all__ = ["MAX_SLOTS", "batch_bytes", "check_batch_bytes", "memory_room", "human_bytes"]

#: prong slots of one row at most (``max_len``, ``pad_to_multiple_of``): far beyond any batch that fits in
#: memory (checked by :func:`check_batch_bytes`), far below what the kernels' 64-bit sizes hold
MAX_SLOTS = 2**40


def memory_room() -> int:
    """The bytes this process may still allocate (the system's available memory, its cgroup's
    and its own limits), or the machine's memory when nothing tells."""
    from lstm_data.io.root.memory import available_bytes

    room = available_bytes()
    if room is not None:
        return room
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX
        return 8 << 30


def _width(fld: Any, multiple: int | None) -> tuple[int, str]:
    """The fewest slots a non-empty batch of ``fld`` is padded to, and the option that sets it."""
    if fld.max_len is not None and fld.fixed:
        return fld.max_len, f"max_len={fld.max_len}"
    if multiple is not None:
        width = multiple if fld.max_len is None else min(multiple, fld.max_len)
        return width, f"pad_to_multiple_of={multiple}"
    return 1, "its longest row"


def batch_bytes(fields: Iterable[tuple[str, str, Any]], multiple: int | None,
                rows: int, widths: Mapping[str, tuple[int, str]] | None = None) -> list[tuple[int, str, str, str]]:
    """Per field, the bytes of its outputs in a batch of ``rows`` rows (at least), its name and what sets them.

    Parameters
    ----------
    fields
        ``(role, name, field)`` as :meth:`BatchSpec.fields` gives them.
    multiple
        The spec's ``pad_to_multiple_of``.
    rows
        Rows in one batch.
    widths
        Output name -> ``(slots, why)``: the width an order's options pad that field's
        batches to (the largest of ``bucket_lengths``), used where it is wider.

    Returns
    -------
    list of (int, str, str, str)
        ``(bytes, role, name, why)`` per field (packed fields, which hold only real elements, left out).
    """
    out = []
    for role, name, fld in fields:
        itemsize = np.dtype(fld.dtype).itemsize
        n_vars = len(fld.vars)
        if not hasattr(fld, "max_len"):  # Scalars
            out.append((rows * n_vars * itemsize, role, name, f"{n_vars} variables"))
            continue
        if not fld.form.has_slots:
            continue
        width, why = _width(fld, multiple)
        if widths and name in widths and widths[name][0] > width:
            width, why = widths[name]
        per_row = width * (n_vars * itemsize + (1 if fld.mask else 0)) + (8 if fld.lengths else 0)
        out.append((rows * per_row, role, name, f"{why}: {width} slots of {n_vars} {fld.dtype} variables"))
    return out


def check_batch_bytes(fields: Iterable[tuple[str, str, Any]], multiple: int | None, batch_size: int,
                      n_rows: int, room: int | None = None,
                      widths: Mapping[str, tuple[int, str]] | None = None) -> None:
    """Refuse a spec whose batches cannot fit in memory, before any is allocated.

    Parameters
    ----------
    fields, multiple
        As :func:`batch_bytes`.
    batch_size
        The order's rows per batch.
    n_rows
        The rows of the data (a batch holds at most so many).
    room
        The bytes a batch may take (default: :func:`memory_room`).
    widths
        As :func:`batch_bytes`: the widths an order's options set.

    Raises
    ------
    SchemaError
        One batch would take more than ``room`` bytes; names the largest field, the
        option that sets its width, and the bytes.
    OptionError
        The same, when the largest field's width is set by the order (``widths``).
    """
    rows = max(1, min(int(batch_size), int(n_rows)))
    sizes = batch_bytes(fields, multiple, rows, widths)
    total = sum(s[0] for s in sizes)
    if not sizes:
        return
    if room is None:
        room = memory_room()
    if total <= room:
        return
    size, role, name, why = max(sizes)
    if widths and name in widths and why.startswith(widths[name][1]):
        raise OptionError(f"{role} {name!r}: a batch of {rows} rows takes {human_bytes(total)} ({total} bytes), "
                          f"{human_bytes(size)} of them for this field ({why}), more than the "
                          f"{human_bytes(room)} this process may still allocate; lower the largest bucket "
                          "length or the batch size")
    raise SchemaError(f"{role} {name!r}: a batch of {rows} rows takes {human_bytes(total)} ({total} bytes), {human_bytes(size)} of "
                      f"them for this field ({why}), more than the {human_bytes(room)} this process may still "
                      "allocate; lower max_len, pad_to_multiple_of or the batch size", variable=name)


def human_bytes(n: int) -> str:
    """``n`` bytes for a message: ``"512 bytes"``, ``"1.5 GiB"``."""
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover - the loop returns
