"""The channels-first form, ``Ragged(layout="channels_first")``: ``(B, V, P)``, weaver-core's."""
from __future__ import annotations

from lstm_data.batching.spec.forms.base import Form

__all__ = ["ChannelsFirst"]


class ChannelsFirst(Form):
    """``(B, V, P)``: the padded form with the variables before the slots, written so by the kernel."""

    name = "channels_first"
    axes = "BVP"
    kernel_layout = "channels_first"
