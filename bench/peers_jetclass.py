"""Side by side on JetClass-like jets: lstm_data against its peers, same-run ratios.

The data: ``--jets`` jets (200k) written by uproot (zlib level 1) as 2 ROOT files and,
with the same rows, as 1 ROOT file and 1 Parquet file (pyarrow). Per jet: 8 jagged
float32 particle variables (``part_px`` ... ``part_dz``, counter ``npart``, counts
Poisson(35) clipped to [1, 128]) and 7 float32 jet scalars (``jet_pt``, ``jet_eta``,
``jet_phi``, ``jet_energy``, ``jet_nparticles``, one-hot ``label_QCD``/``label_Tbqq``):
15 value branches plus the counter. Batches of 512, particles padded to 128 with 0.

Rows (every figure is the median over rounds of a per-round ratio; each round runs
every case once, in rotated order, so load on the shared machine hits both sides):

1. steady epoch (data in RAM, shuffled) through ``TorchBatches`` + ``DataLoader(num_workers=0)``:
   2 ROOT files vs the same rows in 1 file (``shuffle=True`` and ``False``; the batches
   are checked bitwise equal), and vs weaver-core's ``SimpleIterDataset(in_memory=True)``
   (the way ``weaver/train.py`` builds it, a data config equivalent to the spec, no
   standardisation) on the same 2 files (``--weaver-stream STEP``: its streaming loader too);
2. steady epoch of numpy batches (``Batches``) vs a hand-written vectorised numpy pad of the
   Parquet rows held by pyarrow, a naive torch ``pad_sequence`` collate, and awkward
   ``pad_none``/``fill_none`` per batch;
3. fresh processes: ``lstm_data.open`` (9 of the 15 value branches, ``threads=2``) plus one
   ``shuffle=False`` epoch vs ``uproot.concatenate`` of just those branches with a 2-thread
   ``decompression_executor`` (reading only; both clocks start after ``import uproot``);
4. fresh processes: peak RSS (``VmHWM``) over open, ``Batches`` and one epoch, 2 files vs 1.

Every batch over the 2 files is compared with weaver-core's tensors for the same rows
(``shuffle=False``). weaver-core is optional: install it from a checkout
(``pip install -e weaver-core --no-deps`` plus ``numba``); without it those rows are skipped.
Run from a checkout (several minutes)::

    python bench/peers_jetclass.py --jets 200000 --runs 5 [--folder /tmp/jetclass_like] [--weaver-stream 0.1]
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

PART = ["part_px", "part_py", "part_pz", "part_energy", "part_deta", "part_dphi", "part_d0val", "part_dz"]
JET = ["jet_pt", "jet_eta", "jet_phi", "jet_energy", "jet_nparticles"]
LABELS = ["label_QCD", "label_Tbqq"]
NEEDED = (PART[:6], ["jet_pt"], LABELS)  # 9 of the 15 value branches
BATCH, MAX_LEN = 512, 128
LAYOUT = 1  # bump when write_data changes what it writes


# -- data ---------------------------------------------------------------------------------------
def write_data(folder: Path, jets: int, seed: int = 0, step: int = 10_000) -> dict[str, list[str]]:
    """The 2 ROOT files, 1 ROOT file and 1 Parquet file of the same jets (reused if present)."""
    names = {"two": [str(folder / "jets_0.root"), str(folder / "jets_1.root")],
             "one": [str(folder / "jets_all.root")], "parquet": [str(folder / "jets_all.parquet")]}
    marker = folder / "written.json"
    want = {"jets": jets, "seed": seed, "layout": LAYOUT}
    if marker.exists() and json.loads(marker.read_text()) == want:
        return names
    import awkward as ak
    import pyarrow as pa
    import pyarrow.parquet as pq
    import uproot

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    tables = []
    with uproot.recreate(names["two"][0], compression=uproot.ZLIB(1)) as f0, \
            uproot.recreate(names["two"][1], compression=uproot.ZLIB(1)) as f1, \
            uproot.recreate(names["one"][0], compression=uproot.ZLIB(1)) as fa:
        trees: dict = {}
        for start in range(0, jets, step):
            n = min(step, jets - start)
            counts = np.clip(rng.poisson(35, n), 1, MAX_LEN)
            total = int(counts.sum())
            mom = rng.normal(0.0, 10.0, (3, total)).astype(np.float32)
            part = {"px": mom[0], "py": mom[1], "pz": mom[2],
                    "energy": np.sqrt((mom ** 2).sum(0) + 0.02).astype(np.float32),
                    "deta": rng.normal(0.0, 0.2, total), "dphi": rng.normal(0.0, 0.2, total),
                    "d0val": rng.normal(0.0, 0.05, total), "dz": rng.normal(0.0, 0.1, total)}
            for k in ("d0val", "dz"):
                part[k][rng.random(total) < 0.6] = 0.0  # neutral particles have no track
            part = {k: np.round(v, 3).astype(np.float32) for k, v in part.items()}  # detector precision
            qcd = (rng.random(n) < 0.5).astype(np.float32)
            scalars = {"jet_pt": rng.normal(600.0, 100.0, n), "jet_eta": rng.normal(0.0, 1.5, n),
                       "jet_phi": rng.uniform(-np.pi, np.pi, n), "jet_energy": rng.normal(900.0, 200.0, n),
                       "jet_nparticles": counts, "label_QCD": qcd, "label_Tbqq": 1.0 - qcd}
            scalars = {k: np.asarray(v, dtype=np.float32) for k, v in scalars.items()}
            cols = {"part": ak.unflatten(ak.zip(part), counts), **scalars}
            for fh in (f0 if start < jets // 2 else f1, fa):
                if id(fh) not in trees:
                    trees[id(fh)] = fh.mktree("tree", {c: (v.type.content if isinstance(v, ak.Array) else v.dtype)
                                                   for c, v in cols.items()})
                trees[id(fh)].extend(cols)
            offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
            tables.append(pa.table({**{f"part_{k}": pa.ListArray.from_arrays(offsets, pa.array(v))
                                       for k, v in part.items()}, **scalars}))
    pq.write_table(pa.concat_tables(tables), names["parquet"][0])
    marker.write_text(json.dumps(want))
    size = sum(Path(p).stat().st_size for p in names["two"]) / 1e6
    print(f"wrote {jets} jets: 2 ROOT files ({size:.0f} MB), 1 ROOT file, 1 Parquet file "
          f"in {time.perf_counter() - t0:.0f} s")
    return names


def specs():
    """The full spec (8 particle variables, 5 jet scalars, 2 labels) and the 9-branch one."""
    from lstm_data import BatchSpec, Ragged, Scalars

    def spec(part, jet, labels):
        return BatchSpec(inputs={"part": Ragged(part, max_len=MAX_LEN, pad_value=0.0), "jet": Scalars(jet)},
                         targets={"label": Scalars(labels)})
    return spec(PART, JET, LABELS), spec(*NEEDED)


# -- ours ---------------------------------------------------------------------------------------
def ours_batches(ds, shuffle: bool):
    import lstm_data

    return lstm_data.Batches(ds, specs()[0], lstm_data.Order(batch_size=BATCH, seed=0, shuffle=shuffle))


def ours_torch(ds, shuffle: bool):
    """A ``DataLoader`` of ``TorchBatches``: each pass is the next epoch."""
    import torch
    from lstm_data.torch import TorchBatches

    data = TorchBatches(ours_batches(ds, shuffle))
    return torch.utils.data.DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=0)


def loader_epoch(loader):
    def epoch():
        for _ in loader:
            pass
    return epoch


def batches_epoch(batches):
    def epoch():
        for _ in batches:
            pass
        batches.on_epoch_end()
    return epoch


# -- weaver-core --------------------------------------------------------------------------------
WEAVER_YAML = """\
treename: tree
preprocess:
  method: manual
