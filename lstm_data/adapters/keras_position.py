"""Where a :class:`~lstm_data.adapters.keras.KerasBatches` stands in the epoch ``fit`` trains.

Keras sizes every epoch of a ``fit`` call by the ``num_batches`` it reads once, at
the start. To continue an epoch that stopped after ``k`` steps, the resumed epoch's
training pass reports ``n - k`` batches when it starts (Keras's generator reads
``num_batches`` again then) and serves batch ``k + i`` at step ``i``; Keras then
ends that pass after ``n - k`` steps (its generator runs out) and the next epochs
are whole again. The pass is known by the epoch callback: ``fit`` calls the
callbacks' ``on_epoch_begin`` after its warm-up read and before the epoch's pass.

Keras warns "Your input ran out of data" when a pass ends early; for the resumed
pass, which ends early by design, that warning is silenced while it runs.
"""
from __future__ import annotations

import warnings
from typing import Any, cast

from lstm_data.errors import OptionError

__all__ = ["Position", "RAN_OUT"]

#: the start of the warning Keras gives when a pass ends before the steps it counted
RAN_OUT = "Your input ran out of data"


class Position:
    """The steps trained in the current epoch, and the resumption a loaded state asks for.

    Attributes
    ----------
    resume : tuple of int or None
        ``(epoch, step)`` of a loaded state whose epoch has not started yet.
    skip : int
        Steps of the running pass's epoch trained before it (a resumed pass), else 0.
    trained : int
        Steps of the current epoch trained on (as the epoch callback reports them).
    """

    def __init__(self) -> None:
        self.resume: tuple[int, int] | None = None
        self.skip = 0
        self.trained = 0
        self._quiet: Any = None  # the warnings filter of a resumed pass

    def shift(self) -> int:
        """Batches before Keras's step 0: the resumed pass's, or a pending resumption's (the
        warm-up read of ``fit`` then gets the first batch still to come)."""
        return self.resume[1] if self.resume is not None else self.skip

    def load(self, epoch: int, step: int) -> None:
        """Resume ``epoch`` at ``step`` when ``fit`` starts that epoch."""
        self.reset()
        self.resume = (epoch, step)
        self.trained = step

    def start(self, epoch: int) -> int | None:
        """``fit`` starts training ``epoch``: the steps to skip when it is the resumed one, else ``None``.

        Raises
        ------
        OptionError
            A state was loaded for another epoch than the one ``fit`` starts.
        """
        if self.resume is None:
            return None
        (want, step), self.resume = self.resume, None
        if epoch != want:
            raise OptionError(f"KerasBatches resumes epoch {want} at step {step}, but fit starts epoch {epoch}: "
                              f"pass fit(..., initial_epoch={want})")
        self.skip = self.trained = step
        if step:
            warnings.filterwarnings("ignore", message=RAN_OUT)
            self._quiet = warnings.filters[0]
        return step

    def step_done(self, step: int) -> None:
        """Keras finished step ``step`` of the running pass."""
        self.trained = self.skip + int(step) + 1

    def pass_ended(self, complete: bool) -> None:
        """A pass ended (``complete``: every batch of the epoch was served, the epoch moves on)."""
        self.skip = 0
        if complete:
            self.trained = 0
        self._unquiet()

    def reset(self) -> None:
        """Forget everything (the epoch was set by hand)."""
        self.resume, self.skip, self.trained = None, 0, 0
        self._unquiet()

    def _unquiet(self) -> None:
        if self._quiet is not None:
            try:
                cast("list[Any]", warnings.filters).remove(self._quiet)  # the list the warnings module reads
            except ValueError:  # already gone (the filters were reset meanwhile)
                pass
            self._quiet = None

    def __getstate__(self) -> dict[str, Any]:
        return {"resume": self.resume, "skip": self.skip, "trained": self.trained, "_quiet": None}
