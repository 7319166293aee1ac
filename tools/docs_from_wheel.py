"""Run every runnable example of the documentation against an installed wheel, from an empty folder.

What a reader without a clone does: install the wheel (with the extras the pages name), fetch the
example files as the pages say (``lstm-data example all examples``), then run each example. The
interpreter given must be a virtual environment where the wheel, not this checkout, is installed::

    python -m venv /tmp/wheel-env
    pip wheel --no-deps . -w /tmp/wheel
    /tmp/wheel-env/bin/pip install torch==2.13.0 "$(ls /tmp/wheel/*.whl)[parquet,root,keras,torch,weaver]"
    python tools/docs_from_wheel.py /tmp/wheel-env/bin/python

Prints each failure with the end of its traceback and a count; exits 1 when one fails. Examples
whose ``<!-- run if: MODULE -->`` module is missing in that environment are skipped and listed.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.docs.pages import all_blocks  # noqa: E402  (the pages' blocks, parsed from this checkout)


def has_module(python: str, module: str) -> bool:
    """Whether ``module`` is importable by ``python``."""
    probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([python, "-c", probe]).returncode == 0


def main(python: str) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env['PATH']}"
    with tempfile.TemporaryDirectory(prefix="reader-") as folder:
        fetched = subprocess.run([python, "-m", "lstm_data", "example", "all", "examples"], cwd=folder, env=env,
                                 capture_output=True, text=True)
        if fetched.returncode:
            print(f"fetching the examples failed:\n{fetched.stderr}")
            return 1
        ran, failed, skipped = 0, [], []
        for block in all_blocks():
            if not block.runnable or block.recipe is not None:
                continue
            if block.needs and not has_module(python, block.needs):
                skipped.append(f"{block.id} (needs {block.needs})")
                continue
            done = subprocess.run([python, "-W", "error::DeprecationWarning:__main__", "-c", block.code],
                                  cwd=folder, env={**env, **block.env}, capture_output=True, text=True,
                                  timeout=600)
            ran += 1
            if done.returncode:
                failed.append(block.id)
                print(f"FAILED {block.id}:\n{done.stderr[-1500:]}")
    print(f"{ran} examples ran from an empty folder, {len(failed)} failed; skipped: {skipped or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
