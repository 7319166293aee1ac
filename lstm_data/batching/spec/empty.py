"""The declaration of what a batch does with a row whose ragged group has no elements: ``Ragged(empty=...)``.

A fully padded row breaks some models: cuDNN's LSTM (and
``torch.nn.utils.rnn.pack_padded_sequence``) refuses a length of 0, and an
attention layer whose mask hides every slot of a row takes a softmax over
nothing, which is NaN. A ``Ragged`` field says what its empty rows become:

``"keep"`` (default)
    As they are: length 0, every slot padding, mask all False, no element in a
    packed output.
``"one_step"``
    The row gets one padded step that counts as an element: its length is 1,
    its mask is True at that step (the first slot with ``padding="post"``, the
    last with ``"pre"``), and a packed output holds one element of pad values
    for it (``cu_seqlens`` counts it). The step's values are the field's pad
    values (``Standardize.pad_value`` per variable where given, ``nan_to``
    replacing NaN), so set a finite ``pad_value``. The width of a batch is at
    least 1. Noise (``BatchSpec(augment=...)``) never reaches that step.
``"drop"``
    Rows whose group has no elements are left out of the rows of the
    ``Batches`` (as a selection is): every order, shard, split and store
    skips them. Several fields with ``"drop"`` drop the rows empty in any of
    their groups.

Other rows are never changed.
"""
from __future__ import annotations

from typing import Any

from lstm_data.errors import SchemaError

__all__ = ["EMPTY_RULES", "check_empty"]

#: the choices of ``Ragged(empty=...)``
EMPTY_RULES = ("keep", "one_step", "drop")


def check_empty(value: Any, where: str = "Ragged") -> str:
    """``value`` if it is one of :data:`EMPTY_RULES`, else a :class:`SchemaError` naming it.

    Parameters
    ----------
    value
        The ``empty`` option.
    where
        Named in the error.

    Returns
    -------
    str
        The rule.
    """
    if value not in EMPTY_RULES:
        raise SchemaError(f"{where}: empty must be one of {list(EMPTY_RULES)} (what a row without elements "
                          f"becomes), got {value!r}")
    return str(value)
