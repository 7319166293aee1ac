"""Keras mid-epoch resumption: :class:`KerasCheckpoint` saves the model and where its batches stand, together.

Example
-------
>>> data = KerasBatches(Batches(ds, spec, Order(seed=1)))                  # doctest: +SKIP
>>> checkpoint = KerasCheckpoint(data, "run/checkpoint", save_freq=200)    # doctest: +SKIP
>>> model.fit(data, epochs=10, initial_epoch=checkpoint.initial_epoch, shuffle=False,
...           callbacks=[checkpoint])                                      # doctest: +SKIP

Run again after a preemption, the same lines restore the model (weights and
optimizer state) and the batches' position saved last, and ``fit`` continues the
interrupted epoch at the step after the checkpoint: every batch of the epoch is
trained on once, and the later epochs are those of an uninterrupted run.

The directory holds ``position.json`` (the epoch, the step and the batches' state,
see :meth:`~lstm_data.adapters.keras.KerasBatches.state_dict`) and the model weights
it names (``model-N.weights.h5``). A save writes new weights, then replaces
``position.json`` atomically, then removes the weights it replaced: a job killed
while saving leaves the previous checkpoint whole.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from lstm_data._util.confined import confined
from lstm_data.adapters.keras import KerasBatches, keras
from lstm_data.errors import FormatError, OptionError

if TYPE_CHECKING:
    class Callback:
        """What this module uses of ``keras.callbacks.Callback``, for type checkers."""

        model: Any

        def set_model(self, model: Any) -> None: ...

        def on_epoch_begin(self, epoch: int, logs: Mapping[str, object] | None = None) -> None: ...

        def on_train_batch_end(self, batch: int, logs: Mapping[str, object] | None = None) -> None: ...
else:
    Callback = keras.callbacks.Callback

__all__ = ["KerasCheckpoint"]

#: the file naming the current checkpoint
POSITION = "position.json"
#: the layout of ``position.json``
_FORMAT = 1


class KerasCheckpoint(Callback):
    """Save the model and the position of its :class:`~lstm_data.adapters.keras.KerasBatches` together.

    Put it in ``fit(callbacks=[...])`` in place of ``data.epoch_callback`` (it does
    that callback's work too), and give ``fit`` ``initial_epoch=checkpoint.initial_epoch``.

    Parameters
    ----------
    data
        The training data given to ``fit``. If ``directory`` holds a checkpoint, its
        position is loaded into ``data`` now and the model is restored when ``fit``
        starts (``on_train_begin``).
    directory
        Where checkpoints go (made if missing). Use one directory per training run.
    save_freq
        ``"epoch"``: save at the end of every epoch; an int ``n``: also every ``n``
        steps trained.

    Raises
    ------
    OptionError
        ``save_freq`` is neither ``"epoch"`` nor an int >= 1, or the saved position
        belongs to other batches (each differing setting is named).
    FormatError
        ``position.json`` is unreadable or names weights that are missing or outside
        ``directory`` (``..``, an absolute path, a symbolic link leading out).

    Attributes
    ----------
    initial_epoch : int
        The epoch ``fit`` starts at: that of the saved position, else the data's epoch.
    """

    def __init__(self, data: KerasBatches, directory: str | os.PathLike[str], save_freq: int | str = "epoch") -> None:
        super().__init__()
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int) or save_freq < 1):
            raise OptionError(f"KerasCheckpoint: save_freq must be 'epoch' or an int >= 1, got {save_freq!r}")
        if not isinstance(data, KerasBatches):
            raise OptionError(f"KerasCheckpoint: data must be a KerasBatches, got {type(data).__name__}")
        self.data = data
        self.directory = Path(directory)
        self.save_freq = save_freq
        self._sync: Any = data.epoch_callback  # the epoch callback's work, done here
        self._steps = 0  # steps trained by this run
        self._saves = 0  # checkpoints written (names the weights files)
        self._restore: Path | None = None  # weights to load when fit starts
        saved = self._read()
        if saved is not None:
            data.load_state_dict(saved["data"])
            self._saves = int(saved["saves"])
            self._restore = self._weights_of(saved)
        self.initial_epoch = data.epoch

    # -- what fit calls --------------------------------------------------------------------------
    def on_train_begin(self, logs: Mapping[str, object] | None = None) -> None:
        """Restore the saved model weights (and optimizer state), if any.

        Parameters
        ----------
        logs
            Keras's logs (unused).
        """
        if self._restore is None:
            return
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and not optimizer.built:  # its variables must exist to be loaded
            optimizer.build(self.model.trainable_variables)
        self.model.load_weights(str(self._restore))
        self._restore = None

    def on_epoch_begin(self, epoch: int, logs: Mapping[str, object] | None = None) -> None:
        """Serve epoch ``epoch`` (from the saved step, when it is the resumed one).

        Parameters
        ----------
        epoch
            The epoch ``fit`` starts.
        logs
            Keras's logs (unused).
        """
        self._sync.on_epoch_begin(epoch, logs)

    def on_train_batch_end(self, batch: int, logs: Mapping[str, object] | None = None) -> None:
        """Count the step; save every ``save_freq`` steps.

        Parameters
        ----------
        batch
            The step of the pass that ended.
        logs
            Keras's logs (unused).
        """
        self._sync.on_train_batch_end(batch, logs)
        self._steps += 1
        if isinstance(self.save_freq, int) and self._steps % self.save_freq == 0:
            self.save()

    def on_epoch_end(self, epoch: int, logs: Mapping[str, object] | None = None) -> None:
        """Save at the end of every epoch (also one cut short by ``stop_training``).

        Parameters
        ----------
        epoch
            The epoch that ended.
        logs
            Keras's logs (unused).
        """
        self.save()

    # -- files -----------------------------------------------------------------------------------
    def save(self) -> None:
        """Write the model's weights and the data's position now, replacing the last checkpoint.

        Raises
        ------
        FormatError
            The checkpoint there names weights outside the directory (nothing is written).
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        old = self._read_raw()
        replaced = None if old is None or old.get("weights") is None else self._weights_of(old)
        self._saves += 1
        weights = f"model-{self._saves}.weights.h5"
        self.model.save_weights(str(self.directory / weights), overwrite=True)
        record = {"format": _FORMAT, "saves": self._saves, "weights": weights, "data": self.data.state_dict()}
        tmp = self.directory / f".{POSITION}.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, self.directory / POSITION)
        if replaced is not None and replaced != self.directory / weights:
            replaced.unlink(missing_ok=True)

    def _read_raw(self) -> dict[str, Any] | None:
        path = self.directory / POSITION
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise FormatError(f"unreadable checkpoint position: {exc}", file=str(path)) from exc
        if not isinstance(record, dict):
            raise FormatError("a checkpoint position must be a JSON object", file=str(path))
        return record

    def _read(self) -> dict[str, Any] | None:
        """The saved checkpoint's record, checked, or ``None`` when there is none."""
        record = self._read_raw()
        if record is None:
            return None
        path = self.directory / POSITION
        if record.get("format") != _FORMAT or not {"saves", "weights", "data"} <= set(record):
            raise FormatError(f"not a KerasCheckpoint position of format {_FORMAT}", file=str(path))
        if not self._weights_of(record).is_file():
            raise FormatError(f"the checkpoint's weights {record['weights']!r} are missing", file=str(path))
        return record

    def _weights_of(self, record: dict[str, Any]) -> Path:
        """The weights file a position record names, which must be inside the directory.

        Raises
        ------
        FormatError
            The name leaves the directory (``..``, an absolute path, a link leading out).
        """
        return confined(self.directory, record.get("weights"), file=str(self.directory / POSITION), key="weights")