inputs:
  pf_features:
    length: {max_len}
    pad_mode: constant
    vars: {part}
  jet_features:
    length: null
    vars: {jet}
labels:
  type: simple
  value: {labels}
observers: []
"""


def weaver_loader(files: list[str], folder: Path, training: bool, stream_step: float = 0.0):
    """weaver-core's in-memory loader as ``weaver/train.py`` builds it (None if not installed);
    with ``stream_step`` its streaming loader instead (files re-read each epoch, that fraction
    of every file per fetch)."""
    try:
        from weaver.utils.dataset import SimpleIterDataset
    except ImportError as exc:
        print(f"weaver-core rows skipped: {exc}")
        return None
    import torch

    logging.getLogger("weaver").setLevel(logging.WARNING)
    config = folder / "weaver_jetclass_like.yaml"
    # no standardisation: manual method, no centre/scale given, hence no clip either
    config.write_text(WEAVER_YAML.format(max_len=MAX_LEN, part=json.dumps([[v, None] for v in PART]),
                                         jet=json.dumps(JET), labels=json.dumps(LABELS)))
    data = SimpleIterDataset({"_": list(files)}, str(config), batch_size=BATCH, for_training=training,
                             load_range_and_fraction=((0, 1), 1, 1), fetch_by_files=False,
                             fetch_step=stream_step or 1, infinity_mode=training and not stream_step,
                             in_memory=not stream_step, name="train" if training else "test")
    return torch.utils.data.DataLoader(data, batch_size=BATCH, drop_last=training, pin_memory=False,
                                       num_workers=0)


def weaver_epoch(loader, n_batches: int):
    """``n_batches`` batches (an in-memory weaver dataset never ends: train.py counts steps)."""
    def epoch():
        it = iter(loader)
        for _ in range(n_batches):
            next(it)
    return epoch


def streaming_epoch(loader, seen: list[int]):
    """One pass of weaver's streaming loader (it ends); ``seen`` gets the rows it gave."""
    def epoch():
        seen.append(sum(len(y["_label_"]) for _, y, _ in loader))
    return epoch


