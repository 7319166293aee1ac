"""``BatchSpec.from_weaver``: the spec of a weaver-core YAML data config.

weaver-core (ParticleNet, Particle Transformer) describes its inputs in a YAML
file: ``selection``, ``new_variables``, ``preprocess``, ``inputs``, ``labels``,
``observers`` and ``weights``. :func:`spec_from_weaver` reads one and returns
the :class:`~lstm_data.batching.spec.batch_spec.BatchSpec` whose batches hold the tensors
weaver-core's loader gives, under the same names:

- each input with a ``length`` becomes a ``Ragged`` field, channels first
  ``(B, vars, length)``, fixed at ``length``, with its ``pad_mode`` and every
  variable's ``[name, center, scale, clip_min, clip_max, pad_value]`` as a
  ``Standardize`` (weaver's defaults: scale 1, clip to [-5, 5], pad 0; no
  center: the variable is neither standardised nor clipped); an input without
  ``length`` becomes a ``Scalars`` field ``(B, vars)``, ``(B,)`` for one variable;
- ``new_variables`` and ``selection`` become the spec's ``derived`` and
  ``selection`` (their ``np.``, ``ak.`` and ``math.`` prefixes are accepted);
- ``labels`` of type ``simple`` (one-hot columns) become the target ``_label_``,
  the index of the column that holds the largest value, int64 ``(B,)`` as weaver
  gives it (what ``torch.nn.CrossEntropyLoss`` takes); ``custom`` labels become
  one ``(B,)`` target each, int64 for an ``argmax(...)`` expression, else float32;
- ``observers`` become one float32 ``(B,)`` target each (``observers=False`` leaves
  them out); weaver gives an observer in its branch's dtype, float32 in the public
  datasets: set an integer observer's target to ``Scalars([name], dtype="int64",
  squeeze=True)`` to keep its values exactly;
- NaN in inputs becomes 0, as weaver's ``nan_to_num`` (``nan_to=0.0``).

Keys that would change the tensors and that lstm_data does not reproduce
(``weights`` reweighting, ``bucketing``, ``branch_magic``, ``file_magic``,
``monitor_variables``, a ``test_time_selection`` other than ``selection``) are a
:class:`~lstm_data.errors.SchemaError` that names the key.
"""
from __future__ import annotations

import logging
import math
import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

from lstm_data._util.declared import suggest
from lstm_data._util.optional import require
from lstm_data._util.spec_files import load_yaml
from lstm_data.batching.spec.expressions import call_of_names
from lstm_data.batching.spec.fields import Field, Ragged, Scalars
from lstm_data.errors import SchemaError

if TYPE_CHECKING:
    from lstm_data.batching.spec.fields import Standardize

__all__ = ["spec_from_weaver", "weaver_data_fraction", "WEAVER_KEYS", "LABEL_NAME"]

_log = logging.getLogger("lstm_data")

#: the top-level keys of a weaver-core data config (``DataConfig``)
WEAVER_KEYS = ("treename", "branch_magic", "file_magic", "selection", "test_time_selection", "preprocess",
               "new_variables", "inputs", "labels", "observers", "monitor_variables", "weights", "bucketing")
#: keys accepted only when empty, with what to do instead
_UNSUPPORTED = {
    "weights": "reweighting is not reproduced; compute a per-row weight as a derived variable and "
               "give its name to Order(weights=...)",
    "bucketing": "use Order(bucket_by=...) instead",
    "branch_magic": "rename the branches when reading instead",
    "file_magic": "give per-file values to lstm_data.open instead",
    "monitor_variables": "use observers",
}
#: the target name of a ``simple`` label (weaver-core's name)
LABEL_NAME = "_label_"
#: weaver-core's defaults of ``[name, center, scale, clip_min, clip_max, pad_value]``
_DEFAULTS = (None, 1.0, -5.0, 5.0, 0.0)
_PAD_MODES = ("constant", "wrap")

#: the spec class built (``BatchSpec`` or a subclass)
S = TypeVar("S")


