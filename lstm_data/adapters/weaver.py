"""weaver-core's trainer on lstm_data batches: loaders in place of its ``train_load`` / ``test_load``.

weaver-core's ``weaver/train.py`` gets its data from two functions, ``train_load(args)``
(the train and validation loaders and the data config) and ``test_load(args)`` (a
loader per test file group), called with its parsed command line. :func:`train_load`
and :func:`test_load` here take the same ``args`` and return the same things, served
by lstm_data: the files of ``--data-train`` / ``--data-val`` / ``--data-test`` opened
with :func:`lstm_data.open`, the spec of ``--data-config`` from
:meth:`BatchSpec.from_weaver <lstm_data.batching.spec.batch_spec.BatchSpec.from_weaver>`,
and :class:`~lstm_data.batching.epochs.batches.Batches` handed out through
:class:`~lstm_data.adapters.torch.TorchBatches` as weaver's ``(X, y, Z)`` dicts:
``X`` the inputs by name (float32), ``y`` the label (``_label_``, int64 ``(B,)``), ``Z``
the observers (test loaders only, as weaver). Each loader's ``dataset.config`` is
weaver's own ``DataConfig`` of the file, which the network's ``get_model`` and the
training loop read.

Rows are those weaver reads: of every file, in name order, the rows from
``trunc(a * n)`` to ``trunc(b * n)`` of its range ``(a, b)`` (``(0, s)`` for training and
``(s, 1)`` for validation with ``--train-val-split s`` and no ``--data-val``; scaled by
``--data-fraction``), then the config's selection. With ``shuffle=False`` the batches
are weaver's, batch for batch, when weaver reads the files one after the other
without shuffling; else they are in the :class:`~lstm_data.batching.order.options.Order`
given (a full shuffle by default, a new one each epoch). Training and validation drop
the last partial batch, as weaver does.

weaver options that change the rows or their order in ways not reproduced here
(``--extra-selection-*``, ``--file-fraction``, ``--demo``, ``--backend``, weaver's
``weights``) are an :class:`~lstm_data.errors.OptionError` naming the option.
"""
from __future__ import annotations

import argparse
import glob
import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from lstm_data._util.optional import require
from lstm_data.adapters.torch import TorchBatches
from lstm_data.batching.epochs.batches import Batches
from lstm_data.batching.epochs.source import BatchSource
from lstm_data.batching.order.options import Order
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.batching.spec.derived import file_bounds
from lstm_data.batching.spec.fitting import auto_variables
from lstm_data.batching.spec.weaver import load_weaver_yaml, weaver_data_fraction
from lstm_data.data.dataset import Dataset
from lstm_data.errors import OptionError
from lstm_data.io.dispatch import open as open_dataset
from lstm_data.io.read_options import ReadOptions

if TYPE_CHECKING:
    from torch.utils.data import DataLoader
    from weaver.utils.dataset import DataConfig  # weaver-core (the ``weaver`` extra)

    #: a torch DataLoader of weaver's ``(X, y, Z)`` batches
    Loader = DataLoader[Any]

__all__ = ["LoaderOptions", "WeaverBatches", "train_load", "test_load", "weaver_files", "weaver_rows"]


class LoaderOptions:
    """What lstm_data decides in weaver's loaders: the shuffle, its seed and the threads.

    Parameters
    ----------
    shuffle
        ``Order.shuffle`` of the training loader (default ``True``, a new full shuffle each
        epoch, as weaver shuffles its training data); ``False`` gives weaver's batches in
        file order. Validation and test loaders never shuffle.
    seed
        ``Order.seed`` (default 0).
    threads
        Threads reading the files and building batches ahead (default 1).
    """

    def __init__(self, shuffle: bool | str = True, seed: int = 0, threads: int = 1) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise OptionError(f"threads must be an int >= 1, got {threads!r}")
        self.shuffle = shuffle
        self.seed = seed
        self.threads = threads
        Order(shuffle=shuffle, seed=seed)  # checks both


class WeaverBatches(TorchBatches):
    """:class:`~lstm_data.adapters.torch.TorchBatches` handing out weaver's ``(X, y, Z)``.

    Parameters
    ----------
    batches
        The batches (their targets: the labels, then the observers).
    config
        weaver-core's ``DataConfig`` (what ``loader.dataset.config`` gives weaver).
    labels
        The target names that go to ``y`` (weaver's ``label_names``); the other targets go to ``Z``.
    threads
        Threads building batches ahead (see ``TorchBatches``).
    """

    def __init__(self, batches: BatchSource, config: DataConfig, labels: Sequence[str], threads: int = 1) -> None:
        super().__init__(batches, threads=threads)
        self.config = config
        self.labels = tuple(labels)

    def __getitem__(self, key: int | tuple[int, int]) -> Any:
        inputs, targets, _ = super().__getitem__(key)
        y = {k: v for k, v in targets.items() if k in self.labels}
        z = {k: v for k, v in targets.items() if k not in self.labels}
        return inputs, y, z


