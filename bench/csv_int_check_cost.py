"""What the CSV parser's integer check costs: the compiled parser with and without it, in one process.

Run from a checkout (needs Cython and a C compiler)::

    python bench/csv_int_check_cost.py [--rows 60000] [--runs 21]

The check (an integer token that the float dtype changes sets the column's
``INEXACT`` flag) is one compare per stored value plus one test per record. This script copies the CSV kernel's sources twice into a temporary
directory, removes those two lines from one copy, builds both, and parses the same
text held in memory with each, alternating the order every run (one thread, the
plan the reader infers). Three texts: the synthetic NOvA-like table (short
decimals, mostly the quoted-list fast path), the same with run/subrun/event id
columns in front, and a table of 17-digit ``repr`` floats (the general path, where
every value is checked).

Times are the parsing thread's CPU time (``time.thread_time``), so that other
processes on a busy machine do not land in one side of a pair. The figure is the
median over runs of the per-pair ratio ``time with / time without`` (1.0: free;
the bar is <= 1.02).
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
EXT = HERE / "lstm_data" / "kernels" / "_ext"
SOURCES = ["csvblock.pyx", "csvcolumns.pyx", "csvcolumns.pxd", "colstore.pxd", "numparse.pxd",
           "numparse.pyx", "platform.h", "ld_pow5.h", "bufpool.pxd"]
CHECK = {"csvblock.pyx": "        if unlikely(fabs(v) >= self.int_limit):  # rare: only integers this large can change\n"
                         "            self._note_int(buf + tok, end - tok, col, v, line)\n",
         "csvcolumns.pyx": "        if self.rec_inexact:\n"
                           "            self._commit_inexact()\n"}
SETUP = '''
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"), ("CYTHON_WITHOUT_ASSERTIONS", None)]
exts = [Extension(f"{pkg}.{m}", [f"{pkg}/{m}.pyx"], include_dirs=[numpy.get_include(), pkg],
                  define_macros=macros, extra_compile_args=["-O3"])
        for pkg in ("check_on", "check_off") for m in ("numparse", "csvcolumns", "csvblock")]
setup(name="check_cost", ext_modules=cythonize(exts, quiet=True, compiler_directives={
    "language_level": 3, "boundscheck": False, "wraparound": False, "initializedcheck": False,
    "cdivision": True}))
'''


def build(tmp: Path) -> None:
    for pkg in ("check_on", "check_off"):
        (tmp / pkg).mkdir()
        (tmp / pkg / "__init__.py").write_text("")
        for name in SOURCES:
            text = (EXT / name).read_text()
            text = text.replace("from .._args import", "from lstm_data.kernels._args import")
            if pkg == "check_off" and name in CHECK:
                if CHECK[name] not in text:
                    raise SystemExit(f"the check's lines are not in {name}: update this script")
                text = text.replace(CHECK[name], "")
            (tmp / pkg / name).write_text(text)
    (tmp / "setup.py").write_text(SETUP)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tmp, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def texts(tmp: Path, rows: int) -> dict[str, bytes]:
    from lstm_data.data import synthetic

    synthetic.write_csv(tmp / "ev.csv", n_rows=rows, seed=3)
    plain = (tmp / "ev.csv").read_bytes()
    rng = np.random.default_rng(1)
    lines = plain.decode().splitlines()
    ids = ["run,subrun,evt," + lines[0]] + [
        f"{13000 + i // 5000},{i % 64},{int(rng.integers(0, 10**6))},{line}" for i, line in enumerate(lines[1:])]
    reprs = [",".join(["evt"] + [f"s{j}" for j in range(12)] + [f"p.v{j}" for j in range(6)])]
    for i in range(rows // 2):
        scalars = ",".join(repr(float(x)) for x in rng.normal(size=12))
        k = int(rng.integers(0, 6))
        lists = ",".join('"' + ",".join(repr(float(x)) for x in rng.normal(size=k)) + '"' for _ in range(6))
        reprs.append(f"{i * 7919 % 10**7},{scalars},{lists}")
    return {"nova": plain, "nova+ids": ("\n".join(ids) + "\n").encode(),
            "repr": ("\n".join(reprs) + "\n").encode()}


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=60000)
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args()
    from lstm_data.io.csv import reader
    from lstm_data.io.csv.plan import declared_plan, split_header

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        build(tmp)
        sys.path.insert(0, str(tmp))
        parsers = {k: importlib.import_module(f"check_{k}.csvblock").CsvBlockParser for k in ("on", "off")}
        options = dict(dtype=np.dtype(np.float32), sep=",", list_sep=",")
        print(f"{'text':<10} {'MiB':>6} {'with ms':>8} {'without ms':>10} {'ratio (median of pairs)':>24}")
        for name, data in texts(tmp, args.rows).items():
            names, end = split_header(data, False, ",", name)
            plan = reader.sample_plan(declared_plan(names, None), data[end:end + (1 << 20)], False, options)
            body = memoryview(data)[end:]

            def parse(kind: str) -> float:
                parser = parsers[kind](plan.names, plan.kinds, plan.groups, **options)
                start = time.thread_time()
                parser.feed(body, final=True)
                took = time.thread_time() - start
                parser.finish()
                return took

            parse("on"), parse("off")  # warm up
            ratios, on, off = [], [], []
            for run in range(args.runs):
                order = ("on", "off") if run % 2 == 0 else ("off", "on")
                got = {k: parse(k) for k in order}
                on.append(got["on"])
                off.append(got["off"])
                ratios.append(got["on"] / got["off"])
            print(f"{name:<10} {len(data) / 2**20:6.1f} {1e3 * statistics.median(on):8.1f} "
                  f"{1e3 * statistics.median(off):10.1f} {statistics.median(ratios):24.4f}")
        shutil.rmtree(tmp / "build", ignore_errors=True)


if __name__ == "__main__":
    main()