def load_weaver_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The top-level mapping of a weaver YAML config (needs PyYAML: the ``weaver`` extra), read
    within the bounds of :mod:`lstm_data._util.spec_files` (its size and nesting)."""
    yaml = require("reading a weaver-core data config", "weaver", "yaml")
    data = load_yaml(path, yaml, lambda message: SchemaError(message, file=str(path)))
    if not isinstance(data, Mapping):
        raise SchemaError(f"{path}: a weaver data config is a mapping of keys, got {type(data).__name__}",
                          file=str(path))
    return dict(data)


def weaver_data_fraction(path: str | os.PathLike[str]) -> float:
    """The config's ``preprocess.data_fraction`` (weaver-core's default 0.1).

    Parameters
    ----------
    path
        The weaver YAML data config.

    Returns
    -------
    float
        The fraction of rows weaver-core computes ``auto`` standardisation on.
    """
    src = str(path)
    pre = _table(load_weaver_yaml(path), "preprocess", src)
    fraction = pre.get("data_fraction", 0.1)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        raise SchemaError(f"{src}: preprocess.data_fraction must be a number in (0, 1], got {_shown(fraction)}",
                          file=src, variable="preprocess.data_fraction")
    return float(fraction)


def spec_from_weaver(path: str | os.PathLike[str], spec_class: Callable[..., S], *,
                     observers: bool = True) -> S:
    """The spec whose batches equal weaver-core's tensors for the data config at ``path``.

    Parameters
    ----------
    path
        A weaver-core YAML data config.
    spec_class
        The spec class to build (:class:`~lstm_data.batching.spec.batch_spec.BatchSpec`, or a subclass).
    observers
        Also output each observer as a float32 ``(B,)`` target named after it.

    Returns
    -------
    BatchSpec
        Inputs named as the config's ``inputs``, the target ``_label_`` (or the
        ``custom`` label names) and the observers.

    Raises
    ------
    SchemaError
        An unknown or unsupported key (named), a malformed entry, or an expression
        outside the allow-list.
    """
    src = str(path)
    try:
        return _spec(load_weaver_yaml(path), src, spec_class, observers)
    except SchemaError as exc:
        raise exc if exc.file is not None else exc.located(file=src) from None


def _spec(data: Mapping[str, Any], src: str, spec_class: Callable[..., S], observers: bool) -> S:
    """The spec of the config ``data`` read from ``src`` (see :func:`spec_from_weaver`)."""
    for key in data:
        if key not in WEAVER_KEYS:
            raise SchemaError(f"{src}: unknown key {key!r}{suggest(key, WEAVER_KEYS)} "
                              f"(weaver-core's keys: {', '.join(WEAVER_KEYS)})", file=src, variable=key)
    for key, hint in _UNSUPPORTED.items():
        if data.get(key):
            raise SchemaError(f"{src}: {key!r} is not supported by BatchSpec.from_weaver: {hint}",
                              file=src, variable=key)
    selection = data.get("selection") or None
    test_sel = data.get("test_time_selection") or None
    if test_sel is not None and test_sel != selection:
        raise SchemaError(f"{src}: 'test_time_selection' differs from 'selection'; a spec has one selection: "
                          "make one spec per selection", file=src, variable="test_time_selection")
    if data.get("treename"):
        _log.info("%s: treename %r: open the files with lstm_data.open(..., tree=%r)", src,
                  data["treename"], data["treename"])
    derived = dict(_table(data, "new_variables", src))
    auto, params = _preprocess(data, src)
    inputs = {_name(name, "inputs", src): _input(name, opts, auto, params, src)
              for name, opts in _table(data, "inputs", src).items()}
    _check_shared(inputs, src)
    targets: dict[str, Field] = {}
    labels = _table(data, "labels", src)
    kind = labels.get("type")
    if kind == "simple":
        value = labels.get("value")
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise SchemaError(f"{src}: labels.value of type 'simple' must be a list of column names",
                              file=src, variable="labels")
        derived[LABEL_NAME] = call_of_names("argmax", value, where=f"{src}: labels.value", variable="labels")
        targets[LABEL_NAME] = Scalars([LABEL_NAME], dtype="int64", squeeze=True)
    elif kind == "custom":
        for name, expr in _table(labels, "value", src).items():
            derived[name] = str(expr)
            targets[name] = Scalars([name], dtype=_custom_label_dtype(str(expr)), squeeze=True)
    elif labels:
        raise SchemaError(f"{src}: labels.type must be 'simple' or 'custom', got {kind!r}", file=src,
                          variable="labels")
    observed = data.get("observers") or []
    if not isinstance(observed, list):
        raise SchemaError(f"{src}: 'observers' must be a list of column names, got {_shown(observed)}",
                          file=src, variable="observers")
    if observers:
        for name in observed:
            name = _name(name, "observers", src)
            if name in targets:
                raise SchemaError(f"{src}: observer {name!r} has the name of a label", file=src, variable=name)
            targets[name] = Scalars([name], dtype="float32", squeeze=True)
    return spec_class(inputs, targets, nan_to=0.0, derived=derived or None, selection=selection)


def _name(name: Any, key: str, src: str) -> str:
    """``name`` (an entry of ``key``) when it is text, else the error naming the file and key."""
    if not isinstance(name, str):
        raise SchemaError(f"{src}: the names in {key!r} are text, got {_shown(name)}", file=src, variable=key)
    return name


def _shown(value: Any) -> str:
    """``value`` as an error quotes it (at most 80 characters)."""
    text = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _custom_label_dtype(expr: str) -> str:
    """A ``custom`` label's dtype: int64 for a class index (an ``argmax(...)`` call), else float32."""
    import ast

    try:
        node = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        return "float32"  # the expression's own check names the error
    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return "int64" if name == "argmax" else "float32"