def weaver_files(patterns: Sequence[str]) -> dict[str, list[str]]:
    """weaver's file groups of ``--data-train``-style arguments (``[name:]glob``), each sorted.

    Raises
    ------
    OptionError
        A pattern matches no file (weaver would train on nothing).
    """
    groups: dict[str, list[str]] = {}
    for pattern in patterns:
        name, path = pattern.split(":", 1) if ":" in pattern else ("_", pattern)
        files = glob.glob(path)
        if not files:
            raise OptionError(f"no file matches {path!r} (given as {pattern!r})")
        groups.setdefault(name, []).extend(files)
    return {name: sorted(files) for name, files in groups.items()}


def weaver_rows(bounds: np.ndarray, load_range: tuple[float, float]) -> np.ndarray:
    """The rows weaver reads of each file for a fractional ``load_range``, as dataset rows.

    Parameters
    ----------
    bounds
        The files' row bounds in the dataset (``n_files + 1`` ascending numbers).
    load_range
        ``(a, b)`` in ``[0, 1]``: of a file of ``n`` rows, rows ``trunc(a * n)`` to
        ``max(trunc(a * n) + 1, trunc(b * n))`` (weaver's rule).

    Returns
    -------
    numpy.ndarray
        Ascending int64 row numbers.
    """
    a, b = load_range
    pieces = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        n = int(hi - lo)
        start = math.trunc(a * n)
        stop = min(n, max(start + 1, math.trunc(b * n)))
        pieces.append(np.arange(lo + start, lo + stop, dtype=np.int64))
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int64)


def _weaver_config(path: str, training: bool) -> DataConfig:
    config = require("running weaver-core's trainer on lstm_data batches", "weaver", "weaver.utils.data.config")
    if training:
        return config.DataConfig.load(path, load_observers=False)
    return config.DataConfig.load(path, load_reweight_info=False)


def _refuse(args: Any) -> None:
    refused = {"extra_selection_train": None, "extra_selection_val": None, "extra_selection_test": None,
               "file_fraction": 1, "demo": False, "backend": None, "copy_inputs": False}
    for name, default in refused.items():
        value = getattr(args, name, default)
        if value != default:
            raise OptionError(f"--{name.replace('_', '-')} {value!r} is not reproduced by lstm_data's loaders: "
                              "leave it out, or run weaver without lstm-data")


def _open(files: Sequence[str], config_path: str, observers: bool, threads: int) -> tuple[BatchSpec, Dataset]:
    """The spec of ``config_path`` and ``files`` opened with only the branches it reads."""
    spec = BatchSpec.from_weaver(config_path, observers=observers)
    tree = load_weaver_yaml(config_path).get("treename") or None
    read = ReadOptions(needed=tuple(spec.variables), threads=threads, tree=tree)
    return spec, open_dataset(list(files), read=read)


def _batches(opened: tuple[BatchSpec, Dataset], config_path: str, *, training: bool,
             load_range: tuple[float, float], batch_size: int, order: Order) -> tuple[Batches, Dataset]:
    """Batches of the rows weaver reads of the ``opened`` files under ``config_path``.

    Without a selection the derived variables are computed once on the opened data (and
    kept on it), so that loaders of other row ranges of the same files share them."""
    spec, ds = opened
    bounds = file_bounds(ds)
    rows = weaver_rows(np.array([0, len(ds)]) if bounds is None else bounds, load_range)
    order = order.replace(batch_size=batch_size, drop_last=training)
    if len(rows) == len(ds):
        view = None
    elif spec.selection is None:
        view = rows
    else:  # the selection applies to the range's rows: take them first (read into RAM)
        ds = ds.take(rows)
        view = None
    if auto_variables(spec):
        spec = spec.fit(ds, fraction=weaver_data_fraction(config_path), seed=0)
    return Batches(ds, spec, order, rows=view), ds


