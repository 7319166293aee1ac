"""ROOT (or Parquet) files whose values exceed a memory cap: one block-shuffled epoch read on demand, peak RSS.

Run from a checkout (it writes its files first, then reads them in a fresh process)::

    python bench/root_larger_than_ram.py --values-gb 6 --cap-gb 2 --dir /tmp/jets
    python bench/root_larger_than_ram.py --values-gb 1.5 --cap-gb 0.5      # a smaller multiple
    python bench/root_larger_than_ram.py --format parquet --values-gb 1.5 --cap-gb 0.5

With ``--format parquet`` the same columns go to Parquet files (a row group per cluster's
worth of jets, ``P_v0`` ... list columns), read as :class:`~lstm_data.io.parquet.ParquetDataset`.

The files are JetClass-like: per jet, 8 jagged float32 particle variables (20 to 60
particles), two scalars and the jet's number ``row``, 100k jets per file, one
cluster per 10k jets (an ``extend`` each), uncompressed (random numbers do not
compress; decompression is measured elsewhere). A fresh process opens them with
``in_ram=False``, builds one ``shuffle="block"`` epoch of ``Batches`` (batch 512,
padded to 128) and reports: rows seen (every row exactly once is checked), the
epoch's time, the peak RSS above the process's baseline (after its imports and a
first small batch; ``VmHWM`` restarted through ``/proc/self/clear_refs``) against
the cap, and the most times one cluster chunk was decoded (at most 2 expected).
Existing files of the same size in ``--dir`` are reused.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

JETS_PER_FILE = 100_000
JETS_PER_CLUSTER = 10_000
N_VARS = 8

_CHILD = r"""
import json, sys, time
import numpy as np
import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024

paths = sys.argv[1:]
sep = "." if paths[0].endswith(".parquet") else "_"
spec = BatchSpec(inputs={"particles": Ragged([f"P{sep}v{i}" for i in range(8)], max_len=128),
                         "jet": Scalars(["jet_pt", "jet_eta"])}, targets={"row": Scalars(["row"])})
Batches(lstm_data.open(paths[0], in_ram=False, columns=["jet_pt", "row"]),
        BatchSpec(inputs={"s": Scalars(["jet_pt"])}), Order(batch_size=8))[0]
base = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")
started = time.perf_counter()
data = lstm_data.open(paths, in_ram=False)
opened = time.perf_counter() - started
for part in getattr(data, "datasets", [data]):
    part.io_stats.track_chunks()
batches = Batches(data, spec, Order(batch_size=512, shuffle="block", seed=1))
seen = np.zeros(len(data), dtype=np.uint8)  # a byte a row: the check costs little of the peak
total = 0
started = time.perf_counter()
for i in range(len(batches)):
    rows = batches.batch(i, 0)[1]["row"].ravel().astype(np.int64)
    np.add.at(seen, rows, 1)
    total += len(rows)
epoch = time.perf_counter() - started
parts = getattr(data, "datasets", [data])
decodes = max(max(p.io_stats.per_chunk.values()) for p in parts)
chunks = sum(getattr(p, "n_chunks", len(getattr(p, "row_group_rows", [0])) - 1) for p in parts)
print(json.dumps({"rows": len(data), "every_row_once": bool((seen == 1).all()) and total == len(data), "open_s": opened,
                  "epoch_s": epoch, "peak_above_base": status("VmHWM") - base, "base": base,
                  "max_decodes_per_chunk": decodes, "chunks": chunks}))
