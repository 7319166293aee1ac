"""From ``open`` until every needed value of 2 ROOT files is read, against ``uproot.concatenate``.

JetClass-like jets (8 jagged float32 particle variables sharing the counter ``npart``,
5 jet scalars: 14 branches), written by uproot in 2 files (zlib level 1). A spec
needs 9 of the 14 branches (6 particle variables, 3 scalars). Timed, interleaved,
each in a fresh process so no page cache or import state is shared beyond the OS (both
clocks start after ``import uproot, awkward``):

* ``ours``: ``lstm_data.open(files, columns=needed, threads=T)`` plus one
  ``shuffle=False`` epoch of ``Batches`` (batch 512, particles padded to 128);
* ``uproot``: ``uproot.concatenate`` of just the needed branches with a
  ``T``-thread ``decompression_executor`` (reading only, no batches).

The figure is the median over runs of the per-run ratio uproot / ours (> 1: ours is
faster). Run from a checkout::

    python bench/root_read.py --jets 200000 --runs 7 --threads 2 [--inflate zlib]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PARTICLE = ["px", "py", "pz", "energy", "deta", "dphi", "d0val", "dzval"]
SCALARS = ["jet_pt", "jet_eta", "jet_phi", "jet_energy", "label"]
NEEDED_PART = PARTICLE[:6]
NEEDED_SCALARS = ["jet_pt", "jet_eta", "label"]
NEEDED = [f"part_{v}" for v in NEEDED_PART] + NEEDED_SCALARS


def write_files(folder: Path, jets: int, files: int = 2, seed: int = 0, step: int = 10_000) -> list[Path]:
    """JetClass-like ROOT files (uproot, zlib level 1), ``step`` jets per basket."""
    import awkward as ak
    import uproot

    rng = np.random.default_rng(seed)
    paths = []
    per = jets // files
    for k in range(files):
        path = folder / f"jets_{k}.root"
        with uproot.recreate(path, compression=uproot.ZLIB(1)) as fh:
            tree = None
            for a in range(0, per, step):
                n = min(step, per - a)
                counts = np.clip(rng.poisson(40, n), 1, 128)
                total = int(counts.sum())
                part = {}
                for v in PARTICLE:
                    x = rng.normal(0.0, 1.0, total).astype(np.float32)
                    if v in ("d0val", "dzval"):
                        x[rng.random(total) < 0.6] = 0.0  # neutral particles have no track
                    part[v] = np.round(x, 3).astype(np.float32)  # the precision a detector gives
                cols = {"part": ak.unflatten(ak.zip(part), counts)}
                cols.update({s: rng.normal(100.0, 30.0, n).astype(np.float32) for s in SCALARS[:-1]})
                cols["label"] = rng.integers(0, 10, n).astype(np.int32)
                if tree is None:
                    tree = fh.mktree("tree", {c: (v.type.content if isinstance(v, ak.Array) else v.dtype)
                                              for c, v in cols.items()})
                tree.extend(cols)
        paths.append(path)
    return paths


_OURS = r"""
import sys, time, warnings, json
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import lstm_data
from lstm_data import Batches, BatchSpec, Ragged, Scalars
files, threads = json.loads(sys.argv[1]), int(sys.argv[2])
needed_part, needed_scalars = json.loads(sys.argv[3]), json.loads(sys.argv[4])
from lstm_data.io.root.baskets import set_inflater
set_inflater(sys.argv[5] if sys.argv[5] != "auto" else None)
import uproot, awkward  # imported before the clock starts, as in the uproot script
t1 = time.perf_counter()
ds = lstm_data.open(files, columns=needed_part + needed_scalars, threads=threads)
t2 = time.perf_counter()
spec = BatchSpec(inputs={"part": Ragged(needed_part, max_len=128, pad_value=0.0),
                         "jet": Scalars(needed_scalars[:-1])},
                 targets={"label": Scalars(needed_scalars[-1:])})
b = Batches(ds, spec, batch_size=512, shuffle=False)
for i in range(len(b)):
    b[i]
t3 = time.perf_counter()
print("TIME" + json.dumps({"total": t3 - t1, "open": t2 - t1, "epoch": t3 - t2}))
"""

_UPROOT = r"""
import sys, time, json
from concurrent.futures import ThreadPoolExecutor
import uproot, awkward
files, threads, needed = json.loads(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
t1 = time.perf_counter()
with ThreadPoolExecutor(threads) as pool:
    arrays = uproot.concatenate([f + ":tree" for f in files], filter_name=needed,
                                decompression_executor=pool)
t3 = time.perf_counter()
assert len(arrays.fields) == len(needed)
print("TIME" + json.dumps({"total": t3 - t1}))
"""


def _run(code: str, *args: str) -> dict:
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    for line in res.stdout.splitlines():
        if line.startswith("TIME"):
            return json.loads(line[4:])
    raise RuntimeError(res.stderr[-2000:])


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--jets", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--folder", default=None, help="keep the files here (default: a temp folder)")
    parser.add_argument("--inflate", default="auto", choices=["auto", "libdeflate", "isal", "zlib"],
                        help="our zlib inflater (auto: the fastest installed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        files = sorted(folder.glob("jets_*.root"))
        if len(files) != 2:
            t = time.perf_counter()
            files = write_files(folder, args.jets)
            print(f"wrote {len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB "
                  f"in {time.perf_counter() - t:.1f} s")
        names = json.dumps([str(f) for f in files])
        ours, theirs, ratios = [], [], []
        ours_args = (names, str(args.threads), json.dumps([f"part_{v}" for v in NEEDED_PART]),
                     json.dumps(NEEDED_SCALARS), args.inflate)
        _run(_OURS, *ours_args)  # warm the page cache and imports once
        for _ in range(args.runs):
            o = _run(_OURS, *ours_args)
            u = _run(_UPROOT, names, str(args.threads), json.dumps(NEEDED))
            ours.append(o)
            theirs.append(u["total"])
            ratios.append(u["total"] / o["total"])
        med = statistics.median
        print(f"ours (open + epoch, threads={args.threads}, inflate={args.inflate}): "
              f"{med(o['total'] for o in ours):.3f} s (open {med(o['open'] for o in ours):.3f} s, "
              f"epoch {med(o['epoch'] for o in ours):.3f} s)")
        print(f"uproot.concatenate of {len(NEEDED)} of 14 branches, {args.threads}-thread "
              f"decompression_executor: {med(theirs):.3f} s")
        print(f"ratio uproot / ours (median of {args.runs} interleaved runs): {med(ratios):.2f}x")


if __name__ == "__main__":
    main()
