"""No read path imports pandas: importing it is a quarter of a second of every first epoch."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from lstm_data.data.synthetic import write_csv

CONFIG = Path(__file__).resolve().parents[1] / "data/weaver/JetClass_full.yaml"  # weaver-core's


def _write_files(folder):
    """A Parquet, ROOT, CSV and HDF5 file of ragged rows, and the JetClass-like jets (ROOT and Parquet)."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    h5py = pytest.importorskip("h5py")
    ak = pytest.importorskip("awkward")
    uproot = pytest.importorskip("uproot")
    from lstm_data.data.examples.weaver_jets import make_jets, write_jets

    counts = np.arange(40) % 5
    values = np.arange(counts.sum(), dtype=np.float32)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    pq.write_table(pa.table({"hit_x": pa.ListArray.from_arrays(pa.array(offsets), pa.array(values)),
                             "e": np.arange(40, dtype=np.float32)}), folder / "rows.parquet")
    with uproot.recreate(folder / "rows.root") as fh:
        fh["tree"] = {"hit_x": ak.unflatten(values, counts), "e": np.arange(40, dtype=np.float32)}
    write_csv(folder / "rows.csv", 40, seed=1)
    with h5py.File(folder / "rows.h5", "w") as fh:
        cells = np.empty(40, object)
        cells[:] = [values[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
        fh.create_dataset("hit_x", data=cells, dtype=h5py.vlen_dtype(np.float32))
        fh.create_dataset("e", data=np.arange(40, dtype=np.float32))
    jets = make_jets(300, 2)
    write_jets(folder / "jets.root", jets)
    part = {f"part_{k}": pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(jets["counts"])]).astype(np.int32)),
                                        pa.array(v)) for k, v in jets["part"].items()}
    pq.write_table(pa.table({**part, **jets["jets"]}), folder / "jets.parquet", row_group_size=100)


def test_reading_parquet_root_csv_hdf5_and_weaver_batches_never_imports_pandas(tmp_path):
    """Open each format, build a batch from it (and weaver-core's JetClass config over ROOT and Parquet
    jets): pandas stays out of ``sys.modules``."""
    pytest.importorskip("yaml")
    _write_files(tmp_path)

    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        import lstm_data
        from lstm_data import BatchSpec, Batches, Order, Ragged, Scalars

        folder = Path({str(tmp_path)!r})
        for name in ("rows.parquet", "rows.root", "rows.csv", "rows.h5"):
            ds = lstm_data.open(folder / name)
            group, names = next(iter(ds.groups.items()))
            spec = BatchSpec(inputs={{"x": Ragged(names[:2], max_len=4), "s": Scalars(ds.scalar_names[:1])}})
            batch = Batches(ds, spec, Order(batch_size=16))[0]
            print(name, batch[0]["x"].shape)
            assert "pandas" not in sys.modules, f"reading {{name}} imported pandas"
        spec = BatchSpec.from_weaver({str(CONFIG)!r}, observers=False)
        for name in ("jets.root", "jets.parquet"):
            read = lstm_data.ReadOptions(needed=tuple(spec.variables), threads=2)
            batches = Batches(lstm_data.open(folder / name, read=read), spec, Order(batch_size=64))
            print(name, batches[0][0]["pf_features"].shape, batches[len(batches) - 1][0]["pf_points"].shape)
            assert "pandas" not in sys.modules, f"reading {{name}} with weaver-core's config imported pandas"
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["rows.parquet", "rows.root", "rows.csv", "rows.h5",
                                                   "jets.root", "jets.parquet"], lines
    assert lines[-2].split(" ", 1)[1] == "(64, 17, 128) (44, 2, 128)", lines
