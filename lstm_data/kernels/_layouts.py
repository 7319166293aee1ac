"""The output layouts of the ragged kernels, in the order of their integer codes.

The one table of them: a ragged job carries its layout as an index into
:data:`KERNEL_LAYOUTS` (:class:`~lstm_data.kernels._job.RaggedJob`), both backends
branch on that code, and ``setup.py`` reads this file (without importing the package)
to generate the compiled core's ``LAYOUT_*`` enum from ``kernels/_ext/layouts.pxi.in``.
An output form of a spec names the code it is gathered in (see
:mod:`lstm_data.batching.spec.forms`); a form that is another order of the padded
axes can be made from one of these by the form itself, with no kernel change.
"""
from __future__ import annotations

__all__ = ["KERNEL_LAYOUTS", "PADDED", "CHANNELS_FIRST", "PACKED", "layout_code"]

#: names of the kernel layouts; a layout's code is its index: (B, P, V), (B, V, P), and the
#: real elements of every row one after another, (T, V)
KERNEL_LAYOUTS: tuple[str, ...] = ("padded", "channels_first", "packed")
PADDED = KERNEL_LAYOUTS.index("padded")
CHANNELS_FIRST = KERNEL_LAYOUTS.index("channels_first")
PACKED = KERNEL_LAYOUTS.index("packed")


def layout_code(name: object) -> int:
    """The code of kernel layout ``name``.

    Raises
    ------
    ValueError
        ``name`` is not one of :data:`KERNEL_LAYOUTS`.
    """
    if not isinstance(name, str) or name not in KERNEL_LAYOUTS:
        raise ValueError(f"layout must be one of {KERNEL_LAYOUTS}, got {name!r}")
    return KERNEL_LAYOUTS.index(name)
