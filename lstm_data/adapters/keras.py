"""Keras 3 adapter: :class:`KerasBatches`, a ``keras.utils.PyDataset`` over ``Batches``.

Example
-------
>>> from lstm_data.keras import KerasBatches
>>> train = KerasBatches(Batches(ds, spec.replace(nan_to=0.0), Order(seed=1)), threads=2)   # doctest: +SKIP
>>> model.fit(train, epochs=10, shuffle=False)                                 # doctest: +SKIP

Each item is ``(inputs, targets, weights)``: dicts keyed by the spec's output
names, so a functional model whose ``Input`` layers carry those names (see
:func:`keras_inputs`) and whose outputs are a dict keyed by the target names
(``keras.Model(inputs, {"target_total": out})``) trains on it directly.

Epochs. Training epoch ``e`` gets the row order ``(seed, e)`` of the
``Batches``. Keras's own calls do not say that: before the first epoch ``fit``
reads one batch to build the model and calls ``on_epoch_end`` (Keras 3.15:
``EpochIterator.reset``), and its thread/process enqueuer serves batches built
ahead in one pass at the start of the next. So :class:`KerasBatches`

* moves to the next epoch only at an ``on_epoch_end`` that follows a pass over
  every batch (the warm-up read and its ``on_epoch_end`` do not count, nor
  does a pass cut short);
* builds batches ahead itself, on ``threads`` threads, each tied to its epoch
  (the kernels release the GIL), and tells Keras ``workers=1``, so Keras asks
  for batch ``i`` when step ``i`` needs it;
* with :attr:`KerasBatches.epoch_callback` in ``fit(callbacks=...)``, takes
  Keras's own epoch number at each epoch start: exact for any
  ``initial_epoch`` (without it, call :meth:`KerasBatches.set_epoch` before a
  resumed ``fit``), and also with a single batch per epoch, whose warm-up read
  is a whole pass.

Mid-epoch resumption: :meth:`KerasBatches.state_dict` (with the epoch callback,
which counts the steps trained) says where training stands; a new
``KerasBatches`` given that state by :meth:`KerasBatches.load_state_dict`, in a
``fit(..., initial_epoch=data.epoch)`` with the epoch callback, continues the
epoch at the next step (see :mod:`lstm_data.adapters.keras_position`), and
:class:`~lstm_data.adapters.keras_resume.KerasCheckpoint` saves and restores the
model with it.

Pass ``shuffle=False`` to ``fit`` (Keras's default ``True`` reorders the batches
with Python's ``random``; a warning says so). As ``validation_data`` the
``p``-th evaluation (``p = 0, 1, ...``) reads the order of epoch ``p``, so
an unshuffled validation view (``shuffle=False``) reads the same batches in the
same order every time.

Tensors. Under the torch backend (``KERAS_BACKEND=torch``) the arrays of each
item are torch tensors sharing the batch's memory (``torch.from_numpy``): Keras
3's torch backend turns a NumPy array into a tensor with ``np.array(x)``, a copy
of every batch into freshly allocated memory, and passes tensors through. Under
other backends, items are NumPy arrays.

NaN. Keras cannot train on NaN: an input holding NaN padding (a ``Ragged``
field with ``pad_value=nan`` and no ``nan_to`` in the spec) or NaN values
makes the loss NaN. :class:`KerasBatches` warns once when it hands Keras such an
input (known from the spec; other inputs of the first batch are scanned once).
"""
from __future__ import annotations

import importlib
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data._util.checks import check_count, check_index
from lstm_data._util.deprecation import OldAttribute, refuses_renamed
from lstm_data.adapters.ahead import Ahead
from lstm_data.adapters.keras_backend import keras_import_problem
from lstm_data.adapters.keras_position import Position
from lstm_data.adapters.nan_warning import Input, warn_nan_padding, warn_nan_values
from lstm_data.batching.epochs.source import BatchSource
from lstm_data.batching.order.stats import log_epoch_stats
from lstm_data.batching.spec.batch_spec import Batch, BatchSpec
from lstm_data.batching.spec.fields import Ragged
from lstm_data.errors import OptionError

try:
    keras = importlib.import_module("keras")  # Keras ships no type information: its names are Any here
except ImportError as _exc:
    raise ImportError(keras_import_problem(_exc)) from _exc

