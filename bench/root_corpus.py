"""Open every tree of a folder of real ROOT files and build the first and last batch.

Each tree is opened in a fresh process (a crash or hang is counted, not fatal) with
``lstm_data.open("file.root:tree")`` and no options; a spec of every group and every
scalar builds batch 0 and the last batch (``shuffle=False``). Outcomes:

* ``ok``: both batches built;
* ``located``: one of lstm_data's error classes (its message is printed);
* ``differs`` (with ``--compare``): a batch value differs from uproot + awkward's padding;
* ``bare``: any other exception (a bug: the message is printed);
* ``crash``/``hang``: the process died or ran past the timeout.

Run from a checkout (the corpus is a snapshot of scikit-hep-testdata's ROOT files)::

    python bench/root_corpus.py /tmp/corpus [--timeout 60] [--json out.json] [--in-ram false] [--compare]
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
path, tree = sys.argv[1], sys.argv[2]
opts = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
compare = opts.pop("__compare", False)
out = {"tree": tree}


def _compare(path, tree, ds, inputs, batches):
    # the padded batches against uproot's arrays padded by awkward (pad_none + fill_none)
    import awkward as ak, numpy as np, uproot
    checked = unchecked = 0
    bad = []
    with uproot.open(path) as fh:
        obj = fh[tree]
        def dotted(key, name):  # a record's field in a list is named group_field; uproot says group.field
            g = key[2:]
            return g + "." + name[len(g) + 1:] if key.startswith("g_") and name.startswith(g + "_") else name
        names = sorted({n for key, spec in inputs.items() for m in spec.vars for n in (m, dotted(key, m))})
        def refs(start, stop):
            try:
                arrs = obj.arrays(filter_name=names, entry_start=start, entry_stop=stop)
            except Exception:
                return {}
            return {n: arrs[n] for n in names if n in arrs.fields}
        for start, (x, *_rest) in batches:
            stop = start + len(next(iter(x.values())))
            got = refs(start, stop)
            for key, spec in inputs.items():
                for j, name in enumerate(spec.vars):
                    r = got.get(name, got.get(dotted(key, name)))
                    ours = x[key][..., j]
                    if r is None:
                        unchecked += 1
                        continue
                    if key == "scalars":
                        want = ak.to_numpy(r).astype(ours.dtype)
                    else:
                        want = ak.to_numpy(ak.fill_none(ak.pad_none(r[:, :16], 16, clip=True), 0)).astype(ours.dtype)
                    checked += 1
                    if want.shape != ours.shape or not np.array_equal(want, ours, equal_nan=True):
                        bad.append(name)
    res = {"checked": checked, "unchecked": unchecked}
    if bad:
        res["outcome"], res["error"] = "differs", "differ from uproot+awkward: " + ", ".join(sorted(set(bad)))[:250]
    return res


try:
    import lstm_data
    from lstm_data import Batches, BatchSpec, Ragged, Scalars
    from lstm_data.errors import FormatError, ParseError, SchemaError, OptionError
    located = (FormatError, ParseError, SchemaError, OptionError)
    try:
        ds = lstm_data.open(f"{path}:{tree}", **opts)
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
            first, last = b[0], b[len(b) - 1]
            out["outcome"] = "ok"
            if compare:
                print("RESULT" + json.dumps(out), flush=True)  # kept if uproot's side runs past the timeout
                out.update(_compare(path, tree, ds, inputs, [(0, first), ((len(b) - 1) * 64, last)]))
    except located as exc:
        out["outcome"], out["error"] = "located", f"{type(exc).__name__}: {exc}"[:300]
    except Exception as exc:
        out["outcome"], out["error"] = "bare", f"{type(exc).__name__}: {exc}"[:300]
except BaseException as exc:
    out["outcome"], out["error"] = "bare", f"{type(exc).__name__}: {exc}"[:300]
print("RESULT" + json.dumps(out))
"""

_LIST = r"""
import json, sys, uproot
try:
    with uproot.open(sys.argv[1]) as fh:
        names = [k for k, c in fh.classnames(cycle=False).items()
                 if c in ("TTree", "TNtuple", "TNtupleD", "ROOT::RNTuple")]
except Exception as exc:
    names = None
print("TREES" + json.dumps(names))
"""


def trees_of(path: Path, timeout: float) -> list[str] | None:
    try:
        res = subprocess.run([sys.executable, "-c", _LIST, str(path)], capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    for line in res.stdout.splitlines():
        if line.startswith("TREES"):
            return json.loads(line[5:])
    return None


def try_tree(path: Path, tree: str, timeout: float, opts: str = "{}") -> dict:
    try:
        res = subprocess.run([sys.executable, "-c", _CHILD, str(path), tree, opts], capture_output=True,
                             text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        done = [line for line in partial.splitlines() if line.startswith("RESULT")]
        if done:  # our batches were built; uproot + awkward's reference ran past the timeout
            return {**json.loads(done[-1][6:]), "compare": "reference timed out"}
        return {"tree": tree, "outcome": "hang"}
    for line in reversed(res.stdout.splitlines()):
        if line.startswith("RESULT"):
            return json.loads(line[6:])
    return {"tree": tree, "outcome": "crash", "error": res.stderr[-300:]}


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--json", default=None, help="write every outcome here")
    parser.add_argument("--quiet", action="store_true", help="print only the totals")
    parser.add_argument("--in-ram", choices=("default", "true", "false"), default="default",
                        help="the reader's in_ram option: false reads on demand (by ROOT cluster or Parquet "
                             "row group)")
    parser.add_argument("--compare", action="store_true",
                        help="compare both batches with uproot's arrays padded by awkward (outcome differs)")
    args = parser.parse_args()
    opts = {} if args.in_ram == "default" else {"in_ram": args.in_ram == "true"}
    args.options = json.dumps({**opts, "__compare": True} if args.compare else opts)
    results = []
    for path in sorted(Path(args.folder).glob("*.root")):
        trees = trees_of(path, args.timeout)
        if not trees:
            continue  # not readable by uproot itself, or no tree
        for tree in trees:
            r = try_tree(path, tree, args.timeout, args.options)
            r["file"] = path.name
            results.append(r)
            if not args.quiet and r["outcome"] != "ok":
                print(f"{r['outcome']:8s} {path.name}:{tree}: {r.get('error', '')}", flush=True)
    counts = collections.Counter(r["outcome"] for r in results)
    print(f"{len(results)} trees: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if args.compare:
        late = sum(1 for r in results if r.get("compare"))
        print(f"compared with uproot + awkward: {sum(r.get('checked', 0) for r in results)} columns equal or "
              f"counted in 'differs', {sum(r.get('unchecked', 0) for r in results)} with no uproot name, "
              f"{late} trees whose reference ran past the timeout")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
