"""A full disk is an OSError naming the output: the process lives on, no temporary is left.

On a real full file system: a small tmpfs mounted by the test (root only; skipped
otherwise). Each write runs in a child process, so a crash (HDF5 used to die with
SIGSEGV after a failed write) fails the test instead of killing pytest.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from lstm_data.data.synthetic import make_dataset
from tests.helpers import EXAMPLES

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="mounting a tmpfs needs root")


@pytest.fixture
def full(tmp_path):
    """A 2 MiB tmpfs: far smaller than the outputs written to it."""
    where = tmp_path / "small"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    yield where
    import gc

    gc.collect()  # files the test opened there
    if subprocess.run(["umount", str(where)], capture_output=True).returncode:
        subprocess.run(["umount", "-l", str(where)], check=True)  # busy: detach it now


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A dataset of about 13 MB (uncompressed) in our zarr layout."""
    path = tmp_path_factory.mktemp("big") / "in.zarr"
    make_dataset(20_000, seed=0).to_zarr(path)
    return path


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("fmt", ["h5", "zarr"])
def test_writing_to_a_full_disk_is_an_oserror_and_the_process_lives(big, full, fmt):
    out = full / f"out.{fmt}"
    done = _child(f"""
        import errno, gc
        import lstm_data
        ds = lstm_data.open({str(big)!r})
        try:
            ds.{'to_hdf5' if fmt == 'h5' else 'to_zarr'}({str(out)!r})
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
            assert exc.filename == {str(out)!r}, exc.filename
            print("error:", exc)
        else:
            raise SystemExit("no error")
        gc.collect()
        print("alive")
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "alive" in done.stdout and f"cannot write {out}" in done.stdout
    assert os.listdir(full) == []  # no temporary left


@pytest.mark.parametrize("fmt", ["h5", "zarr"])
def test_convert_force_on_a_full_disk_keeps_the_old_output_and_no_temporary(big, full, fmt):
    out = full / f"out.{fmt}"
    small = make_dataset(50, seed=1)
    small.to_hdf5(out) if fmt == "h5" else small.to_zarr(out)
    before = sorted(os.listdir(full))
    done = subprocess.run([sys.executable, "-m", "lstm_data", "convert", str(big), str(out), "--overwrite",
                           "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"cannot write {out}: No space left on device" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(os.listdir(full)) == before  # the old output, and nothing else
    import lstm_data

    with lstm_data.open(out) as old:
        assert len(old) == 50


def test_precompute_to_a_full_disk_is_an_oserror_naming_the_store(big, full):
    out = full / "batches.zarr"
    done = _child(f"""
        import errno, gc
        import lstm_data
        from lstm_data import BatchSpec
        from lstm_data.store.write import precompute
        spec = BatchSpec.from_toml({str(EXAMPLES / 'numu_v3.toml')!r})
        try:
            precompute(lstm_data.open({str(big)!r}), spec, {str(out)!r}, progress=False)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC and exc.filename == {str(out)!r}, exc
            print("error:", exc)
        else:
            raise SystemExit("no error")
        gc.collect()
        print("alive")
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "alive" in done.stdout and f"cannot write {out}" in done.stdout
    assert os.listdir(full) == []