def compare_with_weaver(ours_loader, theirs, rows: int) -> str:
    """Every batch of ours (shuffle=False) against weaver's tensors for the same rows."""
    import torch

    diff = {"part": 0, "jet": 0, "label": 0}
    worst = 0.0
    done = 0
    it = iter(theirs)
    for inputs, targets, _ in ours_loader:
        x, y, _ = next(it)
        n = len(inputs["part"])
        wp = x["pf_features"][:n].transpose(1, 2)  # weaver: (B, vars, 128); ours (B, 128, vars)
        pairs = {"part": (inputs["part"], wp), "jet": (inputs["jet"], x["jet_features"][:n]),
                 "label": (targets["label"].argmax(1), y["_label_"][:n])}
        for k, (a, b) in pairs.items():
            if a.shape != b.shape or not torch.equal(a, b.to(a.dtype)):
                diff[k] += 1
                if a.shape == b.shape:
                    worst = max(worst, float((a.double() - b.double()).abs().max()))
        done += n
    ok = all(v == 0 for v in diff.values()) and done == rows
    return (f"{'EQUAL' if ok else 'DIFFERENT'}: {done} of {rows} rows; batches differing per output "
            f"{diff}, max |diff| {worst:g} (labels compared as argmax of ours' one-hot vs weaver's "
            f"_label_ index; particles transposed from weaver's (B, vars, 128))")


# -- peers --------------------------------------------------------------------------------------
def numpy_pad_epoch(table, rows: int, seed: int = 0):
    """Hand-written: the Parquet rows in a pyarrow table, a vectorised numpy gather + pad per batch."""
    cols = [table.column(v).combine_chunks() for v in PART]
    offsets = np.asarray(cols[0].offsets)
    values = [np.asarray(c.values) for c in cols]  # zero-copy float32 buffers
    jet = np.stack([table.column(v).to_numpy() for v in JET], 1)
    lab = np.stack([table.column(v).to_numpy() for v in LABELS], 1)
    slots = np.arange(MAX_LEN)
    rng = np.random.default_rng(seed)

    def epoch():
        perm = rng.permutation(rows)
        for a in range(0, rows, BATCH):
            idx = perm[a:a + BATCH]
            starts = offsets[idx]
            counts = np.minimum(offsets[idx + 1] - starts, MAX_LEN)
            mask = slots < counts[:, None]
            src = (starts[:, None] + slots)[mask]
            out = np.zeros((len(idx), MAX_LEN, len(PART)), np.float32)
            for j, v in enumerate(values):  # faster here than one mask over stacked columns
                out[..., j][mask] = v[src]
            jet[idx], lab[idx]
    return epoch


