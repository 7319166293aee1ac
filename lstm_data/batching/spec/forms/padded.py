"""The padded form, ``Ragged(layout="padded")`` (the default): ``(B, P, V)``."""
from __future__ import annotations

from lstm_data.batching.spec.forms.base import Form

__all__ = ["Padded"]


class Padded(Form):
    """``(B, P, V)``: each row's kept elements, then its padded slots (the rule of :class:`Form`)."""

    name = "padded"
    axes = "BPV"
    kernel_layout = "padded"
