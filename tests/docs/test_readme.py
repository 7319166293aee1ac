"""README.md is the front page: the two Quick start commands first and verbatim, links into the site."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from tests.docs.pages import DOCS, ROOT, blocks

README = ROOT / "README.md"
#: the README's first two commands are a contract (CI runs the second one verbatim)
COMMANDS = [
    "pip install . && lstm-data precompute --data examples/numu_v3.csv.xz --spec examples/numu_v3.toml "
    "--batch-size 1024 --seed 1 --out numu_v3_batches.zarr --overwrite",
    'pip install torch==2.13.0 -e ".[test]" && python -m pytest -n auto',
]


def test_the_two_commands_come_first_verbatim():
    first = blocks(README)[0]
    assert first.lang == "bash" and first.code.splitlines() == COMMANDS
    assert COMMANDS[1] in (ROOT / ".ci" / "run").read_text()


def test_ci_runs_the_slow_tests_the_readme_command_leaves_out():
    import tomllib

    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-m 'not slow'" in addopts
    steps = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "python -m pytest -m slow" in steps
    assert 'LSTM_DATA_PURE_PYTHON=1 python -m pytest -q -m "kernels and not slow"' in steps


def test_readme_is_a_front_page_that_links_every_page_of_the_site():
    text = README.read_text()
    assert len(text.splitlines()) < 120, "the manual lives in docs/, the README is its front page"
    links = set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text))
    missing = [str(p.relative_to(ROOT)) for p in sorted(DOCS.glob("*.md"))
               if p.name != "index.md" and str(p.relative_to(ROOT)) not in links]
    assert missing == [], f"README.md should link {missing}"
    broken = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert broken == [], f"README.md links to missing files: {broken}"


def test_the_quick_start_store_holds_no_nan(tmp_path, monkeypatch):
    from lstm_data import open_batches
    from lstm_data.cli import main

    # the first command, after its install, writing into a temporary folder
    argv = COMMANDS[0].split(" && lstm-data ", 1)[1].replace("numu_v3_batches.zarr", str(tmp_path / "b.zarr"))
    monkeypatch.chdir(ROOT)
    assert main(argv.split() + ["--quiet"]) == 0
    stored = open_batches(tmp_path / "b.zarr")
    assert len(stored) == 5
    for i in range(len(stored)):
        for name, array in {**stored[i][0], **stored[i][1]}.items():
            assert not np.isnan(array).any(), (i, name)


def test_the_readme_train_goes_to_torch_without_a_nan_warning(monkeypatch):
    torch = pytest.importorskip("torch")
    from lstm_data.torch import TorchBatches

    in_short = next(b for b in blocks(README) if b.runnable)
    assert "train, val = " in in_short.code
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # any warning of ours fails the test
        exec(compile(in_short.code, in_short.id, "exec"), scope)
        data = TorchBatches(scope["train"])
        loader = torch.utils.data.DataLoader(data, batch_size=None, sampler=data.sampler)
        inputs, targets, _ = next(iter(loader))
    assert {"input_png3d_lengths", "input_png2d_lengths"} <= set(inputs)
    assert not any(torch.isnan(x).any() for x in [*inputs.values(), *targets.values()] if x.is_floating_point())
