"""A failed ``import keras`` is explained: Keras missing, or the backend it is configured with."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest


def _import_error(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", "import lstm_data.keras"], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)
    assert done.returncode != 0
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.skipif(importlib.util.find_spec("jax") is not None, reason="jax is installed")
def test_a_missing_backend_is_named_not_reported_as_missing_keras(tmp_path):
    line = _import_error({"KERAS_BACKEND": "jax"})
    assert "Keras is installed" in line and "'jax'" in line and "KERAS_BACKEND=torch" in line
    assert "needs Keras 3" not in line
    (tmp_path / "keras.json").write_text('{"backend": "jax"}')
    env = {"KERAS_HOME": str(tmp_path), "KERAS_BACKEND": ""}
    assert "backend 'jax' (KERAS_BACKEND or keras.json)" in _import_error(env)


def test_missing_keras_names_the_extra(tmp_path):
    (tmp_path / "keras").mkdir()  # a keras that cannot be imported: its package is shadowed by a broken one
    (tmp_path / "keras" / "__init__.py").write_text("raise ImportError('no keras here', name='keras')\n")
    line = _import_error({"PYTHONPATH": str(tmp_path)})
    assert "needs Keras 3: pip install 'lstm_data[keras]'" in line