def pad_sequence_epoch(table, rows: int):
    """Naive torch: a map-style dataset of per-jet tensors, ``pad_sequence`` in the collate."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    offsets = np.asarray(table.column(PART[0]).combine_chunks().offsets)
    flat = torch.from_numpy(np.stack([np.asarray(table.column(v).combine_chunks().values) for v in PART], 1))
    part = torch.split(flat, np.diff(offsets).tolist())
    jet = torch.from_numpy(np.stack([table.column(v).to_numpy() for v in JET], 1))
    lab = torch.from_numpy(np.stack([table.column(v).to_numpy() for v in LABELS], 1))

    class Jets(torch.utils.data.Dataset):
        def __len__(self):
            return rows

        def __getitem__(self, i):
            return part[i], jet[i], lab[i]

    def collate(items):
        p, j, l = zip(*items)
        p = pad_sequence(p, batch_first=True, padding_value=0.0)[:, :MAX_LEN]
        p = torch.nn.functional.pad(p, (0, 0, 0, MAX_LEN - p.shape[1]))
        return p, torch.stack(j), torch.stack(l)

    loader = torch.utils.data.DataLoader(Jets(), batch_size=BATCH, shuffle=True, num_workers=0,
                                         collate_fn=collate, generator=torch.Generator().manual_seed(0))
    return loader_epoch(loader)


def awkward_epoch(table, rows: int, seed: int = 0):
    """awkward: the rows as an ak.Array (from arrow), ``pad_none`` + ``fill_none`` per batch."""
    import awkward as ak

    arr = ak.from_arrow(table)
    rng = np.random.default_rng(seed)

    def epoch():
        perm = rng.permutation(rows)
        for a in range(0, rows, BATCH):
            sub = arr[perm[a:a + BATCH]]
            np.stack([ak.to_numpy(ak.fill_none(ak.pad_none(sub[v], MAX_LEN, clip=True), 0.0)) for v in PART], -1)
            np.stack([ak.to_numpy(sub[v]) for v in JET], 1), np.stack([ak.to_numpy(sub[v]) for v in LABELS], 1)
    return epoch


# -- timing -------------------------------------------------------------------------------------
def interleaved(cases: dict, runs: int, reps: dict | None = None) -> dict[str, list[float]]:
    """Seconds per epoch of every case per round; each round runs all cases once, in rotated
    order; a case in ``reps`` runs that many epochs back to back per round (their mean)."""
    names = list(cases)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(runs):
        for n in names[r % len(names):] + names[:r % len(names)]:
            k = (reps or {}).get(n, 1)
            t = time.perf_counter()
            for _ in range(k):
                cases[n]()
            times[n].append((time.perf_counter() - t) / k)
        print(f"  round {r + 1}/{runs}: " + ", ".join(f"{n} {times[n][-1]:.3f}" for n in names), flush=True)
    return times


def ratio(times: dict, slow: str, fast: str, scale: float = 1.0) -> float:
    """Median over rounds of slow / fast (> 1: ``fast`` is faster)."""
    return statistics.median(s * scale / f for s, f in zip(times[slow], times[fast]))


def child(mode: str, payload: dict) -> None:
    """One fresh-process measurement; prints a JSON line."""
    files, threads = payload["files"], payload.get("threads", 2)
    if mode == "uproot":
        from concurrent.futures import ThreadPoolExecutor

        import uproot
        t = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            arrays = uproot.concatenate([f + ":tree" for f in files], filter_name=sum(NEEDED, []),
                                        decompression_executor=pool)
        out = {"seconds": time.perf_counter() - t, "rows": len(arrays)}
    else:
        import lstm_data
        from lstm_data.io.read_options import READER_OPTIONS

        spec = specs()[1 if mode == "ours_read" else 0]
        cols = sorted({v for _, _, f in spec.fields() for v in f.vars})
        options = {"threads": threads} if "threads" in READER_OPTIONS["root"] else {}
        import awkward, uproot  # noqa: F401,E401  (the uproot side imports them before its clock too)
        base = _vmhwm()
        t = time.perf_counter()
        ds = lstm_data.open(files, columns=cols, **options) if mode == "ours_read" else lstm_data.open(files)
        opened = time.perf_counter()
        b = lstm_data.Batches(ds, spec, lstm_data.Order(batch_size=BATCH, seed=0, shuffle=False))
        for _ in b:
            pass
        out = {"seconds": time.perf_counter() - t, "open": opened - t, "rows": len(ds),
               "branches": len(cols), "options": options, "base": base, "peak": _vmhwm()}
    print("RESULT" + json.dumps(out))


def _vmhwm() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))


def fresh(mode: str, **payload) -> dict:
    """``child(mode, payload)`` in a fresh interpreter. Byte code is cached (in a temp folder,
    not the checkout) even where PYTHONDONTWRITEBYTECODE is set, as an installed package has
    it: a checkout would otherwise compile our modules in every process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "peers_jetclass_pycache")
    res = subprocess.run([sys.executable, __file__, "--child", mode, json.dumps(payload)],
                         capture_output=True, text=True, env=env)
    for line in res.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[6:])
    raise RuntimeError(f"child {mode} failed:\n{res.stderr[-3000:]}")