"""


def write_files(directory: Path, values_bytes: float, seed: int = 0, fmt: str = "root",
                jets_per_file: int = JETS_PER_FILE) -> tuple[list[str], int]:
    """JetClass-like files holding about ``values_bytes`` of decoded particle values,
    ``jets_per_file`` jets each."""
    import awkward as ak
    import numpy as np
    import uproot

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per_jet = 40 * N_VARS * 4
    n_files = max(1, round(values_bytes / (per_jet * jets_per_file)))
    paths, total, start = [], 0, 0
    for f in range(n_files):
        path = directory / f"jets_{f:03d}.{fmt}"
        k = rng.integers(20, 61, jets_per_file)
        total += int(k.sum()) * N_VARS * 4
        paths.append(str(path))
        if path.exists():
            start += jets_per_file
            continue
        if fmt == "parquet":
            _write_parquet(path, k, rng, start)
            start += jets_per_file
            continue
        with uproot.recreate(path, compression=None) as fh:
            tree = None
            for a in range(0, jets_per_file, JETS_PER_CLUSTER):
                kk = k[a:a + JETS_PER_CLUSTER]
                parts = ak.zip({f"v{i}": ak.unflatten(rng.random(int(kk.sum()), dtype=np.float32), kk)
                                for i in range(N_VARS)})
                cols = {"jet_pt": rng.random(len(kk)).astype(np.float32),
                        "jet_eta": rng.normal(size=len(kk)).astype(np.float32),
                        "row": np.arange(start + a, start + a + len(kk), dtype=np.int64), "P": parts}
                if tree is None:
                    tree = fh.mktree("Events", {"jet_pt": np.float32, "jet_eta": np.float32, "row": np.int64,
                                                "P": parts.type.content})
                tree.extend(cols)
        start += jets_per_file
    return paths, total


def _write_parquet(path: Path, k, rng, start: int) -> None:  # noqa: ANN001 - a bench script
    """The same columns as a Parquet file, one row group per cluster's worth of jets."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for a in range(0, len(k), JETS_PER_CLUSTER):
        kk = k[a:a + JETS_PER_CLUSTER]
        off = pa.array(np.concatenate([[0], np.cumsum(kk)]).astype(np.int32))
        cols = {"jet_pt": rng.random(len(kk)).astype(np.float32),
                "jet_eta": rng.normal(size=len(kk)).astype(np.float32),
                "row": np.arange(start + a, start + a + len(kk), dtype=np.int64)}
        table = pa.table({**{n: pa.array(v) for n, v in cols.items()},
                          **{f"P.v{i}": pa.ListArray.from_arrays(off, pa.array(rng.random(int(kk.sum()),
                                                                                          dtype=np.float32)))
                             for i in range(N_VARS)}})
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="none")
        writer.write_table(table, row_group_size=JETS_PER_CLUSTER)
    writer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--values-gb", type=float, default=6.0, help="decoded particle values to write (GB)")
    parser.add_argument("--cap-gb", type=float, default=2.0, help="the memory cap checked (GB)")
    parser.add_argument("--dir", default="/tmp/lstm_data_root_larger_than_ram", help="where the files go")
    parser.add_argument("--format", choices=("root", "parquet"), default="root", help="the files' format")
    parser.add_argument("--jets-per-file", type=int, default=JETS_PER_FILE,
                        help="jets per file (files of one size in --dir are reused)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    paths, total = write_files(Path(args.dir), args.values_gb * 1e9, fmt=args.format,
                               jets_per_file=args.jets_per_file)
    print(f"{len(paths)} files, {total / 1e9:.2f} GB of particle values (written in "
          f"{time.perf_counter() - started:.0f} s)", flush=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _CHILD, *paths], capture_output=True, text=True, env=env)
    if out.returncode:
        print(out.stderr[-3000:])
        return 1
    res = json.loads(out.stdout.strip().splitlines()[-1])
    cap = args.cap_gb * 1e9
    ok = res["every_row_once"] and res["peak_above_base"] < cap and res["max_decodes_per_chunk"] <= 2
    print(f"rows {res['rows']:,}: every row once {res['every_row_once']}; open {res['open_s']:.1f} s, epoch "
          f"{res['epoch_s']:.1f} s ({total / 1e6 / res['epoch_s']:.0f} MB/s of values); peak RSS above the "
          f"baseline {res['peak_above_base'] / 1e9:.2f} GB = {res['peak_above_base'] / 2**20:.0f} MiB (baseline {res['base'] / 1e9:.2f} GB) for "
          f"{total / 1e9:.2f} GB of values = {total / max(1, res['peak_above_base']):.1f}x, cap "
          f"{args.cap_gb:.2f} GB; chunks {res['chunks']}, decoded at most {res['max_decodes_per_chunk']}x: "
          f"{'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
