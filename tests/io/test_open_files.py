"""Many files read on demand within the process's limit of open files (opened when read, idle ones closed)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data.data.synthetic import make_dataset
from lstm_data.io.plumbing.open_files import OpenFiles, PooledFile, default_limit

#: the files and the child's limit of open files (a third of the files; 5,000 files under 1024 alike)
N_FILES, LIMIT = 64, 24
#: distinct files; the others are copies (writing each costs more than the test should)
DISTINCT = 5

#: run in a child whose soft limit of open files is LIMIT: every row of every file, read on demand
CHILD = """
import json, os, resource, sys
import numpy as np
import lstm_data
paths, options = json.loads(sys.argv[1]), json.loads(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
many = lstm_data.open(paths, **options)
fds = [len(os.listdir("/proc/self/fd"))]
out = {{"n": len(many), "on_demand": not many.in_ram}}
for name in many.scalar_names:
    out[name] = float(np.asarray(many.scalar(name), dtype=np.float64).sum())
rows = np.random.default_rng(0).permutation(len(many))
for g in many.groups:
    total = 0.0
    for part in np.array_split(rows, 2):
        total += float(many.ragged(g, part)[0].astype(np.float64).sum())
        fds.append(len(os.listdir("/proc/self/fd")))
    out[g] = total
out["fds"] = max(fds)
print(json.dumps(out))
"""


def _files(tmp: Path, fmt: str) -> list[str]:
    paths = []
    for i in range(N_FILES):
        path = tmp / f"f{i:03d}.{fmt}"
        if i >= DISTINCT:
            shutil.copyfile(paths[i % DISTINCT], path)
        elif fmt == "root":
            _root(path, i)
        else:
            ds = make_dataset(12, seed=i)
            getattr(ds, {"h5": "to_hdf5", "parquet": "to_parquet"}[fmt])(path)
        paths.append(str(path))
    return paths


def _root(path: Path, seed: int) -> None:
    uproot = pytest.importorskip("uproot")
    from tests.helpers import root_events

    with uproot.recreate(path) as fh:
        fh["Events"] = root_events(12, seed=seed)


def _expected(paths: list[str]) -> dict[str, float]:
    distinct = [lstm_data.open(p, **({"in_ram": True} if not p.endswith(".h5") else {})) for p in paths[:DISTINCT]]
    whole = [distinct[i % DISTINCT] for i in range(len(paths))]
    out = {"n": sum(len(d) for d in whole)}
    for name in whole[0].scalar_names:
        out[name] = float(sum(np.asarray(d.scalar(name), dtype=np.float64).sum() for d in whole))
    for g in whole[0].groups:
        out[g] = float(sum(d.ragged(g)[0].astype(np.float64).sum() for d in whole))
    return out


@pytest.mark.parametrize("fmt", ["h5", "root", "parquet"])
def test_64_files_read_on_demand_under_a_limit_of_24_open_files(tmp_path, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    paths = _files(tmp_path, fmt)
    options = {} if fmt == "h5" else {"in_ram": False}
    child = subprocess.run([sys.executable, "-c", CHILD.format(limit=LIMIT), json.dumps(paths), json.dumps(options)],
                           capture_output=True, text=True, timeout=240,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert child.returncode == 0, child.stderr[-3000:]
    got = json.loads(child.stdout.strip().splitlines()[-1])
    assert got.pop("on_demand") is True
    assert got.pop("fds") < LIMIT
    want = _expected(paths)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-9), key


class _Counted:
    """Handles of real files, counting the ones open."""

    def __init__(self) -> None:
        self.open = 0
        self.most = 0
        self.lock = threading.Lock()

    def opener(self, path: Path):
        def open_file():
            fh = open(path, "rb")
            with self.lock:
                self.open += 1
                self.most = max(self.most, self.open)
            return fh
        return open_file

    def closer(self, fh) -> None:
        fh.close()
        with self.lock:
            self.open -= 1


def test_idle_files_past_the_limit_are_closed_least_recently_used_first(tmp_path):
    pool, counted = OpenFiles(limit=3), _Counted()
    files = []
    for i in range(6):
        (tmp_path / f"{i}").write_bytes(bytes([i]) * 10)
        files.append(PooledFile(counted.opener(tmp_path / f"{i}"), counted.closer, f"{i}", pool))
    for i in (0, 1, 2, 0, 3):  # 1 is then the least recently used
        with files[i].use() as fh:
            fh.seek(0)
            assert fh.read(1) == bytes([i])
    assert counted.open == 3 and pool.n_open == 3
    assert files[1].handle is None and all(files[i].handle is not None for i in (0, 2, 3))
    with files[0].use(), files[2].use(), files[3].use(), files[4].use():  # all busy: none is closed
        assert counted.open == 4
    assert counted.open == 3 and pool.n_open == 3
    held = next(f for f in files if f.handle is not None)
    held.close()
    assert counted.open == 2 and pool.n_open == 2 and held.handle is None


def test_files_read_from_many_threads_stay_within_the_limit(tmp_path):
    pool, counted = OpenFiles(limit=4), _Counted()
    files = []
    for i in range(40):
        (tmp_path / f"{i}").write_bytes(bytes([i]) * 100)
        files.append(PooledFile(counted.opener(tmp_path / f"{i}"), counted.closer, f"{i}", pool))
    errors = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for i in rng.integers(0, len(files), 300).tolist():
            with files[i].use() as fh:
                fh.seek(int(rng.integers(0, 100)))
                if fh.read(1) != bytes([i]):
                    errors.append(i)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert counted.most <= 4 + 6  # the limit, plus one being opened per thread at most
    assert counted.open <= 4


def test_the_default_limit_is_an_eighth_of_the_soft_limit():
    resource = pytest.importorskip("resource")
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert default_limit() == (512 if soft == resource.RLIM_INFINITY else max(4, min(512, soft // 8)))
