"""Models from files and factories, and ``lstm-data predict`` on the command line."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data import PredictOptions
from lstm_data.cli import main

torch = pytest.importorskip("torch")

from tests.scoring.test_predict import SPEC, Net, _files  # noqa: E402

ROOT = Path(__file__).parents[2]

#: a module of a factory (the caller names it; its weights come from a state dict)
FACTORY = textwrap.dedent("""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(2, 2)
            self.b = torch.nn.Linear(2, 2)

        def forward(self, x, p):
            return torch.softmax(self.a(x) + self.b(p).sum(dim=1), dim=1)

    def make():
        torch.manual_seed(123)  # other weights than the state dict's: loading it must matter
        return Net()
""")


def _scores(paths: list[Path]) -> dict[str, bytes]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.concat_tables([pq.read_table(p) for p in paths])
    return {n: table.column(n).to_numpy().tobytes() for n in table.column_names}


def _reference(tmp_path: Path, paths: list[str]) -> dict[str, bytes]:
    return _scores(lstm_data.predict(Net(), paths, SPEC, tmp_path / "ref",
                                     options=PredictOptions(batch_size=16, output_format="parquet")))


def _factory_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "mods"
    where.mkdir()
    (where / "scoring_factory_mod.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(where))
    monkeypatch.delitem(sys.modules, "scoring_factory_mod", raising=False)
    state = tmp_path / "net.pt"
    torch.save(Net().state_dict(), state)
    return state


@pytest.mark.filterwarnings(r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")  # the file format users have
@pytest.mark.slow  # torch.export takes seconds
def test_torchscript_export_and_factory_models_score_like_the_module(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _files(tmp_path, (70, 45))
    want = _reference(tmp_path, paths)
    script = tmp_path / "net.ts"
    torch.jit.save(torch.jit.script(Net().eval()), str(script))
    batch = torch.zeros(5, 2), torch.zeros(5, 4, 2)
    b = torch.export.Dim("b")
    exported = torch.export.export(Net().eval(), batch, dynamic_shapes=({0: b}, {0: b}))
    pt2 = tmp_path / "net.pt2"
    torch.export.save(exported, str(pt2))
    state = _factory_module(tmp_path, monkeypatch)
    for name, model, sd in (("ts", script, None), ("pt2", pt2, None),
                            ("factory", "scoring_factory_mod:make", state)):
        out = lstm_data.predict(model, paths, SPEC, tmp_path / name, state_dict=sd,
                                options=PredictOptions(batch_size=16, output_format="parquet"))
        assert _scores(out) == want, name  # bitwise, keys and scores
    with pytest.raises(lstm_data.OptionError, match="cannot import 'nothing'"):
        lstm_data.predict("scoring_factory_mod:nothing", paths, SPEC, tmp_path / "x")


def test_a_predict_table_cannot_name_a_model(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    for key in ("model", "state_dict"):
        spec.write_text(SPEC.to_toml() + f'\n[predict]\nbatch_size = 8\n{key} = "os:system"\n')
        with pytest.raises(lstm_data.OptionError, match=f"key '{key}' is refused.*named only by the caller"):
            PredictOptions.from_toml(spec)


@pytest.mark.filterwarnings(r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")  # the file format users have
def test_cli_with_a_torchscript_file_in_a_subprocess(tmp_path: Path) -> None:
    paths = _files(tmp_path, (70, 45))
    want = _reference(tmp_path, paths)
    script = tmp_path / "net.ts"
    torch.jit.save(torch.jit.script(Net().eval()), str(script))
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.to_toml() + '\n[predict]\nbatch_size = 16\noutput_format = "parquet"\n')
    done = subprocess.run([sys.executable, "-m", "lstm_data", "predict", "--model", str(script), "--data", *paths,
                           "--spec", str(spec), "--out", str(tmp_path / "cli"), "--no-progress"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    written = [Path(line) for line in done.stdout.split()]
    assert [p.name for p in written] == ["in0.scores.parquet", "in1.scores.parquet"]
    assert _scores(written) == want


def test_cli_with_a_factory_and_a_state_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    paths = _files(tmp_path, (70, 45))
    want = _reference(tmp_path, paths)
    state = _factory_module(tmp_path, monkeypatch)
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC.to_toml() + '\n[predict]\nbatch_size = 4\n')
    args = ["predict", "--model", "scoring_factory_mod:make", "--state-dict", str(state), "--data", *paths,
            "--spec", str(spec), "--out", str(tmp_path / "cli"), "--batch-size", "16", "--format", "parquet", "-q"]
    assert main(args) == 0
    assert _scores([Path(line) for line in capsys.readouterr().out.split()]) == want
    assert main(args) == 1  # the outputs exist now
    assert "exists; pass overwrite=True (--overwrite)" in capsys.readouterr().err


def test_cli_help_shows_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    shown = capsys.readouterr().out
    assert "lstm-data predict --model model.keras --data" in shown and "module:factory" in shown
    assert np.__name__ == "numpy"
