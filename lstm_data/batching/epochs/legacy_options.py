"""The keyword spellings of options before their homes existed, mapped to their homes.

``Batches(ds, spec, batch_size=256, seed=1, nan_to=0.0)`` still works for one
release: each keyword goes to the object that now holds it (an
:class:`~lstm_data.batching.order.options.Order` or the
:class:`~lstm_data.batching.spec.batch_spec.BatchSpec`) with a ``DeprecationWarning``
that names the new spelling (:mod:`lstm_data._util.deprecation`). So does
``Batches(..., read=ReadOptions(read_ahead=...))``: ``read_ahead`` is now
``Order(read_ahead=...)``. An unknown keyword is an
:class:`~lstm_data.errors.OptionError` naming it and the close match.
"""
from __future__ import annotations

from typing import Any, Mapping

from lstm_data._util.declared import unknown_option
from lstm_data._util.deprecation import warn_renamed
from lstm_data.batching.order.options import ORDER_KEYWORDS, Order
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.errors import OptionError
from lstm_data.io.read_options import ReadOptions

__all__ = ["legacy_options", "SPEC_KEYWORDS"]

#: options that moved into the BatchSpec
SPEC_KEYWORDS = frozenset({"nan_to", "pad_to_multiple_of"})


def legacy_options(spec: BatchSpec, order: Order | int | None, read: ReadOptions | None,
                   options: Mapping[str, Any], where: str,
                   shorthand: Mapping[str, Any] | None = None) -> tuple[BatchSpec, Order]:
    """``(spec, order)`` with the old keyword ``options`` and ``read`` moved into them (warned once each).

    ``shorthand`` holds the :class:`Order` fields given by name (``Batches(ds, spec,
    batch_size=256)``): each one not ``None`` replaces the order's, checked by ``Order``.

    Raises
    ------
    OptionError
        An unknown keyword, or ``order``/``read`` of the wrong type.
    """
    if order is None:
        order = Order()
    elif isinstance(order, int) and not isinstance(order, bool):
        order = Order(batch_size=order)
    elif not isinstance(order, Order):
        raise OptionError(f"{where}: order must be an Order (or a batch size), got {type(order).__name__}")
    if read is not None:
        if not isinstance(read, ReadOptions):
            raise OptionError(f"{where}: read must be a ReadOptions, got {type(read).__name__}")
        warn_renamed(f"{where}(read=ReadOptions(read_ahead=...))", "Order(read_ahead=...)", stacklevel=3)
        if read.read_ahead is not None and order.read_ahead is None:
            order = order.replace(read_ahead=read.read_ahead)
    given = {k: v for k, v in (shorthand or {}).items() if v is not None}
    if given:
        order = order.replace(**given)
    if not options:
        return spec, order
    known = ORDER_KEYWORDS | SPEC_KEYWORDS
    for name in options:
        if name not in known:
            raise unknown_option(name, known | {"order", "rows"}, where)
    moved = {"Order": {k: v for k, v in options.items() if k in ORDER_KEYWORDS},
             "BatchSpec": {k: v for k, v in options.items() if k in SPEC_KEYWORDS}}
    spelled = ", ".join(f"{home}({', '.join(f'{k}=...' for k in given)})"
                        for home, given in moved.items() if given)
    warn_renamed(f"{where}({', '.join(f'{k}=...' for k in options)})", spelled, stacklevel=3)
    if moved["Order"]:
        order = order.replace(**moved["Order"])
    if moved["BatchSpec"]:
        spec = spec.replace(**moved["BatchSpec"])
    return spec, order
