"""The Keras and torch recipes of docs/recipes.md, run as a reader would run them.

Each recipe is the python block after ``<!-- recipe: NAME -->`` in
``docs/recipes.md``. It runs in a fresh interpreter, from the repository root, with
only the environment that page tells the reader to export (the Keras recipe needs
``KERAS_BACKEND=torch`` written on the page: the test does not set it). Before its
training statement the driver (``tests/docs/recipe_driver.py``) starts watching what
the model is given. The recipe must train without NaN and without warnings from
lstm_data, epoch ``e`` must read the batches of order ``(seed, e)``, and it must
learn: its last validation loss is at most 70% of the untrained model's.
"""
from __future__ import annotations

import importlib.util
import pickle
import subprocess
import sys

import numpy as np
import pytest

from tests.docs.pages import DOCS, ROOT, blocks, duplicate_pass, reader_environment

PAGE = DOCS / "recipes.md"


def recipe(name: str):
    """The block of docs/recipes.md marked ``<!-- recipe: name -->``."""
    found = [b for b in blocks(PAGE) if b.recipe == name]
    assert len(found) == 1, f"docs/recipes.md needs one python block after <!-- recipe: {name} -->"
    return found[0]


def run_recipe(name: str, tmp_path) -> dict:
    if duplicate_pass():
        pytest.skip(duplicate_pass())
    block = recipe(name)
    code, out = tmp_path / f"{name}.py", tmp_path / f"{name}.pkl"
    code.write_text(block.code)
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "docs" / "recipe_driver.py"), name, str(code),
                           str(out)], cwd=ROOT, env=reader_environment(block), capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"recipe {name} ({block.id}) failed:\n{done.stderr[-4000:]}"
    result = pickle.loads(out.read_bytes())
    assert result["warnings"] == [], result["warnings"]
    return result


def assert_learns(result: dict) -> None:
    """The validation loss fell by 30% or more from the untrained model's, and never was NaN."""
    val = np.asarray(result["val_loss"])
    assert np.isfinite(val).all() and np.isfinite(result["untrained"]), result
    assert val[-1] <= 0.7 * result["untrained"], (result["untrained"], val)


def assert_orders(result: dict) -> None:
    """Step by step, the model saw batch ``i`` of order ``(seed, e)`` for e = 0 .. epochs - 1."""
    seen, want, epochs = result["seen"], result["want"], result["epochs"]
    assert len(want) == epochs * result["n_batches"] and len(seen) == len(want)
    for k, (got, expected) in enumerate(zip(seen, want)):
        e, i = divmod(k, result["n_batches"])
        np.testing.assert_array_equal(got, expected, err_msg=f"epoch {e} batch {i}")


def test_keras_recipe_sets_its_backend_on_the_page():
    assert recipe("keras").env.get("KERAS_BACKEND") == "torch"
    assert "KERAS_BACKEND" not in recipe("torch").env


@pytest.mark.slow
def test_keras_recipe_learns_without_nan_on_orders_seed_0_1(tmp_path):
    if importlib.util.find_spec("keras") is None:   # not importorskip: importing keras needs the page's backend
        pytest.skip("keras is not installed")
    result = run_recipe("keras", tmp_path)
    assert len(result["loss"]) == result["epochs"] and np.isfinite(result["loss"]).all(), result
    assert_learns(result)
    assert_orders(result)


@pytest.mark.slow
def test_torch_recipe_learns_without_nan_on_orders_seed_0_1(tmp_path):
    pytest.importorskip("torch")
    result = run_recipe("torch", tmp_path)
    assert len(result["loss"]) == result["epochs"] * result["n_batches"] and np.isfinite(result["loss"]).all()
    assert_learns(result)
    assert_orders(result)

