"""Sizes an order file declares (draws per epoch, sampling bins, bucket lengths) are compared with the
memory this process may still allocate before anything of that size is: an OptionError naming the
file, the key and the size, in a child process whose address space is capped (never a bare
MemoryError, never the machine's memory)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

#: builds the batches an order file asks for and reads the first, under a 1.5 GB address space;
#: prints what was raised and the child's peak memory
_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.synthetic import make_dataset
said = {}
try:
    spec = BatchSpec({"x": Scalars(["calE"]), "png": Ragged(["png.calE", "png.len"])})
    batches = Batches(make_dataset(300, seed=1), spec, Order.from_toml(sys.argv[1]))
    batches[0]
    said["error"] = "none"
except BaseException as exc:
    said["error"] = f"{type(exc).__name__}: {exc}"
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
said["peak MiB"] = int(hwm.split()[1]) // 1024
print(json.dumps(said))
"""


def _run(path: Path) -> dict:
    root = Path(__file__).parents[2]
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, cwd=root,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def test_an_epoch_size_of_a_trillion_draws_is_refused_naming_file_key_and_size(tmp_path):
    path = tmp_path / "order.toml"
    path.write_text("[order]\nbatch_size = 16\n[order.sample]\nvars = [\"calE\"]\nbins = [[0.0, 0.5, 1.0]]\n"
                    f"epoch_size = {10**12}\n")
    said = _run(path)
    assert said["error"].startswith(f"OptionError: {path} [order]: sample.epoch_size: 1000000000000 draws take "
                                    "29.1 TiB"), said
    assert said["peak MiB"] < 400, said


def test_sampling_bins_of_40001_by_40001_edges_are_refused_naming_file_key_and_size(tmp_path):
    edges = ",".join(str(k) for k in range(40_001))
    path = tmp_path / "order.toml"
    path.write_text("[order]\nbatch_size = 16\n[order.sample]\nvars = [\"calE\", \"trueE\"]\n"
                    f"bins = [[{edges}], [{edges}]]\n")
    assert 400_000 < path.stat().st_size < 500_000  # a file of half a megabyte
    said = _run(path)
    assert said["error"].startswith(f"OptionError: {path} [order]: sample.bins: 1600000000 bins (40000 x 40000) "
                                    "take 47.7 GiB"), said
    assert said["peak MiB"] < 400, said


def test_a_bucket_length_of_a_billion_counts_in_the_batch_bytes(tmp_path):
    path = tmp_path / "order.toml"
    path.write_text("[order]\nbatch_size = 16\nbucket_by = \"png\"\nbucket_lengths = [2, 1000000000]\n")
    said = _run(path)
    assert said["error"].startswith("OptionError: input 'png': a batch of 16 rows takes 119.2 GiB"), said
    assert "(bucket_lengths up to 1000000000: 1000000000 slots of 2 float32 variables)" in said["error"], said
    assert said["peak MiB"] < 400, said


def test_sampling_bins_for_every_class_are_counted_once_the_classes_are_known(tmp_path):
    edges = ",".join(str(k) for k in range(2_001))  # 4 million bins: 128 MB alone, fine
    path = tmp_path / "order.toml"
    path.write_text("[order]\nbatch_size = 16\n[order.sample]\nclasses = \"lowGain\"\nvars = [\"calE\", \"trueE\"]\n"
                    f"bins = [[{edges}], [{edges}]]\n")
    said = _run(path)
    assert re.match(r"OptionError: sample\.bins: \d+ bins \(2000 x 2000 for each of \d+ classes\) take .* more than "
                    r"the .* this process may still allocate", said["error"]), said
    assert said["peak MiB"] < 400, said