if TYPE_CHECKING:
    import torch

    class KerasTensor:
        """What ``keras.Input`` returns, for type checkers (Keras ships no type information)."""

    class PyDataset:
        """What this module uses of ``keras.utils.PyDataset``, for type checkers."""

        max_queue_size: int

        def __init__(self, workers: int = 1, use_multiprocessing: bool = False,
                     max_queue_size: int = 10) -> None: ...

    class Callback:
        """What this module uses of ``keras.callbacks.Callback``, for type checkers."""
else:
    PyDataset = keras.utils.PyDataset
    Callback = keras.callbacks.Callback

__all__ = ["KerasBatches", "keras_inputs"]

NAN_FIX = ("use a spec with nan_to=0.0 (spec.replace(nan_to=0.0)), or a finite pad_value in the spec with "
           "keras.layers.Masking(mask_value=<that value>) on that input")


class KerasBatches(PyDataset):
    """A ``keras.utils.PyDataset`` serving the batches of any batch source.

    Parameters
    ----------
    batches
        A :class:`~lstm_data.batching.epochs.source.BatchSource`: ``Batches``, a
        shard of one, or stored batches (:func:`lstm_data.open_batches`). Its
        ``epoch`` is the first epoch served and follows the epochs of ``fit``.
    threads
        Threads building batches ahead of training (kept in :attr:`threads`; Keras
        itself sees ``workers=1``, see the module notes). ``workers=`` is not taken:
        it is an ``OptionError`` naming ``threads``.
    use_multiprocessing
        Ignored, with a warning: batches are built on threads.
    max_queue_size
        Batches built ahead at most (``threads > 1``).
    sample_weights
        Return the per-target weights as the third item, Keras's sample weights
        (default). ``False`` returns ``(inputs, targets)``.

    Raises
    ------
    OptionError
        An input of the spec has ``layout="packed"`` (Keras takes padded forms).

    Attributes
    ----------
    as_tensors : bool
        Items hold torch tensors (under Keras's torch backend), else NumPy arrays.
    sample_weights : bool
        Items end with the weights.
    threads : int
        Threads building batches ahead.
    """

    #: the name of :attr:`sample_weights` before the first release (an error naming it)
    with_weights = OldAttribute()

    @refuses_renamed("KerasBatches")
    def __init__(self, batches: BatchSource, threads: int = 1, use_multiprocessing: bool = False,
                 max_queue_size: int = 10, sample_weights: bool = True) -> None:
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
            raise OptionError(f"KerasBatches: threads must be an int >= 1, got {threads!r}")
        if use_multiprocessing:
            warnings.warn("KerasBatches(use_multiprocessing=True) is ignored: lstm_data builds batches on "
                          f"{threads} thread(s) (its kernels release the GIL), each tied to its epoch; "
                          "Keras's process pool would serve batches of one epoch in the next",
                          UserWarning, stacklevel=2)
        _refuse_packed(batches.spec, "KerasBatches")
        super().__init__(workers=1, use_multiprocessing=False, max_queue_size=max_queue_size)
        self.batches = batches
        self.threads = int(threads)
        self.sample_weights = bool(sample_weights)
        self.as_tensors = keras.backend.backend() == "torch"
        self._setup()

    def _setup(self) -> None:
        self._lock = threading.Lock()
        self._served = np.zeros(len(self.batches), dtype=bool)
        # batches built ahead on self.threads threads, tied to their epoch (the lock above
        # serialises the asking; Ahead has its own for its stream)
        self._ahead = Ahead(self.batches, self.threads, max(1, int(self.max_queue_size)))
        self._due = -1  # the index Keras should ask for next in a pass, -1 outside passes
        self._nan_checked = False
        self._order_warned = False
        self._waited = 0.0  # seconds Keras waited in __getitem__ this epoch
        self._position = Position()  # steps trained this epoch; a loaded state's resumption

    # -- the sequence Keras reads ---------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.batches) - self._position.skip

    @property
    def num_batches(self) -> int:
        """Batches of this pass (what Keras reads to size an epoch): the epoch's, or a resumed epoch's rest."""
        return len(self)

    @property
    def epoch(self) -> int:
        """The epoch being served (that of the wrapped batches)."""
        return int(self.batches.epoch)

    def __getitem__(self, index: int) -> tuple[dict[str, Input], ...]:
        shift = self._position.shift()  # a resumed epoch's step i is its batch shift + i
        index = check_index(index, len(self.batches) - shift) + shift
        with self._lock:
            self._check_order(index)
            asked = time.perf_counter()
            inputs, targets, weights = self._take(index, self.epoch)
            self._waited += time.perf_counter() - asked
            self._served[index] = True
        if not self._nan_checked:
            self._nan_checked = True
            _warn_nan(self.batches, inputs)
        parts: tuple[Mapping[str, Input], ...] = (inputs, targets, weights)
        if self.as_tensors:
            parts = (_as_tensors(inputs), _as_tensors(targets), _as_tensors(weights))
        out = tuple(dict(p) for p in parts)
        return out if self.sample_weights else out[:2]

    def _take(self, index: int, epoch: int) -> Batch:
        return self._ahead.get(index, epoch)

    def _close_stream(self) -> None:
        self._ahead.close()

    def _check_order(self, index: int) -> None:
        if self._due >= 0 and index != self._due and not self._order_warned:
            self._order_warned = True
            warnings.warn(f"Keras asked for batch {index} where batch {self._due} was due: fit(shuffle=True), "
                          "Keras's default, reorders the batches with Python's random, so the epoch no longer "
                          "follows its (seed, epoch) order; pass fit(..., shuffle=False) (the rows are already "
                          "shuffled per epoch)", UserWarning, stacklevel=3)
        if self._due >= 0:
            self._due = index + 1

    # -- epochs ------------------------------------------------------------------------------------
    def on_epoch_begin(self) -> None:
        """Keras starts a pass (an epoch, an evaluation, or the warm-up read of ``fit``)."""
        with self._lock:
            self._due = self._position.shift()

    def on_epoch_end(self) -> None:
        """Keras ends a pass: the next epoch begins only if every batch of this one was served."""
        with self._lock:
            self._due = -1
            self._close_stream()
            complete = bool(len(self._served) and self._served.all())
            if complete:
                log_epoch_stats(self.batches, self.epoch, waited=self._waited)
                self.batches.set_epoch(self.epoch + 1)
                self._served[:] = False
                self._waited = 0.0
            self._position.pass_ended(complete)

    def set_epoch(self, epoch: int) -> None:
        """Serve the order of ``epoch`` from now on (e.g. before a ``fit`` resumed at ``initial_epoch``).

        Parameters
        ----------
        epoch
            An int >= 0.
        """
        epoch = check_count(epoch, "epoch")
        with self._lock:
            self._position.reset()
            if epoch == self.epoch and not self._served.any():
                return
            self._close_stream()
            self.batches.set_epoch(epoch)
            self._served[:] = False

    @property
    def epoch_callback(self) -> Callback:
        """A callback for ``fit(callbacks=[...])``: each epoch ``e`` of ``fit`` starts on order ``e``.

        It also counts the steps trained (for :meth:`state_dict`) and starts a resumed
        epoch where :meth:`load_state_dict` says.
        """
        return _EpochSync(self)

    def _start_epoch(self, epoch: int) -> None:
        """``fit`` starts training ``epoch`` (from the epoch callback)."""
        with self._lock:
            skip = self._position.start(epoch)
        if skip is None:
            self.set_epoch(epoch)
            return
        with self._lock:  # the resumed epoch: its first ``skip`` batches were trained before the state was saved
            self._close_stream()
            self._served[:] = False
            self._served[:skip] = True

    def _step_done(self, step: int) -> None:
        """Keras finished step ``step`` of the running pass (from the epoch callback)."""
        self._position.step_done(step)

    # -- checkpoints -------------------------------------------------------------------------------
    def state_dict(self) -> PlainDict:
        """Where training stands, to save with the model's checkpoint.

        Counts the steps that the :attr:`epoch_callback` (or a
        :class:`~lstm_data.adapters.keras_resume.KerasCheckpoint`) saw Keras train.

        Returns
        -------
        dict
            The wrapped batches' state at the current epoch and the steps trained in
            it (``epoch``, ``next_batch`` and what identifies the batches): plain values,
            for JSON.
        """
        epoch, step = self._position.resume or (self.epoch, self._position.trained)
        if step >= len(self.batches):  # the epoch was trained to its end
            epoch, step = epoch + 1, 0
        state_at = getattr(self.batches, "state_at", None)  # a shard: its history of world sizes
        if callable(state_at):
            state: dict[str, Any] = state_at(epoch, step)
            return state
        return {**self.batches.state_dict(), "epoch": epoch, "next_batch": step}

    def load_state_dict(self, state: PlainMapping) -> None:
        """Resume from :meth:`state_dict`: the next ``fit`` continues its epoch at the next step.

        Give ``fit`` ``initial_epoch=self.epoch`` and the :attr:`epoch_callback` (or a
        :class:`~lstm_data.adapters.keras_resume.KerasCheckpoint`): that epoch's pass then
        serves the batches not trained yet, and the later epochs are whole.

        Parameters
        ----------
        state
            A :meth:`state_dict` of the same batches (a shard's of any world size, for
            shards).

        Raises
        ------
        OptionError
            The state was saved by other batches (each differing setting is named).
        """
        self.batches.load_state_dict(state)  # checks the state; a shard deals what is left to this world
        point = getattr(self.batches, "resume_point", None)
        epoch, step = point if point is not None else (check_count(state["epoch"], "epoch"),
                                                        check_count(state["next_batch"], "next_batch"))
        with self._lock:
            self._close_stream()
            self._served[:] = False
            if step >= len(self.batches):  # that epoch was complete
                self.batches.set_epoch(epoch + 1)
                self._position.reset()
            else:
                self._position.load(epoch, step)

    # -- pickling: the batches, not the threads ------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_ahead")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._ahead = Ahead(self.batches, self.threads, max(1, int(self.max_queue_size)))


