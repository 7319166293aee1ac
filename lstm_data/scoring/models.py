"""The model of a scoring run, whatever its kind, as one function of a batch's inputs.

:func:`as_scorer` turns a Keras 3 model (object or ``.keras`` file), a torch module
(object, TorchScript or ``torch.export`` file, or ``"module:factory"`` plus a state
dict) or any callable taking the inputs dict into a function from the inputs
(numpy arrays) to named score columns. A ``"module:factory"`` is imported only when
the caller names it (an argument of :func:`lstm_data.predict` or the command line),
never because a file says so.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from lstm_data.errors import FormatError, OptionError

__all__ = ["as_scorer", "score_columns", "Scorer"]

#: inputs (numpy arrays by output name) -> score columns (name -> 1-D array)
Scorer = Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]


def _module_of(obj: Any, prefix: str) -> bool:
    """Whether ``obj``'s class or one of its bases comes from package ``prefix``."""
    return any(c.__module__.split(".")[0] == prefix for c in type(obj).__mro__)


def _numpy(value: Any) -> Any:
    """``value`` (a tensor, an array, or a dict/list/tuple of them) as numpy arrays."""
    if isinstance(value, Mapping):
        return {str(k): _numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_numpy(v) for v in value]
    if hasattr(value, "detach"):  # a torch tensor
        return value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray) and hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    return np.asarray(value)


def score_columns(output: Any, n_rows: int, labels: Sequence[str] | None) -> dict[str, np.ndarray]:
    """Named 1-D score columns of one batch's model ``output``.

    A single ``(B,)`` or ``(B, K)`` output gives ``score_<label>`` when ``labels``
    (the spec's target variables) has ``K`` names, else ``score_0 .. score_{K-1}``
    (``score`` for one column without a label); a dict output gives
    ``score_<key>`` (``score_<key>_<j>`` per class); a tuple output
    ``score_<i>`` (``score_<i>_<j>``).
    """
    out = _numpy(output)
    parts: list[tuple[str, Any, Sequence[str] | None]]
    if isinstance(out, dict):
        parts = [(f"score_{k}", v, None) for k, v in out.items()]
    elif isinstance(out, list):
        parts = [(f"score_{i}", v, None) for i, v in enumerate(out)]
        if len(parts) == 1:
            parts = [("score", parts[0][1], labels)]
    else:
        parts = [("score", out, labels)]
    columns: dict[str, np.ndarray] = {}
    for base, arr, names in parts:
        arr = np.asarray(arr)
        if arr.ndim == 0 or len(arr) != n_rows:
            raise FormatError(f"the model's output {base!r} has shape {arr.shape}: expected "
                              f"{n_rows} rows, one per row of the batch")
        flat = arr.reshape(n_rows, -1)
        width = flat.shape[1]
        if names is not None and len(names) == width:
            keys = [f"score_{n}" for n in names]
        elif width == 1:
            keys = [base if base != "score" else "score_0"]
        else:
            keys = [f"{base}_{j}" for j in range(width)]
        for j, key in enumerate(keys):
            columns[key] = np.ascontiguousarray(flat[:, j])
    return columns


def _load_file(path: Path, state_dict: str | None) -> Any:
    """A model stored in ``path``: Keras ``.keras``, a ``torch.export`` ``.pt2``, or TorchScript."""
    if not path.exists():
        raise OptionError(f"model file {path} does not exist")
    if path.suffix == ".keras":
        import keras
        return keras.saving.load_model(path, compile=False)
    import torch
    if path.suffix == ".pt2":
        return torch.export.load(str(path)).module()
    try:
        return torch.jit.load(str(path), map_location="cpu")  # type: ignore[no-untyped-call]
    except RuntimeError as exc:
        raise FormatError(f"{path}: neither a Keras .keras file, a torch.export .pt2 file nor a "
                          f"TorchScript file ({exc})", file=str(path)) from None


def _factory(spec: str, state_dict: str | None) -> Any:
    """``module:factory()`` (the caller named it) with ``state_dict`` loaded into it."""
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise OptionError(f"model {spec!r}: cannot import {attr!r} from {module_name!r} ({exc})") from None
    model = factory()
    if state_dict is not None:
        import torch
        state = torch.load(state_dict, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    return model


def load_model(model: Any, state_dict: str | os.PathLike[str] | None = None) -> Any:
    """The model object of ``model``: itself, a loaded file, or ``module:factory()``."""
    sd = None if state_dict is None else os.fspath(state_dict)
    if isinstance(model, (str, os.PathLike)):
        text = os.fspath(model)
        if ":" in text and not Path(text).exists() and "/" not in text.partition(":")[0]:
            return _factory(text, sd)
        if sd is not None:
            raise OptionError("state_dict goes with a model given as 'module:factory', not a file")
        return _load_file(Path(text), sd)
    if sd is not None:
        raise OptionError("state_dict goes with a model given as 'module:factory', not an object")
    return model


def _torch_call(module: Any, names: list[str]) -> Callable[[Mapping[str, np.ndarray]], Any]:
    import torch

    if hasattr(module, "eval"):
        try:
            module.eval()
        except NotImplementedError:  # a torch.export program's module: exported as it runs
            pass

    def call(inputs: Mapping[str, np.ndarray]) -> Any:
        tensors = [torch.from_numpy(np.ascontiguousarray(inputs[n])) for n in names]
        with torch.inference_mode():
            return module(*tensors)
    return call


def _keras_call(model: Any) -> Callable[[Mapping[str, np.ndarray]], Any]:
    def call(inputs: Mapping[str, np.ndarray]) -> Any:
        return model.predict_on_batch(dict(inputs))
    return call


def as_scorer(model: Any, input_names: list[str], labels: Sequence[str] | None,
              state_dict: str | os.PathLike[str] | None = None) -> tuple[Scorer, str]:
    """``model`` as a :data:`Scorer`, and a description of it (for the run's record).

    Parameters
    ----------
    model
        A Keras 3 model or ``.keras`` path; a torch module, TorchScript file or
        ``torch.export`` ``.pt2`` file (called with the inputs as tensors, in the
        spec's input order); ``"module:factory"`` (imported and called, then
        ``state_dict`` loaded); or a callable taking the inputs dict.
    input_names
        The spec's inputs, in order.
    labels
        Names of the score columns of a single ``(B, K)`` output (the spec's
        target variables), or ``None``.
    state_dict
        A torch state dict file for a ``"module:factory"`` model.
    """
    described = os.fspath(model) if isinstance(model, (str, os.PathLike)) else type(model).__qualname__
    obj = load_model(model, state_dict)
    call: Callable[[Mapping[str, np.ndarray]], Any]
    if _module_of(obj, "keras"):
        call = _keras_call(obj)
    elif _module_of(obj, "torch"):
        call = _torch_call(obj, input_names)
    elif callable(obj):
        call = obj
    else:
        raise OptionError(f"model must be a Keras model, a torch module, a model file or a callable "
                          f"taking the inputs dict, got {type(obj).__name__}")

    def scorer(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        n = len(next(iter(inputs.values())))
        return score_columns(call(inputs), n, labels)
    return scorer, described
