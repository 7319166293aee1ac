"""Run one training recipe of ``docs/recipes.md`` and record what it trained on.

``python tests/docs/recipe_driver.py NAME CODE_FILE OUT_FILE``, from the repository
root, in the environment the page sets. The recipe runs statement by statement;
just before its training statement (the first ``for`` loop or ``model.fit(`` call) the
driver starts watching what the model is given (``train_step`` of the Keras model,
a forward pre-hook of the torch module). ``OUT_FILE`` receives a pickle of the
``input_slice`` arrays seen step by step, the same output of
``train.batch(i, epoch=e)`` for every step the recipe should have taken (over
the recipe's ``epochs``), the training losses, the validation losses after each
epoch and the untrained model's (``untrained``), and the warnings lstm_data raised.
"""
from __future__ import annotations

import ast
import pickle
import sys
import warnings


def _trains(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.For) or "model.fit(" in ast.unparse(stmt)  # not spec.fit(ds)


def _watch_keras(ns: dict, seen: list) -> None:
    import keras

    model = ns["model"]
    step = model.train_step

    def train_step(data):
        seen.append(keras.ops.convert_to_numpy(data[0]["input_slice"]).copy())
        return step(data)

    model.train_step = train_step


def _watch_torch(ns: dict, seen: list) -> None:
    import torch

    def hook(module, args):
        if torch.is_grad_enabled():  # a training step, not a validation pass
            seen.append(args[0]["input_slice"].numpy().copy())

    ns["net"].register_forward_pre_hook(hook)


def _losses(name: str, ns: dict) -> dict:
    if name == "keras":
        history = ns["history"].history
        return {"loss": list(history["loss"]), "val_loss": list(history["val_loss"]),
                "untrained": float(ns["untrained"])}
    return {"loss": list(ns["losses"]), "val_loss": list(ns["val_losses"][1:]),
            "untrained": float(ns["val_losses"][0])}


def main(name: str, code_file: str, out_file: str) -> None:
    with open(code_file) as f:
        body = ast.parse(f.read(), f"docs/recipes.md recipe {name}").body
    start = next(k for k, stmt in enumerate(body) if _trains(stmt))
    ns: dict = {"__name__": "__main__"}
    seen: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(ast.Module(body[:start], []), f"recipe {name}", "exec"), ns)
        {"keras": _watch_keras, "torch": _watch_torch}[name](ns, seen)
        exec(compile(ast.Module(body[start:], []), f"recipe {name}", "exec"), ns)
    train, epochs = ns["train"], ns.get("epochs", 2)
    want = [train.batch(i, epoch=e)[0]["input_slice"] for e in range(epochs) for i in range(len(train))]
    # lstm_data's warnings, and any warning the recipe's own lines cause (a deprecated spelling)
    ours = [f"{w.category.__name__}: {w.message}" for w in caught
            if "lstm_data" in str(w.filename) + str(w.message) or str(w.filename).startswith("recipe ")]
    with open(out_file, "wb") as f:
        pickle.dump({"seen": seen, "want": want, "n_batches": len(train), "epochs": epochs, "warnings": ours,
                     **_losses(name, ns)}, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