class _EpochSync(Callback):
    """Sets a :class:`KerasBatches` to the epoch ``fit`` is starting."""

    def __init__(self, data: KerasBatches) -> None:
        super().__init__()
        self.data = data

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.data._start_epoch(epoch)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.data._step_done(batch)


def _as_tensors(part: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """Torch tensors sharing each array's memory (a copy of a read-only array: a RAM cache's)."""
    import torch
    return {k: torch.from_numpy(v) if v.flags.writeable else torch.tensor(v) for k, v in part.items()}


def _warn_nan(batches: BatchSource, inputs: Mapping[str, np.ndarray]) -> None:
    """Warn about NaN in the inputs: the spec's NaN padding, else NaN found in this batch."""
    consequence = "Keras trains to loss: nan"
    if not warn_nan_padding("KerasBatches", batches, consequence + " (and Masking cannot match NaN)", NAN_FIX,
                            stacklevel=3):
        warn_nan_values("KerasBatches", batches, inputs, consequence, stacklevel=3)


def _refuse_packed(spec: BatchSpec, where: str) -> None:
    """Raise an :class:`~lstm_data.errors.OptionError` for a ``Ragged`` input whose form does not
    start with the batch dimension (a packed ``(T, V)`` output): Keras takes one batch dimension
    first in every input."""
    bad = [(n, f) for n, f in spec.inputs.items() if isinstance(f, Ragged) and not f.form.axes.startswith("B")]
    if bad:
        name, fld = bad[0]
        raise OptionError(f"{where}: input {name!r} has layout={fld.layout!r} (({', '.join(fld.form.axes)}) values), "
                          "which Keras models cannot take (every input has a batch dimension first); use "
                          "layout='padded' (or 'channels_first') with mask=True or lengths=True")


def keras_inputs(spec: BatchSpec) -> dict[str, KerasTensor]:
    """One named ``keras.Input`` per input of ``spec``, shaped and typed by its signature.

    Parameters
    ----------
    spec
        A :class:`~lstm_data.batching.spec.batch_spec.BatchSpec`; its ``signature()`` gives each
        input's shape without the batch dimension (``None`` where it varies per batch)
        and its dtype.

    Returns
    -------
    dict
        Input name -> ``keras.Input``, in the spec's order, ready for
        ``keras.Model(inputs, outputs)``.

    Raises
    ------
    OptionError
        An input has ``layout="packed"`` (Keras takes padded forms).
    """
    _refuse_packed(spec, "keras_inputs")
    return {name: keras.Input(shape=sig.sample_shape, dtype=str(sig.dtype), name=name)
            for name, sig in spec.signature().items() if sig.role == "input"}
