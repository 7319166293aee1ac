"""A script that ends in the middle of a threaded epoch exits at once."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_script_ending_mid_epoch_exits():
    script = textwrap.dedent("""
        from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
        from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset

        spec = BatchSpec(inputs={"s": Scalars(SLICE_VARS[:3]), "p": Ragged(PNG3D_VARS[:3], max_len=8)})
        batches = Batches(make_dataset(4000, seed=1), spec, Order(batch_size=64, seed=1))
        it = batches.iter(threads=2)
        first = next(it)  # the generator stays open until the modules are torn down
        print(first[0]["p"].shape)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(64, 8, 3)"