def _table(data: Mapping[str, Any], key: str, src: str) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SchemaError(f"{src}: {key!r} must be a mapping, got {value!r}", file=src, variable=key)
    return dict(value)


def _preprocess(data: Mapping[str, Any], src: str) -> tuple[bool, dict[str, Any] | None]:
    pre = _table(data, "preprocess", src)
    for key in pre:
        if key not in ("method", "data_fraction", "params"):
            raise SchemaError(f"{src}: unknown key {key!r} in 'preprocess' (method, data_fraction, params)",
                              file=src, variable=key)
    method = str(pre.get("method", "manual")).lower()
    if not method.startswith(("auto", "manual")):
        raise SchemaError(f"{src}: preprocess.method must be 'manual' or 'auto', got {method!r}", file=src,
                          variable="preprocess")
    params = pre.get("params")
    if params is not None and not isinstance(params, Mapping):
        raise SchemaError(f"{src}: preprocess.params must map variable names to their parameters, got "
                          f"{_shown(params)}", file=src, variable="preprocess.params")
    return method.startswith("auto"), None if params is None else dict(params)


def _var_params(entry: Any, auto: bool, where: str) -> tuple[str, list[Any]]:
    """``[name, center, scale, clip_min, clip_max, pad_value]`` with weaver's defaults filled in."""
    items = list(entry) if isinstance(entry, (list, tuple)) else [entry]
    if not items or not isinstance(items[0], str) or len(items) > 6:
        raise SchemaError(f"{where}: a variable is a name or [name, center, scale, clip_min, clip_max, "
                          f"pad_value], got {entry!r}")
    name = items[0]
    defaults = ["auto" if auto else None, *_DEFAULTS[1:]]
    values = items[1:] + defaults[len(items) - 1:]
    return name, values


