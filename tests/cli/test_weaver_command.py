"""The ``lstm-data weaver`` command of docs/coming-from-weaver.md, run as written on a CPU.

The page's ``bash`` block writes the example files (``lstm-data example weaver``: the
jets, weaver-core's data config and a small network) and trains with weaver-core's
trainer on lstm_data's loaders. Here it runs from a fresh folder with one epoch of
two steps in place of 20 epochs; everything else is the page's.
"""
from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from tests.docs.pages import DOCS, blocks

pytest.importorskip("torch")
pytest.importorskip("weaver.train")
pytest.importorskip("uproot")
pytest.importorskip("yaml")

pytestmark = pytest.mark.slow


def _commands() -> list[list[str]]:
    """The page's ``lstm-data`` commands, continuation lines joined, comments dropped."""
    block = next(b for b in blocks(DOCS / "coming-from-weaver.md")
                 if b.lang == "bash" and "lstm-data weaver " in b.code)
    lines = block.code.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.startswith("lstm-data ")]


def test_the_documented_weaver_command_trains_on_a_cpu(tmp_path):
    example, train = _commands()
    assert example[:2] == ["lstm-data", "example"] and train[:2] == ["lstm-data", "weaver"]
    assert train[train.index("--gpus") + 1] == ""            # the CPU, as weaver-core reads it
    epochs = train.index("--num-epochs")
    train[epochs + 1:epochs + 2] = ["1", "--steps-per-epoch", "2", "--steps-per-epoch-val", "1"]
    for command in (example, train):
        done = subprocess.run([sys.executable, "-m", "lstm_data", *command[1:]], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{shlex.join(command)} failed:\n{done.stderr[-4000:]}"
    network = tmp_path / train[train.index("--network-config") + 1]
    assert network.is_file()                                   # written by lstm-data example weaver
    prefix = train[train.index("--model-prefix") + 1]
    assert (tmp_path / f"{prefix}_epoch-0_state.pt").is_file()  # weaver-core saved the trained epoch
