"""lstm_data.predict with a real Keras 3 model saved as a .keras file (torch backend)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")

import lstm_data  # noqa: E402
from lstm_data.data.synthetic import make_dataset  # noqa: E402


@pytest.mark.slow
def test_a_keras_file_scores_as_its_predict_on_our_batches(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    src = tmp_path / "a.parquet"
    make_dataset(50).to_parquet(src)
    spec = lstm_data.BatchSpec(inputs={"x": lstm_data.Scalars(["calE", "nHit"])})
    inp = keras.Input((2,), name="x")
    model = keras.Model({"x": inp}, keras.layers.Dense(3, activation="softmax")(inp))
    model.save(tmp_path / "m.keras")
    out = lstm_data.predict(str(tmp_path / "m.keras"), str(src), spec, tmp_path / "o",
                            options=lstm_data.PredictOptions(batch_size=16))
    got = pq.read_table(out[0])
    batches = lstm_data.Batches(lstm_data.open(str(src)), spec, lstm_data.Order(batch_size=16, shuffle=False))
    want = np.concatenate([model.predict_on_batch(batches[k][0]) for k in range(len(batches))])
    for j in range(3):
        assert np.array_equal(got.column(f"score_{j}").to_numpy().view(np.uint32), want[:, j].view(np.uint32))