def _input(name: str, opts: Any, auto: bool, params: Mapping[str, Any] | None, src: str) -> Field:
    where = f"{src}: inputs.{name}"
    if not isinstance(opts, Mapping):
        raise SchemaError(f"{where} must be a mapping with length, pad_mode and vars", file=src, variable=name)
    unknown = [k for k in opts if k not in ("length", "pad_mode", "vars")]
    if unknown:
        raise SchemaError(f"{where}: unknown key {unknown[0]!r} (length, pad_mode, vars)", file=src,
                          variable=unknown[0])
    pad_mode = str(opts.get("pad_mode", "constant")).lower()
    if pad_mode not in _PAD_MODES:
        raise SchemaError(f"{where}: pad_mode must be 'constant' or 'wrap', got {pad_mode!r}", file=src,
                          variable=name)
    if name.endswith("_mask") and pad_mode != "constant":
        raise SchemaError(f"{where}: the mask input must have pad_mode 'constant' (as weaver-core requires)",
                          file=src, variable=name)
    length = opts.get("length")
    entries = opts.get("vars")
    if not isinstance(entries, list) or not entries:
        raise SchemaError(f"{where}: vars must be a non-empty list", file=src, variable=name)
    names: list[str] = []
    standardize: dict[str, Standardize] = {}
    for entry in entries:
        var, (center, scale, lo, hi, pad) = _var_params(entry, auto, where)
        if params is not None:  # a config written by weaver-core's auto standardisation
            if var not in params:
                raise SchemaError(f"{where}: preprocess.params has no entry for {var!r}", file=src, variable=var)
            p = params[var]
            if not isinstance(p, Mapping):
                raise SchemaError(f"{where}: preprocess.params.{var} must be a mapping (center, scale, min, "
                                  f"max, pad_value), got {_shown(p)}", file=src, variable=f"preprocess.params.{var}")
            center, scale, lo, hi, pad = (p.get("center"), p.get("scale", 1), p.get("min", -5),
                                          p.get("max", 5), p.get("pad_value", 0))
        if center == "auto" and var.endswith("_mask"):
            center = None  # weaver-core leaves masks as they are
        names.append(var)
        try:
            std = _standardize(center, scale, lo, hi, pad, pad_mode, f"{where}: {var}")
        except SchemaError as exc:
            raise SchemaError(f"{where}: {var}: {exc.message}", file=src, variable=var) from None
        if std is not None:
            standardize[var] = std
    if length is None:  # weaver-core gives (B,) for one variable
        return Scalars(names, squeeze=len(names) == 1, standardize=standardize or None)
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise SchemaError(f"{where}: length must be a positive int or null, got {length!r}", file=src,
                          variable=name)
    return Ragged(names, max_len=length, fixed=True, pad_value=0.0, layout="channels_first",
                  pad_mode=pad_mode, standardize=standardize)


def _number(value: Any, what: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"{where}: {what} must be a number, got {value!r}")
    return float(value)


def _standardize(center: Any, scale: Any, lo: Any, hi: Any, pad: Any, pad_mode: str,
                 where: str) -> Standardize | None:
    """The variable's ``Standardize``, or ``None`` when it is copied as it is."""
    pad_value = None
    if pad_mode == "constant":  # weaver-core's wrap mode pads empty rows with 0 whatever pad_value says
        pad_value = _number(pad, "pad_value", where)
        if pad_value == 0.0 and math.copysign(1.0, pad_value) > 0:
            pad_value = None  # the field's own pad value
    if center is None and pad_value is None:
        return None
    from lstm_data.batching.spec.fields import Standardize

    if center is None:
        return Standardize(pad_value=pad_value)
    if center == "auto":  # weaver-core computes both from the data
        return Standardize(center="auto", scale="auto", clip_min=_number(lo, "clip_min", where),
                           clip_max=_number(hi, "clip_max", where), pad_value=pad_value)
    return Standardize(center=_number(center, "center", where), scale=_number(scale, "scale", where),
                       clip_min=_number(lo, "clip_min", where), clip_max=_number(hi, "clip_max", where),
                       pad_value=pad_value)


def _check_shared(inputs: Mapping[str, Field], src: str) -> None:
    """A variable in several inputs must have one standardisation (weaver-core keeps one per variable)."""
    seen: dict[str, tuple[str, Any]] = {}
    for name, fld in inputs.items():
        std = getattr(fld, "standardize", None) or {}
        for var in fld.vars:
            mine = std.get(var)
            if var in seen and seen[var][1] != mine:
                raise SchemaError(f"{src}: variable {var!r} has different parameters in inputs "
                                  f"{seen[var][0]!r} and {name!r} (weaver-core refuses this too)",
                                  file=src, variable=var)
            seen.setdefault(var, (name, mine))
