"""Every column lstm_data reads from a folder of ROOT files equals uproot's own arrays bitwise.

Each TTree that opens is compared branch by branch (element columns ``x[0]``, members
``MET.fX`` and same-name copies ``x;2`` are left out); trees that fail to open with
anything but a SchemaError are printed. Run from a checkout::

    python bench/root_verify.py /tmp/corpus
"""
from __future__ import annotations

import glob
import sys
import warnings

import awkward as ak
import numpy as np
import uproot

import lstm_data

_TREES = ("TTree", "TNtuple", "TNtupleD")


def _same(ours: np.ndarray, ref: np.ndarray) -> bool:
    ref = np.ascontiguousarray(ref).astype(ref.dtype.newbyteorder("="))
    return ours.dtype == ref.dtype and np.array_equal(ours.view(np.uint8), ref.view(np.uint8))


def check_tree(fh, path: str, name: str) -> tuple[int, int]:
    """(columns checked, columns that differ) of one tree."""
    try:
        ds = lstm_data.open(f"{path}:{name}")
    except lstm_data.errors.SchemaError:
        return 0, 0
    except Exception as exc:
        print("OPEN FAILS", path, name, type(exc).__name__, str(exc)[:150])
        return 0, 0
    branches = {}
    for key, b in fh[name].iteritems(recursive=True, full_paths=True):
        branches.setdefault(key, b)

    def ref(column: str):
        if column not in branches:
            return None
        try:
            return branches[column].array(library="ak")
        except Exception as exc:
            print("uproot cannot", path, name, column, type(exc).__name__)
            return None

    checked = bad = 0
    for s in ds.scalar_names:
        r = ref(s)
        if r is None:
            continue
        checked += 1
        if not _same(ds.scalar(s), ak.to_numpy(r)):
            bad += 1
            print("DIFFERS", path, name, s)
    for g, names in ds.groups.items():
        values, offsets = ds.ragged(g)
        for j, v in enumerate(names):
            r = ref(v)
            if r is None:
                continue
            checked += 1
            flat = ak.to_numpy(ak.flatten(r)).astype(values.dtype)
            if not (np.array_equal(np.diff(offsets), ak.to_numpy(ak.num(r)))
                    and _same(np.ascontiguousarray(values[:, j]), flat)):
                bad += 1
                print("DIFFERS", path, name, v)
    return checked, bad


def main() -> None:
    warnings.simplefilter("ignore")
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    trees = checked = bad = 0
    for path in sorted(glob.glob(f"{folder}/*.root")):
        try:
            fh = uproot.open(path)
            names = [k for k, c in fh.classnames(cycle=False).items() if c in _TREES]
        except Exception:
            continue
        for name in names:
            c, b = check_tree(fh, path, name)
            trees += c > 0
            checked += c
            bad += b
    print(f"{trees} trees, {checked} columns checked, {bad} differ")


if __name__ == "__main__":
    main()
