"""The README's Keras and torch recipes, run as written on the shipped sample.

Each recipe is the fenced block after ``<!-- recipe: NAME -->`` in README.md. It
runs statement by statement in the repository root; before its training
statement (the first ``for`` loop or ``.fit(`` call) the test starts watching
what the model is given (``train_step`` of the Keras model, a forward pre-hook
of the torch module), then runs the rest. It must train without NaN and without
warnings from lstm_data, and epoch ``e`` must read the batches of order
``(seed, e)``.
"""
from __future__ import annotations

import ast
import os
import re
import warnings

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import pytest

from tests.helpers import EXAMPLES

README = EXAMPLES.parent / "README.md"


def recipe(name: str) -> str:
    """The code of the README block marked ``<!-- recipe: name -->``."""
    found = re.findall(rf"<!-- recipe: {name} -->\s*```python\n(.*?)```", README.read_text(), re.S)
    assert len(found) == 1, f"README.md needs one python block after <!-- recipe: {name} -->"
    return found[0]


def _trains(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.For) or ".fit(" in ast.unparse(stmt)


def run_recipe(name: str, watch, monkeypatch) -> dict:
    """Run the recipe in the repository root; ``watch(namespace)`` just before it trains."""
    monkeypatch.chdir(README.parent)
    body = ast.parse(recipe(name), f"README.md recipe {name}").body
    start = next(k for k, stmt in enumerate(body) if _trains(stmt))
    ns: dict = {"__name__": f"readme_{name}"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(ast.Module(body[:start], []), f"README.md ({name})", "exec"), ns)
        watch(ns)
        exec(compile(ast.Module(body[start:], []), f"README.md ({name})", "exec"), ns)
    ours = [str(w.message) for w in caught if "lstm_data" in str(w.filename) + str(w.message)]
    assert ours == [], ours
    return ns


def assert_orders(seen: list, batches, epochs: int, name: str = "input_slice") -> None:
    """``seen`` is, step by step, batch ``i`` of order ``(seed, e)`` for e = 0 .. epochs - 1."""
    want = [(e, i) for e in range(epochs) for i in range(len(batches))]
    assert len(seen) == len(want)
    for got, (e, i) in zip(seen, want):
        np.testing.assert_array_equal(got, batches.batch(i, epoch=e)[0][name], err_msg=f"epoch {e} batch {i}")


def test_keras_recipe_trains_without_nan_on_orders_seed_0_1(monkeypatch):
    keras = pytest.importorskip("keras")
    seen: list = []

    def watch(ns):
        model = ns["model"]
        step = model.train_step

        def train_step(data):
            seen.append(keras.ops.convert_to_numpy(data[0]["input_slice"]))
            return step(data)

        model.train_step = train_step

    ns = run_recipe("keras", watch, monkeypatch)
    history = ns["history"].history
    assert len(history["loss"]) == 2
    assert np.isfinite(history["loss"]).all() and np.isfinite(history["val_loss"]).all(), history
    assert_orders(seen, ns["train"], 2)


def test_torch_recipe_trains_without_nan_on_orders_seed_0_1(monkeypatch):
    pytest.importorskip("torch")
    seen: list = []

    def watch(ns):
        ns["net"].register_forward_pre_hook(lambda module, args: seen.append(args[0]["input_slice"].numpy().copy()))

    ns = run_recipe("torch", watch, monkeypatch)
    losses = ns["losses"]
    assert len(losses) == 2 * len(ns["train"]) and np.isfinite(losses).all(), losses
    assert_orders(seen, ns["train"], 2)
