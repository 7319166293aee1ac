"""``lstm-data inspect --spec S``: what the spec's order costs on this data, and its bucket lengths."""
from __future__ import annotations

from typing import Any

import numpy as np

from lstm_data._util.plural import counted

__all__ = ["order_report", "order_lines"]


def order_report(ds: Any, spec_path: str) -> dict[str, Any]:
    """The batch count, :meth:`Batches.stats` of epoch 0 and the bucket lengths of ``spec_path``'s order.

    Parameters
    ----------
    ds
        The opened dataset.
    spec_path
        A TOML file with the spec's tables and, optionally, ``[order]``.

    Returns
    -------
    dict
        ``batches``, ``stats`` and, with ``bucket_by``, ``bucket_lengths``: the chosen
        lengths (``bucket_lengths``, or what ``"auto"`` would choose for ``max_shapes``),
        and the padding per real element they give when each row pads to its own length.
    """
    from lstm_data.batching.epochs.batches import Batches
    from lstm_data.batching.order.bucket_lengths import choose_lengths, padding_of
    from lstm_data.batching.order.budget import row_widths
    from lstm_data.batching.order.options import Order
    from lstm_data.batching.spec.batch_spec import BatchSpec

    spec = BatchSpec.from_toml(spec_path)
    order = Order.from_toml(spec_path)
    batches = Batches(ds, spec, order.replace(seed=0 if order.seed is None else order.seed))
    doc: dict[str, Any] = {"spec": spec_path, "batches": len(batches), "stats": batches.stats(0)}
    if order.bucket_by is not None:
        f = next(f for f in batches.fields if f.name == order.bucket_by)
        assert f.group is not None  # bucket_by is checked to be a Ragged output
        lens = batches.builder.row_lengths(f.group)
        if f.ragged.max_len is not None:
            lens = np.minimum(lens, f.ragged.max_len)
        widths = row_widths(lambda n: batches.builder.width(f, n), lens, None)
        chosen = order.bucket_lengths is not None
        lengths = (np.array(sorted({batches.padded_width(f, int(n)) for n in np.unique(lens)})) if chosen
                   else choose_lengths(widths, order.max_shapes))
        real = int(lens.sum())
        doc["bucket_lengths"] = {
            "output": f.name, "group": f.group, "chosen": "in use" if chosen else
            f"bucket_lengths='auto', max_shapes={order.max_shapes} would choose",
            "lengths": [int(v) for v in lengths],
            "padding_per_element": padding_of(widths, lengths) / real if real else float("nan")}
    return doc


def order_lines(doc: dict[str, Any]) -> list[str]:
    """The text lines of :func:`order_report`."""
    st = doc["stats"]
    lines = ["", f"order of {doc['spec']}: {counted(doc['batches'], 'batch')} per epoch"]
    for name, pad in st["padding"].items():
        cut = st["truncated"].get(name)
        trunc = f"; {counted(cut['rows'], 'row')} ({100 * cut['fraction']:.2f}%) longer than max_len" if cut else ""
        lines.append(f"  {name}: {pad:.3f} padded slots per real element{trunc}")
    files = "-" if st["file_mixing"] is None else f"{st['file_mixing']:.2f}"
    lens = ", ".join(f"{k} {v:.2f}" for k, v in st["length_mixing"].items())
    lines.append(f"  mixing (1 = full shuffle): rows {st['mixing']:.2f}, files {files}, lengths {lens}")
    bl = doc.get("bucket_lengths")
    if bl:
        lines.append(f"  bucket lengths of {bl['output']} ({bl['chosen']}): "
                     f"{', '.join(map(str, bl['lengths']))}; each row padded to its length: "
                     f"{bl['padding_per_element']:.3f} padded per real element")
    return lines
