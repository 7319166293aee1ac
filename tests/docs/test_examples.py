"""The examples of the documentation pages run as written, from any folder.

Each ``<!-- run -->`` (or ``<!-- run if: MODULE -->``) python block of ``docs/*.md`` and ``README.md`` (see
:mod:`tests.docs.pages`) runs in a fresh interpreter, from an empty folder where the example files
were written as the pages say (``lstm-data example all examples``), with only the environment its
page tells the reader to set. It must exit 0, use no deprecated spelling, warn nothing from
lstm_data, and leave no file behind in that folder.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.docs.pages import DOCS, all_blocks, duplicate_pass, reader_environment

EXAMPLES = [b for b in all_blocks() if b.runnable and b.recipe is None]
#: how the pages tell a reader without a clone to get the example files
FETCH = "lstm-data example all examples"

#: an example that imports Keras or torch spends seconds on the import alone: run with ``-m slow``
HEAVY = {"keras", "torch"}


def test_the_pages_have_examples():
    pages = {b.page for b in EXAMPLES}
    assert {"README.md", "docs/getting-started.md", "docs/formats.md", "docs/specs-and-batches.md"} <= pages


def test_every_python_block_is_marked():
    unmarked = [b.id for b in all_blocks()
                if b.lang == "python" and not b.runnable and not (b.mark or "").startswith("not run:")]
    assert unmarked == [], ("python blocks need <!-- run -->, <!-- recipe: NAME --> or "
                            f"<!-- not run: REASON --> on the line before: {unmarked}")


@pytest.fixture(scope="session")
def reader_folder(tmp_path_factory):
    """An empty folder, outside the repository, holding the example files fetched as the pages say."""
    assert FETCH in (DOCS / "getting-started.md").read_text()
    folder = tmp_path_factory.mktemp("reader")
    done = subprocess.run([sys.executable, "-m", "lstm_data", *FETCH.split()[1:]], cwd=folder,
                          env=reader_environment(EXAMPLES[0]), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.needs in HEAVY else [])
                                   for b in EXAMPLES])
def test_example_runs_as_written(block, reader_folder):
    if duplicate_pass():
        pytest.skip(duplicate_pass())
    if block.needs and importlib.util.find_spec(block.needs) is None:
        pytest.skip(f"{block.id} needs {block.needs}")
    before = {p.name for p in reader_folder.iterdir()}
    # a deprecated spelling on a page fails: the warning is raised where the example calls it
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning:__main__", "-c", block.code],
                          cwd=reader_folder, env=reader_environment(block),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{block.id} failed:\n{done.stderr[-3000:]}"
    ours = [line for line in done.stderr.splitlines() if "Warning:" in line and "lstm_data" in line]
    assert ours == [], f"{block.id} warns:\n" + "\n".join(ours)
    # new entries the example names (other processes may write elsewhere in the checkout meanwhile)
    left = [p.name for p in reader_folder.iterdir() if p.name not in before]
    assert left == [], f"{block.id} left {left} in the folder it ran in: write to a temporary directory"
