"""setup.py reuses a module compiled by an earlier release build of the clone when it is newer than
every source of the core and than setup.py, and compiles it otherwise (a build is minutes)."""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def clone(tmp_path, monkeypatch):
    """A copy of setup.py and the core's sources, with one module 'compiled' in build/lib.*."""
    shutil.copy2(ROOT / "setup.py", tmp_path / "setup.py")
    ext = tmp_path / "lstm_data" / "kernels" / "_ext"
    ext.mkdir(parents=True)
    (ext / "pad.pyx").write_text("# source\n")
    (ext / "ld_pow5.h").write_text("/* header */\n")
    spec = importlib.util.spec_from_file_location("lstm_data_setup", tmp_path / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not __main__: defines, does not build
    monkeypatch.setattr(module, "_REUSE", True)
    monkeypatch.chdir(tmp_path)
    return tmp_path, module


def _command(module, root: Path):
    from setuptools import Distribution, Extension

    ext = Extension("lstm_data.kernels._ext.pad", ["lstm_data/kernels/_ext/pad.c"])
    cmd = module.OptionalBuildExt(Distribution({"ext_modules": [ext]}))
    cmd.inplace = 1
    cmd.ensure_finalized()
    return cmd, ext


def _age(path: Path, seconds: float) -> None:
    t = path.stat().st_mtime - seconds
    os.utime(path, (t, t))


def test_a_module_newer_than_every_source_is_reused_and_an_older_one_is_not(clone):
    root, module = clone
    cmd, ext = _command(module, root)
    built = root / "build" / "lib.test" / cmd.get_ext_filename(ext.name)
    built.parent.mkdir(parents=True)
    built.write_bytes(b"compiled")
    for source in [root / "setup.py", *(root / "lstm_data" / "kernels" / "_ext").iterdir()]:
        _age(source, 100)
    assert cmd._reuse(ext)
    target = Path(cmd.get_ext_fullpath(ext.name))
    assert target.read_bytes() == b"compiled"
    target.unlink()
    (root / "lstm_data" / "kernels" / "_ext" / "ld_pow5.h").touch()  # a source changed since: compile
    assert not cmd._reuse(ext) and not target.exists()
    _age(root / "lstm_data" / "kernels" / "_ext" / "ld_pow5.h", 100)
    cmd.force = True  # build_ext --force: compile
    assert not cmd._reuse(ext)
    cmd.force = False
    module._REUSE = False  # a debug build, or a change of mode: compile
    assert not cmd._reuse(ext)