def _shared(opened: tuple[BatchSpec, Dataset]) -> tuple[BatchSpec, Dataset]:
    """``opened`` with the derived variables applied once when several row ranges use it
    (a selection keeps them apart: it applies to each range's rows)."""
    spec, ds = opened
    return (spec, ds) if spec.selection is not None or auto_variables(spec) else (spec, spec.derive(ds))


def _loader(batches: Batches, config_path: str, training: bool, threads: int) -> tuple[Loader, DataConfig]:
    """A loader of ``batches`` as weaver's ``(X, y, Z)``, and the data config it hands out."""
    torch_data = require("running weaver-core's trainer on lstm_data batches", "torch", "torch.utils.data")
    config = _weaver_config(config_path, training)
    data = WeaverBatches(batches, config, list(config.label_names), threads=threads)
    loader: Loader = torch_data.DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=0)
    return loader, config


def train_load(args: argparse.Namespace, options: LoaderOptions | None = None,
               ) -> tuple[Loader, DataConfig, Loader, DataConfig]:
    """weaver's ``train_load(args)``: the train and validation loaders and their data configs.

    Parameters
    ----------
    args
        weaver-core's parsed command line (``weaver.train.parser``, after its ``main``
        filled the defaults).
    options
        The shuffle, seed and threads (default :class:`LoaderOptions`).

    Returns
    -------
    tuple
        ``(train_loader, train_data_config, val_loader, val_data_config)``.
    """
    options = options or LoaderOptions()
    _refuse(args)
    train_files = [f for files in weaver_files(args.data_train).values() for f in files]
    if args.data_val:
        val_files = [f for files in weaver_files(args.data_val).values() for f in files]
        train_range, val_range = (0.0, 1.0), (0.0, 1.0)
    else:
        val_files = train_files
        train_range, val_range = (0.0, args.train_val_split), (args.train_val_split, 1.0)
    frac_val = args.data_fraction if args.data_fraction_val is None else args.data_fraction_val
    train_range = (train_range[0], train_range[0] + (train_range[1] - train_range[0]) * args.data_fraction)
    val_range = (val_range[0], val_range[0] + (val_range[1] - val_range[0]) * frac_val)
    order = Order(shuffle=options.shuffle, seed=options.seed)
    opened = _open(train_files, args.data_config, False, options.threads)
    same = val_files == train_files and args.data_config_val == args.data_config
    if same:  # one read of the files (and of their derived variables) for both loaders
        opened = _shared(opened)
    train, _ = _batches(opened, args.data_config, training=True, load_range=train_range,
                        batch_size=args.batch_size, order=order)
    val_opened = opened if same else _open(val_files, args.data_config_val, False, options.threads)
    val, _ = _batches(val_opened, args.data_config_val, training=True, load_range=val_range,
                      batch_size=args.batch_size_val, order=order.replace(shuffle=False))
    train_loader, train_config = _loader(train, args.data_config, True, options.threads)
    val_loader, val_config = _loader(val, args.data_config_val, True, options.threads)
    return train_loader, train_config, val_loader, val_config


def test_load(args: argparse.Namespace, options: LoaderOptions | None = None,
              ) -> tuple[dict[str, Callable[[], Loader]], DataConfig]:
    """weaver's ``test_load(args)``: a loader factory per ``--data-test`` file group, and the data config.

    Parameters
    ----------
    args
        weaver-core's parsed command line.
    options
        The threads (test loaders never shuffle).

    Returns
    -------
    tuple
        ``({group: () -> loader}, data_config)``; the loaders' ``Z`` holds the observers.
    """
    options = options or LoaderOptions()
    _refuse(args)
    groups: dict[str, list[str]] = {}
    for pattern in args.data_test:
        name, path = pattern.split(":", 1) if ":" in pattern else ("", pattern)
        if "%" in name:
            raise OptionError(f"--data-test {pattern!r}: split groups (name%N) are not reproduced by lstm_data's "
                              "loaders; give one pattern per group")
        groups.setdefault(name, []).extend(weaver_files([path])["_"])

    def factory(files: list[str]) -> Callable[[], Loader]:
        def make() -> Loader:
            opened = _open(sorted(files), args.data_config_test, True, options.threads)
            batches, _ = _batches(opened, args.data_config_test, training=False,
                                  load_range=(0.0, args.data_fraction), batch_size=args.batch_size_test,
                                  order=Order(shuffle=False, seed=options.seed))
            return _loader(batches, args.data_config_test, False, options.threads)[0]
        return make

    return ({name: factory(files) for name, files in groups.items()},
            _weaver_config(args.data_config_test, training=False))
