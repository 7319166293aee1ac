"""What every command shares: ``--version``, ``-q/--quiet``, ``-v`` logging, silence by default."""
from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lstm_data
from lstm_data.cli import COMMANDS, main
from lstm_data.data import synthetic

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "numu_v3.toml"


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("common") / "ev.csv"
    synthetic.write_csv(path, n_rows=800, seed=3)
    return path


def test_version_names_package_and_backend(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr()
    assert f"lstm-data {lstm_data.__version__}" in out.out + out.err
    assert f"kernels: {lstm_data.kernels.BACKEND}" in out.out + out.err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_takes_quiet_and_verbose(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "-q, --quiet" in text and "-v, --verbose" in text


def test_quiet_commands_print_nothing_but_results(csv_path, tmp_path, capsys):
    assert main(["convert", str(csv_path), str(tmp_path / "a.zarr"), "--quiet"]) == 0
    assert main(["precompute", "--data", str(tmp_path / "a.zarr"), "--spec", str(SPEC), "--batch-size", "256",
                 "--out", str(tmp_path / "b.zarr"), "-q"]) == 0
    out = capsys.readouterr()  # the results (what was written) and nothing on stderr
    assert "wrote" in out.out and "input_png3d" in out.out and out.err == ""
    assert main(["inspect", str(tmp_path / "a.zarr"), "--quiet", "--no-stats"]) == 0
    out = capsys.readouterr()
    assert "rows: 800" in out.out and out.err == ""


def test_verbose_logs_what_happened(csv_path, tmp_path, capsys):
    args = ["precompute", "--data", str(csv_path), "--spec", str(SPEC), "--batch-size", "256",
            "--out", str(tmp_path / "b.zarr"), "--no-progress"]
    try:
        assert main(args) == 0
        capsys.readouterr()
        assert main([*args, "-v"]) == 0
        err = capsys.readouterr().err
    finally:
        main(["inspect", str(csv_path), "--no-stats", "-q"])  # removes the -v handler again
    assert f"opened {csv_path}" in err
    assert "reused" in err
    assert not [h for h in logging.getLogger("lstm_data").handlers if getattr(h, "lstm_data_cli", False)]


def test_library_is_silent_by_default_and_logs_on_request(csv_path):
    code = ("import logging, sys, lstm_data\n"
            "lstm_data.open(sys.argv[1])\n"
            "logging.basicConfig(level=logging.INFO, format='%(name)s %(message)s')\n"
            "lstm_data.open(sys.argv[1])\n")
    done = subprocess.run([sys.executable, "-c", code, str(csv_path)], capture_output=True, text=True,
                          cwd=REPO, check=True)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == f"lstm_data opened {csv_path} (csv): 800 rows, 8 scalars, " \
                                           "groups ['png', 'png2d']", done.stderr


def test_gitignore_covers_the_readme_main_job_output():
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    readme = (REPO / "README.md").read_text()
    assert "--out numu_v3_batches.zarr" in readme
    done = subprocess.run([git, "check-ignore", "-q", "numu_v3_batches.zarr/"], cwd=REPO)
    assert done.returncode == 0


def test_common_options_before_the_command_and_results_on_stdout_with_quiet(tmp_path, capsys):
    import lstm_data
    from lstm_data.synthetic import write_csv

    src = tmp_path / "x.csv"
    write_csv(src, 50, seed=1)
    assert main(["-v", "inspect", str(src)]) == 0
    assert "opened" in capsys.readouterr().err
    assert main(["-q", "convert", str(src), str(tmp_path / "x.zarr")]) == 0
    out = capsys.readouterr()
    assert "wrote" in out.out and "50 rows" in out.out and out.err == ""
    with pytest.raises(SystemExit):
        main(["--version"])
    out = capsys.readouterr()
    assert out.out.startswith(f"lstm-data {lstm_data.__version__}") and out.err == ""
