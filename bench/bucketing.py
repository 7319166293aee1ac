"""Length-bucketed batches: what ``Batches(bucket_by=...)`` saves, same run.

``bucketing``: on numu_v3 with png3d ``max_len=20``, padded elements per real
element of ``input_png3d`` and bytes of every output per epoch, with and without
bucketing (deterministic counts), and a Keras 3 ``Masking`` + ``LSTM`` ``fit``
epoch through :class:`~lstm_data.adapters.keras.KerasBatches` with and without it
(interleaved epochs, medians; the losses of both next to each other). The events
have about 3 png3d prongs each, as the numu_v3 selection users train on
(``make_dataset(png_mean=2)``; the suite's other data has about 4.2).
"""
from __future__ import annotations

import statistics
from typing import Callable

import numpy as np

from lstm_data import Order
from lstm_data.batching import Batches, BatchSpec, Ragged, Scalars
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset

from bench.data import BenchData
from bench.timing import Report, interleaved_samples, median_ratio

__all__ = ["stage_bucketing", "BUCKET_MAX_LEN"]

#: png3d prong slots of the bucketing stage (the numu_v3 setting)
BUCKET_MAX_LEN = 20


def _bucket_spec(max_len: int = BUCKET_MAX_LEN) -> BatchSpec:
    """numu_v3 (``examples/numu_v3.toml``'s fields) with png3d ``max_len`` slots."""
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png2d": Ragged(PNG2D_VARS, max_len=10, sort_by="png2d.calE"),
                             "input_png3d": Ragged(PNG3D_VARS, max_len=max_len, sort_by="png.calE")},
                     targets={"target_total": Scalars(["trueE"]), "target_primary": Scalars(["trueLepE"])})


def _epoch_counts(batches: Batches) -> tuple[float, int, int]:
    """Over one epoch: padded per real element of ``input_png3d``, bytes of every output, of png3d."""
    lens = np.minimum(batches.builder.row_lengths("png"), BUCKET_MAX_LEN)
    slots = nbytes = png3d_bytes = 0
    for batch in batches:
        for part in batch:
            nbytes += sum(a.nbytes for a in part.values())
        slots += batch[0]["input_png3d"].size
        png3d_bytes += batch[0]["input_png3d"].nbytes
    real = int(lens.sum()) * len(PNG3D_VARS)  # every row once per epoch
    return (slots - real) / real, nbytes, png3d_bytes


def stage_bucketing(report: Report, data: BenchData, quick: bool, batch_size: int = 1024) -> None:
    """Padding and bytes per epoch with and without bucketing, then the Keras ``fit`` rows."""
    spec = _bucket_spec()
    numu = make_dataset(data.n_rows, data.seed, png_mean=2.0)  # ~3 png3d prongs per event
    report.ratio("bucketing", "mean png3d prongs per event (numu_v3-like data)",
                 float(np.diff(numu.ragged("png")[1]).mean()))
    plain = Batches(numu, spec, Order(batch_size=batch_size, seed=0))
    bucketed = Batches(numu, spec, Order(batch_size=batch_size, seed=0, bucket_by="input_png3d"))
    rounded = Batches(numu, spec.replace(pad_to_multiple_of=4),
                      Order(batch_size=batch_size, seed=0, bucket_by="input_png3d"))
    counts = {name: _epoch_counts(b) for name, b in
              (("plain", plain), ("bucketed", bucketed), ("rounded", rounded))}
    report.ratio("bucketing", "padded per real png3d element, max_len 20, no bucketing",
                 counts["plain"][0])
    report.ratio("bucketing", "padded per real png3d element, bucketing", counts["bucketed"][0])
    report.ratio("bucketing", "padded per real png3d element, bucketing, pad_to_multiple_of=4",
                 counts["rounded"][0])
    report.ratio("bucketing", "bytes per epoch, all outputs, bucketing / none",
                 counts["bucketed"][1] / counts["plain"][1])
    report.ratio("bucketing", "bytes per epoch, input_png3d, bucketing / none",
                 counts["bucketed"][2] / counts["plain"][2])
    _keras_fit(report, numu, quick, batch_size)


def _keras_fit(report: Report, dataset: InMemoryDataset, quick: bool, batch_size: int) -> None:
    """A Keras 3 Masking + LSTM ``fit`` epoch on png3d with and without bucketing (interleaved)."""
    try:
        import keras

        from lstm_data.adapters.keras import KerasBatches
    except ImportError:  # the keras extra is not installed: no fit rows
        return

    spec = BatchSpec(inputs={"input_png3d": Ragged(PNG3D_VARS, max_len=BUCKET_MAX_LEN, sort_by="png.calE")},
                     targets={"target_total": Scalars(["trueE"])})
    n_rows = min(len(dataset), 20_000 if quick else 50_000)
    rows = np.arange(n_rows)
    seqs, feeds, models, losses = {}, {}, {}, {}
    for name, kw in (("plain", {}), ("bucketed", {"bucket_by": "input_png3d"})):
        seqs[name] = Batches(dataset, spec.replace(nan_to=0.0), Order(batch_size=batch_size, seed=0, **kw), rows=rows)
        feeds[name] = KerasBatches(seqs[name], sample_weights=False)
        keras.utils.set_random_seed(0)
        sig = seqs[name].signature()["input_png3d"]
        inputs = {"input_png3d": keras.Input(shape=sig.sample_shape, name="input_png3d")}
        h = keras.layers.LSTM(32)(keras.layers.Masking(0.0)(inputs["input_png3d"]))
        out = keras.layers.Dense(1, name="target_total")(h)
        models[name] = keras.Model(inputs=inputs, outputs={"target_total": out})
        models[name].compile(optimizer=keras.optimizers.Adam(1e-3), loss={"target_total": "mse"})
        losses[name] = []

    def epoch(name: str) -> Callable[[], None]:
        def run() -> None:
            # one KerasBatches per model, as users train: each fit call is its next epoch
            hist = models[name].fit(feeds[name], epochs=1, shuffle=False, verbose=0)
            losses[name].append(float(hist.history["loss"][-1]))
        return run

    rounds = interleaved_samples({"plain": epoch("plain"), "bucketed": epoch("bucketed")},
                                 repeats=3 if quick else 5, warmup=1, rotate=True)
    t = {name: statistics.median(s) for name, s in rounds.items()}
    for name in ("plain", "bucketed"):
        report.time("bucketing", f"Keras LSTM fit epoch, {name} (losses "
                    f"{', '.join(f'{x:.3g}' for x in losses[name])})", t[name], items=n_rows, ours=True)
    report.ratio("bucketing", "Keras LSTM fit epoch time, bucketing / none", median_ratio(rounds, "bucketed", "plain"))
