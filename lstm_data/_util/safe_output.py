"""The one rule every writer follows before it replaces anything: never the input.

``precompute``, ``write_zarr`` / ``write_hdf5`` and ``lstm-data convert`` all write
to a temporary name and rename it over the target when complete. That protects the
target from a half-written output, but not the data being read: a target that is
one of the sources (``convert 'g/*.h5' g/all.h5`` run twice), holds one, or lies
inside one would be destroyed or read back into itself.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

__all__ = ["check_not_input"]


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
