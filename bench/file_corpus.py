"""Open every Parquet and HDF5 file of a folder and build the first and last batch.

Each file is opened in a fresh process (a crash or hang is counted, not fatal) with
``lstm_data.open(path)`` and no options; a spec of every group and every scalar
builds batch 0 and the last batch (``shuffle=False``). Outcomes:

* ``ok``: both batches built (or the file opened with nothing to batch);
* ``located``: one of lstm_data's error classes (its message is printed);
* ``bare``: any other exception (a bug: the message is printed);
* ``crash``/``hang``: the process died or ran past the timeout.

Run from a checkout, on a folder of files (e.g. apache/parquet-testing's ``.parquet``
files, or the ``.h5`` files that PyTables and h5py ship in their ``tests`` folders)::

    python bench/file_corpus.py /tmp/corpus/parquet [--timeout 60] [--json out.json] [--in-ram false]
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path

_SUFFIXES = (".parquet", ".pq", ".h5", ".hdf5", ".hdf")

_CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
path = sys.argv[1]
opts = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
out = {}
try:
    import lstm_data
    from lstm_data import Batches, BatchSpec, Ragged, Scalars
    from lstm_data.errors import FormatError, ParseError, SchemaError, OptionError
    located = (FormatError, ParseError, SchemaError, OptionError)
    try:
        ds = lstm_data.open(path, **opts)
        inputs = {}
        if ds.scalar_names:
            inputs["scalars"] = Scalars(ds.scalar_names)
        for g, names in ds.groups.items():
            inputs["g_" + g] = Ragged(names, max_len=16)
        out["rows"], out["groups"], out["scalars"] = len(ds), len(ds.groups), len(ds.scalar_names)
        out["skipped"] = len(getattr(ds, "skipped", {}) or {})
        if not inputs or len(ds) == 0:
            out["outcome"] = "ok"
            out["note"] = "nothing to batch"
        else:
            b = Batches(ds, BatchSpec(inputs=inputs), batch_size=64, shuffle=False)
            b[0]; b[len(b) - 1]
            out["outcome"] = "ok"
    except located as exc:
        out["outcome"], out["error"] = "located", f"{type(exc).__name__}: {exc}"[:300]
    except Exception as exc:
        out["outcome"], out["error"] = "bare", f"{type(exc).__name__}: {exc}"[:300]
except BaseException as exc:
    out["outcome"], out["error"] = "bare", f"{type(exc).__name__}: {exc}"[:300]
print("RESULT" + json.dumps(out))
"""


def try_file(path: Path, timeout: float, opts: str = "{}") -> dict:
    try:
        res = subprocess.run([sys.executable, "-c", _CHILD, str(path), opts], capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"outcome": "hang"}
    for line in res.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[6:])
    return {"outcome": "crash", "error": res.stderr[-300:]}


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--json", default=None, help="write every outcome here")
    parser.add_argument("--quiet", action="store_true", help="print only the totals")
    parser.add_argument("--in-ram", choices=("default", "true", "false"), default="default",
                        help="the reader's in_ram option: false reads on demand (by ROOT cluster or Parquet "
                             "row group)")
    args = parser.parse_args()
    args.options = json.dumps({} if args.in_ram == "default" else {"in_ram": args.in_ram == "true"})
    results = []
    for path in sorted(Path(args.folder).iterdir()):
        if path.suffix.lower() not in _SUFFIXES:
            continue
        r = try_file(path, args.timeout, args.options)
        r["file"] = path.name
        results.append(r)
        if not args.quiet and r["outcome"] != "ok":
            print(f"{r['outcome']:8s} {path.name}: {r.get('error', '')}", flush=True)
    counts = collections.Counter(r["outcome"] for r in results)
    partial = sum(1 for r in results if r["outcome"] == "ok" and r.get("skipped"))
    print(f"{len(results)} files: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
          + f" (ok with skipped columns: {partial})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
