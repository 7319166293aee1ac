"""Where a scoring run writes: one output beside each input file (or one part per rank)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from lstm_data._util.safe_output import check_not_input, remove_stale_temporaries
from lstm_data.errors import OptionError
from lstm_data.scoring.options import FORMATS, PredictOptions

__all__ = ["Target", "targets", "format_of"]

#: input suffix -> output format of ``output_format="same"``
_SAME = {".parquet": "parquet", ".pq": "parquet", ".root": "root", ".h5": "hdf5", ".hdf5": "hdf5",
         ".csv": "csv", ".zarr": "zarr"}
_COMPRESSED = (".gz", ".xz", ".bz2", ".zst")


def _stem_and_suffix(name: str) -> tuple[str, str]:
    """``name`` without its format suffix (and a compression suffix before it), and that suffix."""
    path = Path(name.rstrip("/"))
    if path.suffix in _COMPRESSED:
        path = path.with_suffix("")
    return path.stem, path.suffix.lower()


def format_of(source: str, options: PredictOptions) -> str:
    """The output format for input ``source``."""
    if options.output_format != "same":
        return options.output_format
    return _SAME.get(_stem_and_suffix(source)[1], "parquet")


class Target:
    """One output file: its path, format, and what it needs of its input.

    Attributes
    ----------
    path : Path
        Where the output goes.
    fmt : str
        Its format (a key of :data:`~lstm_data.scoring.options.FORMATS`).
    source : str or None
        The input it lies beside (``None`` for a rank's part).
    """

    def __init__(self, path: Path, fmt: str, source: str | None) -> None:
        self.path, self.fmt, self.source = path, fmt, source

    def tree_name(self) -> str:
        """The TTree name of a ROOT output: its input's tree, else ``scores``."""
        if self.source is None or _stem_and_suffix(self.source)[1] != ".root":
            return "scores"
        import uproot
        with uproot.open(self.source) as fh:
            names = [k.split(";")[0] for k, cls in fh.classnames().items() if cls in ("TTree", "ROOT::RNTuple")]
        return names[0] if names else "scores"

    def row_groups(self) -> list[int] | None:
        """Row counts of the row groups of a Parquet input, else ``None``."""
        if self.source is None or self.fmt != "parquet" or _stem_and_suffix(self.source)[1] not in (".parquet", ".pq"):
            return None
        import pyarrow.parquet as pq
        meta = pq.ParquetFile(self.source).metadata
        return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def targets(sources: tuple[str, ...], out: Any, options: PredictOptions) -> list[Target]:
    """The outputs of a run over ``sources`` (checked: never an input, never an existing
    output unless ``overwrite``); stale temporaries of them are removed."""
    found = []
    if options.world_size > 1:
        first = sources[0] if sources else "scores"
        fmt = format_of(first, options)
        where = Path(out) if out is not None else Path(first).parent
        name = f"scores.part-{options.rank:05d}-of-{options.world_size:05d}{FORMATS[fmt]}"
        found.append(Target(where / name, fmt, None))
    else:
        for src in sources or ("data",):
            fmt = format_of(src, options)
            where = Path(out) if out is not None else Path(src).parent
            stem = _stem_and_suffix(src)[0]
            found.append(Target(where / f"{stem}{options.suffix}{FORMATS[fmt]}", fmt, src))
    names = [t.path for t in found]
    if len(set(names)) != len(names):
        raise OptionError("two inputs have the same name, so their outputs would too: give each "
                          "input another name or score them in separate runs")
    for target in found:
        try:
            check_not_input(target.path, sources)
        except ValueError as exc:
            raise OptionError(str(exc)) from None
        if target.path.exists() and not options.overwrite:
            raise OptionError(f"output {target.path} exists; pass overwrite=True (--overwrite) to replace it")
        target.path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(target.path)
    return found
