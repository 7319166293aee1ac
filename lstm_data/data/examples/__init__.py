"""The example files of the documentation, written into a folder: no clone of the repository needed.

Each example is a few files. Small text files (specs, schemas, weaver-core configs) ship
with the package; data files are generated, seeded, and come out the same every time:

=================  ==========================================================================
example            files
=================  ==========================================================================
``numu_v3``        ``numu_v3.csv.xz`` (5000 NOvA-like events, written by
                   :func:`lstm_data.synthetic.write_csv` with seed 1 and learnable targets,
                   byte for byte the
                   repository's) and the spec ``numu_v3.toml``
``nova_sample``    ``nova_sample.h5`` (NOvA HDF5 tables, 700 slices), its schema
                   ``nova_sample.toml`` and the spec ``numu_v3.toml`` the schema serves
``weaver``         ``jets.root`` (200 JetClass-like jets; needs uproot and awkward) and
                   weaver-core configs ``JetClass_full.yaml`` and ``variant.yaml``, and
                   ``weaver_network.py``, a small network for weaver's ``--network-config``
``all``            every file above
=================  ==========================================================================

Files are written through temporary names. A file already there with the same bytes (a
ROOT file: the same values) is kept; one that differs is replaced only with ``overwrite``.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import warnings
from importlib import resources
from pathlib import Path
from typing import Callable

__all__ = ["EXAMPLES", "example_files", "write_examples"]

_log = logging.getLogger("lstm_data.examples")


def _write_csv(path: Path) -> None:
    from lstm_data.data.synthetic import write_csv

    write_csv(path, 5000, seed=1, learnable=True)


def _write_nova(path: Path) -> None:
    from lstm_data.data.examples.nova_sample import write_nova_sample

    write_nova_sample(path)


def _write_jets(path: Path) -> None:
    from lstm_data.data.examples.weaver_jets import write_jets

    write_jets(path)


#: generated files: name -> writer
_MADE: dict[str, Callable[[Path], None]] = {"numu_v3.csv.xz": _write_csv, "nova_sample.h5": _write_nova,
                                            "jets.root": _write_jets}

#: example -> its files (shipped ones, and generated ones of :data:`_MADE`)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "numu_v3": ("numu_v3.csv.xz", "numu_v3.toml"),
    "nova_sample": ("nova_sample.h5", "nova_sample.toml", "numu_v3.toml"),
    "weaver": ("jets.root", "JetClass_full.yaml", "variant.yaml", "weaver_network.py"),
}


def example_files(name: str) -> tuple[str, ...]:
    """The files of example ``name`` (``"all"``: of every example).

    Parameters
    ----------
    name
        A key of :data:`EXAMPLES`, or ``"all"``.

    Returns
    -------
    tuple of str
        File names, without duplicates.

    Raises
    ------
    ValueError
        No such example (names the close match and every example).
    """
    if name == "all":
        return tuple(dict.fromkeys(f for files in EXAMPLES.values() for f in files))
    if name not in EXAMPLES:
        from lstm_data._util.close_names import did_you_mean

        raise ValueError(f"no example {name!r}{did_you_mean(name, list(EXAMPLES)) or '.'} The examples are "
                         f"{', '.join(EXAMPLES)} and all")
    return EXAMPLES[name]


def _make(file: str, path: Path) -> None:
    """Write ``file`` of the examples to ``path``."""
    if file in _MADE:
        _MADE[file](path)
        return
    with resources.as_file(resources.files(__name__) / "files" / file) as shipped:
        shutil.copyfile(shipped, path)


def _same(a: Path, b: Path) -> bool:
    """Whether ``b`` holds what the fresh example ``a`` holds: the same bytes (a ROOT file: the
    same values, as its bytes hold a random UUID)."""
    if a.suffix == ".root":
        from lstm_data.data.examples.weaver_jets import same_jets

        return same_jets(a, b)
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def write_examples(name: str = "all", folder: str | os.PathLike[str] = "examples", *,
                   overwrite: bool = False) -> list[Path]:
    """Write the files of example ``name`` into ``folder`` (created if needed).

    Parameters
    ----------
    name
        ``"numu_v3"``, ``"nova_sample"``, ``"weaver"`` or ``"all"`` (see the module notes).
    folder
        Where to write them; the documentation's examples read ``examples/...`` from the
        folder they run in.
    overwrite
        Replace a file that is there and differs from the example.

    Returns
    -------
    list of Path
        The example's files in ``folder`` (written, or already there with the same bytes).

    Raises
    ------
    ValueError
        No such example.
    FileExistsError
        A file is there, differs from the example, and ``overwrite`` is off (nothing of
        that file is changed; the files before it are written).
    ImportError
        ``jets.root`` needs uproot and awkward (with ``"all"``: a warning, and the other
        files are written).
    """
    files = example_files(name)
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix=".lstm_data-example-", dir=out) as tmp:
        for file in files:
            target, fresh = out / file, Path(tmp) / file
            try:
                _make(file, fresh)
            except ImportError as exc:
                if name != "all":
                    raise
                warnings.warn(f"lstm_data example: {file} not written: {exc}", UserWarning, stacklevel=2)
                continue
            if target.exists() and _same(fresh, target):
                _log.info("%s is up to date", target)
            elif target.exists() and not overwrite:
                raise FileExistsError(f"{target} already exists and differs from the example's {file}; "
                                      "--overwrite (overwrite=True) replaces it, or choose another folder")
            else:
                os.replace(fresh, target)
                _log.info("wrote %s", target)
            written.append(target)
    return written