def fresh_rounds(cases: dict[str, tuple[str, dict]], runs: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {n: [] for n in cases}
    names = list(cases)
    for r in range(runs):
        for n in (names if r % 2 == 0 else names[::-1]):
            out[n].append(fresh(cases[n][0], **cases[n][1]))
        print(f"  round {r + 1}/{runs}: " + ", ".join(f"{n} {out[n][-1]['seconds']:.3f} s" for n in names),
              flush=True)
    return out


# -- main ---------------------------------------------------------------------------------------
def steady(names: dict, folder: Path, runs: int, use_weaver: bool, stream_step: float,
           scales: dict) -> tuple[dict, list[str]]:
    """Phase A: our N-file vs 1-file epochs alone (3x the rounds, each 3 epochs back to back);
    phase B: every peer against our epochs (ours 3 epochs back to back per round)."""
    import gc

    import pyarrow.parquet as pq

    import lstm_data

    two, one = lstm_data.open(names["two"]), lstm_data.open(names["one"])
    rows = len(two)
    notes = [f"2 ROOT files open as {type(two).__name__}, 1 file as {type(one).__name__}"]
    for shuffle in (True, False):  # bitwise the same batches (and a warm-up)
        same = all(all(np.array_equal(a[k], b[k]) for k in a) for pa_, pb in zip(ours_batches(two, shuffle),
                   ours_batches(one, shuffle)) for a, b in zip(pa_, pb))
        notes.append(f"2 files vs 1 file, shuffle={shuffle}: batches {'bitwise equal' if same else 'DIFFER'}")
    ours = {"ours2_torch": loader_epoch(ours_torch(two, True)),
            "ours1_torch": loader_epoch(ours_torch(one, True)),
            "ours2_torch_seq": loader_epoch(ours_torch(two, False)),
            "ours1_torch_seq": loader_epoch(ours_torch(one, False))}
    for epoch in ours.values():
        epoch()
    print(f"A. our epochs, 2 files vs 1, {3 * runs} interleaved rounds (seconds per epoch):", flush=True)
    times = interleaved(ours, 3 * runs, dict.fromkeys(ours, 3))
    n_batches = math.ceil(rows / BATCH)
    cases = {"ours2_torch": ours["ours2_torch"], "ours2_numpy": batches_epoch(ours_batches(two, True)),
             "oursPq_numpy": batches_epoch(ours_batches(lstm_data.open(names["parquet"], schema={"part": PART}),
                                                        True))}
    if use_weaver:
        t = time.perf_counter()
        check = weaver_loader(names["two"], folder, training=False)
        if check is not None:
            notes.append("weaver-core equality (shuffle=False, every batch): "
                         + compare_with_weaver(ours_torch(two, False), check, rows))
            del check
            gc.collect()
            cases["weaver"] = weaver_epoch(weaver_loader(names["two"], folder, training=True), n_batches)
            if stream_step:
                seen: list[int] = []
                cases["weaver_stream"] = streaming_epoch(
                    weaver_loader(names["two"], folder, True, stream_step), seen)
                notes.append(f"weaver-core streaming: fetch_step={stream_step}, async_load, timed "
                             f"per pass (drop_last), scaled to {rows} rows")
                scales["weaver_stream"] = lambda: rows / seen[-1]
            notes.append(f"weaver-core: equality check + load took {time.perf_counter() - t:.1f} s; timed "
                         f"{n_batches} batches of {BATCH} (its in-memory iterator never ends), scaled to "
                         f"{rows} rows")
    table = pq.read_table(names["parquet"][0])
    cases["numpy_pad"] = numpy_pad_epoch(table, rows)
    cases["pad_sequence"] = pad_sequence_epoch(table, rows)
    cases["awkward"] = awkward_epoch(table, rows)
    for epoch in cases.values():  # warm-up (weaver's first pass loads its files)
        epoch()
    print(f"B. steady epochs against peers, {runs} interleaved rounds (seconds per epoch):", flush=True)
    peers = interleaved(cases, runs, {n: 3 for n in cases if n.startswith("ours")})
    times.update({n + "_B" if n.startswith("ours") else n: t for n, t in peers.items()})
    return times, notes


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("--jets", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=5, help="interleaved rounds of every row (>= 5)")
    parser.add_argument("--folder", default=None, help="keep the files here (default: a temp folder)")
    parser.add_argument("--no-weaver", action="store_true", help="skip weaver-core even if installed")
    parser.add_argument("--weaver-stream", type=float, default=0.0, metavar="STEP",
                        help="also time weaver-core's streaming loader with this fetch_step (e.g. 0.1)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], json.loads(args.child[1]))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        names = write_data(folder, args.jets)
        scales = {"weaver": lambda: args.jets / (math.ceil(args.jets / BATCH) * BATCH)}
        times, notes = steady(names, folder, args.runs, not args.no_weaver, args.weaver_stream, scales)
        print("from open through one epoch, fresh processes:", flush=True)
        read = fresh_rounds({"ours_read": ("ours_read", {"files": names["two"]}),
                             "uproot": ("uproot", {"files": names["two"]})}, args.runs)
        print("peak RSS over open + Batches + one epoch, fresh processes:", flush=True)
        rss = fresh_rounds({"rss2": ("ours_rss", {"files": names["two"]}),
                            "rss1": ("ours_rss", {"files": names["one"]})}, args.runs)
    report(times, read, rss, notes, args, {k: f() for k, f in scales.items() if k in times})


def report(times: dict, read: dict, rss: dict, notes: list[str], args, scales: dict) -> None:
    med = statistics.median
    rows = args.jets
    secs = {n: med(t) * scales.get(n, 1.0) for n, t in times.items()}
    lines = [("1", "epoch 2 ROOT files / 1 file, shuffle=True (torch)", ratio(times, "ours2_torch", "ours1_torch"),
              "<= 1.15"),
             ("1", "epoch 2 ROOT files / 1 file, shuffle=False (torch)",
              ratio(times, "ours2_torch_seq", "ours1_torch_seq"), "<= 1.15")]
    if "weaver" in times:
        lines.append(("1", "weaver-core in_memory / ours 2 files (torch)",
                      ratio(times, "weaver", "ours2_torch_B", scales["weaver"]), ">= 10"))
    if "weaver_stream" in times:
        lines.append(("1", f"weaver-core streaming (fetch_step={args.weaver_stream}) / ours 2 files (torch)",
                      ratio(times, "weaver_stream", "ours2_torch_B", scales["weaver_stream"]), "-"))
    lines += [("2", "numpy pad of pyarrow rows / ours Parquet in RAM (numpy)",
               ratio(times, "numpy_pad", "oursPq_numpy_B"), ">= 3"),
              ("2", "numpy pad of pyarrow rows / ours 2 ROOT files (numpy)",
               ratio(times, "numpy_pad", "ours2_numpy_B"), ">= 3"),
              ("2", "torch pad_sequence collate / ours 2 files (torch)",
               ratio(times, "pad_sequence", "ours2_torch_B"), "-"),
              ("2", "awkward pad_none+fill_none / ours 2 files (numpy)", ratio(times, "awkward", "ours2_numpy_B"), "-")]
    r3 = med(u["seconds"] / o["seconds"] for o, u in zip(read["ours_read"], read["uproot"]))
    o = read["ours_read"][0]
    lines.append(("3", f"uproot.concatenate / ours open+epoch ({o['branches']} branches, {o['options']})", r3,
                  ">= 1.25"))
    r4 = med(a["peak"] / b["peak"] for a, b in zip(rss["rss2"], rss["rss1"]))
    r4d = med((a["peak"] - a["base"]) / (b["peak"] - b["base"]) for a, b in zip(rss["rss2"], rss["rss1"]))
    lines += [("4", "peak RSS 2 files / 1 file (whole process)", r4, "<= 1.1"),
              ("4", "peak RSS above the imports, 2 files / 1 file", r4d, "-")]
    print(f"\nJetClass-like: {rows} jets, batch {BATCH}, padded to {MAX_LEN}, medians of {args.runs} "
          f"interleaved rounds of per-round ratios")
    print(f"{'row':<4}{'ratio':<62}{'median':>8}  target")
    for row, what, value, target in lines:
        print(f"{row:<4}{what:<62}{value:>7.2f}x  {target}")
    print("\nmedian seconds per epoch: " + ", ".join(f"{n} {s:.3f}" for n, s in secs.items()))
    print(f"open+epoch: ours {med(x['seconds'] for x in read['ours_read']):.3f} s (open "
          f"{med(x['open'] for x in read['ours_read']):.3f} s), uproot.concatenate "
          f"{med(x['seconds'] for x in read['uproot']):.3f} s")
    for k in ("rss2", "rss1"):
        print(f"{k}: peak {med(x['peak'] for x in rss[k]) / 2**20:.0f} MiB, after imports "
              f"{med(x['base'] for x in rss[k]) / 2**20:.0f} MiB")
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
