"""``PredictOptions``: how a scoring run batches, writes and resumes."""
from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from lstm_data._util.types import PlainMapping
from lstm_data._util.checks import count_option, flag_option, option_check, positive_int_option
from lstm_data._util.declared import DeclaredOptions
from lstm_data.errors import OptionError, SchemaError

if TYPE_CHECKING:
    from lstm_data.batching.spec.batch_spec import BatchSpec

__all__ = ["PredictOptions", "FORMATS", "spec_file"]

#: output format -> file suffix of its outputs (``"same"``: the input's own format)
FORMATS = {"parquet": ".parquet", "root": ".root", "hdf5": ".h5", "csv": ".csv", "zarr": ".zarr"}


#: keys a [predict] table may not hold: what is imported or loaded is the caller's choice
_CALLER_ONLY = ("model", "state_dict")


def _choice(name: str, choices: tuple[str, ...]) -> Any:
    return option_check(name, lambda v: v in choices, str, f"be one of {', '.join(choices)}")


@dataclasses.dataclass(frozen=True, kw_only=True, eq=True)
class PredictOptions(DeclaredOptions):
    """How :func:`lstm_data.predict` scores and writes.

    Parameters
    ----------
    batch_size
        Rows per forward pass (the last batch holds the rest).
    output_format
        ``"same"`` (default: the input's own format where it has a writer,
        else Parquet), ``"parquet"``, ``"root"``, ``"hdf5"``, ``"csv"`` or ``"zarr"``.
    selected
        Rows the spec's selection removes (or ``Ragged(empty="drop")`` drops):
        ``"drop"`` leaves them out; ``"mark"`` keeps every entry of the input, with
        NaN scores and ``selected = False`` for the ones not scored.
    resume
        Continue a run that was stopped from its last flushed chunk (the settings,
        model and data must be the same); ``False`` starts afresh.
    flush_every
        Batches per flushed chunk: what a stopped run loses at most.
    threads
        Threads building batches ahead of the forward pass (the caller included).
    prefetch_batches
        Batches built ahead at most (default ``2 * threads``): bounds memory.
    rank, world_size
        Score the ``rank``-th of ``world_size`` contiguous shards of the batches and
        write that shard's part (``scores.part-RANK-of-WORLD``).
    overwrite
        Replace outputs that exist (never an input).
    progress
        Show a progress bar (tqdm when installed).
    suffix
        Inserted between an input's name and the output's extension.
    """

    batch_size: int = 1024
    output_format: str = "same"
    selected: str = "drop"
    resume: bool = True
    flush_every: int = 64
    threads: int = 2
    prefetch_batches: int | None = None
    rank: int = 0
    world_size: int = 1
    overwrite: bool = False
    progress: bool = False
    suffix: str = ".scores"

    TOML_TABLE: ClassVar[str] = "predict"
    CHECKS: ClassVar[Mapping[str, Any]] = {
        "batch_size": positive_int_option("batch_size"),
        "output_format": _choice("output_format", ("same", *FORMATS)),
        "selected": _choice("selected", ("drop", "mark")),
        "resume": flag_option("resume"),
        "flush_every": positive_int_option("flush_every"),
        "threads": positive_int_option("threads"),
        "prefetch_batches": positive_int_option("prefetch_batches"),
        "rank": count_option("rank"),
        "world_size": positive_int_option("world_size"),
        "overwrite": flag_option("overwrite"),
        "progress": flag_option("progress"),
        "suffix": option_check("suffix", lambda v: isinstance(v, str) and bool(v) and "/" not in v, str,
                               "be a non-empty string without '/'"),
    }

    @classmethod
    def from_dict(cls, data: PlainMapping, *, source: str | None = None) -> "PredictOptions":
        """The options a file's table gives, checked; a file never names the model.

        A ``model`` or ``state_dict`` key is refused, so that a module is imported only
        because the caller named it.

        Parameters
        ----------
        data
            The table of a file (or a dict) in the form :meth:`to_dict` writes.
        source
            The file and table it was read from, which messages name.

        Returns
        -------
        PredictOptions
            The options, each value checked.

        Raises
        ------
        OptionError
            An unknown name, a ``model`` or ``state_dict`` key, or a bad value.
        """
        if isinstance(data, Mapping):
            for key in _CALLER_ONLY:
                if key in data:
                    raise OptionError(f"{source or cls.__name__}: key {key!r} is refused: the model (a file, "
                                      "or a module:factory to import) and its state dict are named only by "
                                      "the caller, as arguments of predict or --model / --state-dict")
        return super().from_dict(data, source=source)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.rank >= self.world_size:
            raise OptionError(f"PredictOptions.rank must be below world_size ({self.world_size}), "
                              f"got {self.rank}")


def spec_file(path: str | os.PathLike[str]) -> "BatchSpec":
    """The spec of a TOML file that may also hold a ``[predict]`` table (left to
    :meth:`PredictOptions.from_toml`), read within the bounds of the spec files."""
    from lstm_data._util.spec_files import load_toml
    from lstm_data.batching.spec.batch_spec import BatchSpec

    where = os.fspath(path)
    data = load_toml(path, lambda message: SchemaError(message, file=where))
    data.pop(PredictOptions.TOML_TABLE, None)
    try:
        return BatchSpec.from_dict(data, source=where)
    except SchemaError as exc:  # each error of the file's spec names the file
        raise exc if exc.file is not None else exc.located(file=where) from None
