"""Hostile spec files: weaver YAML configs and TOML specs of any shape give lstm_data's own errors,
naming the file and the key; label names are names, never expression text; YAML aliases are
counted before anything is built from them."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstm_data import Batches, BatchSpec, Order
from lstm_data._util.spec_files import MAX_SPEC_EXPANDED
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError, OptionError, ParseError, SchemaError

yaml = pytest.importorskip("yaml")

#: the errors a spec file may give: lstm_data's own
OWN = (SchemaError, OptionError, ParseError, FormatError)
INPUT = {"pf": {"length": 4, "vars": [["x", 0, 1]]}}


def write(tmp_path: Path, config: object, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    return path


# -- labels are names ---------------------------------------------------------------------------------
def test_simple_label_names_are_column_names_not_expression_text(tmp_path):
    config = {"inputs": {"jet": {"length": None, "vars": [["x", None]]}},
              "labels": {"type": "simple", "value": ["a, b", "c"]}}
    spec = BatchSpec.from_weaver(write(tmp_path, config))
    data = InMemoryDataset({"x": np.zeros(3), "a, b": np.array([1.0, 0.0, 0.2]), "c": np.array([0.0, 1.0, 0.9]),
                            "a": np.full(3, 9.0), "b": np.full(3, 9.0)}, {})
    _, targets, _ = Batches(data, spec, Order(batch_size=3, shuffle=False))[0]
    assert targets["_label_"].tolist() == [0, 1, 1]  # two classes: the columns 'a, b' and 'c'


@pytest.mark.parametrize("names, match", [
    (["a`b", "c"], "cannot name a column"),
    ([f"l{i}" for i in range(65)], "MAX_ARGUMENTS"),
    (["", "c"], "cannot name a column"),
])
def test_label_names_that_no_expression_holds_are_refused_naming_the_file(tmp_path, names, match):
    config = {"inputs": INPUT, "labels": {"type": "simple", "value": names}}
    with pytest.raises(SchemaError, match=match) as err:
        BatchSpec.from_weaver(write(tmp_path, config))
    assert err.value.file == str(tmp_path / "config.yaml") and err.value.variable == "labels"


# -- wrong types are located errors -------------------------------------------------------------------
@pytest.mark.parametrize("change, key", [
    ({"inputs": {1: INPUT["pf"]}}, "inputs"),
    ({"preprocess": {"params": [1, 2]}}, "preprocess.params"),
    ({"preprocess": {"params": {"x": 7}}}, "preprocess.params.x"),
    ({"observers": 7}, "observers"),
    ({"observers": [["x"]]}, "observers"),
    ({"inputs": {"pf": {"length": 4, "vars": [["x", math.nan, 1]]}}}, "x"),
    ({"inputs": {"pf": {"length": 4, "vars": [["x", 0, math.nan]]}}}, "x"),
])
def test_a_wrong_type_or_nan_in_a_weaver_config_names_the_file_and_the_key(tmp_path, change, key):
    config = {"inputs": INPUT, **change}
    with pytest.raises(SchemaError) as err:
        BatchSpec.from_weaver(write(tmp_path, config))
    assert err.value.file == str(tmp_path / "config.yaml") and err.value.variable == key


def test_a_nan_centre_in_a_toml_spec_names_the_file_and_the_variable(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('version = 2\n[inputs.pf]\ntype = "ragged"\nvars = ["x"]\nmax_len = 4\n'
                    '[inputs.pf.standardize.x]\ncenter = "nan"\n')
    with pytest.raises(SchemaError, match="NaN") as err:
        BatchSpec.from_toml(path)
    assert err.value.file == str(path) and err.value.variable == "x"


# -- aliases ---------------------------------------------------------------------------------------------
def _bomb(path: Path) -> Path:
    """A 980 KB config whose labels, once joined, are 60 GB: a 500 KB name and 120,000 aliases of it."""
    n = (980_000 - 500_100) // 4
    path.write_text("inputs:\n  pf:\n    length: 4\n    vars: [x]\nlabels:\n  type: simple\n"
                    f"  value: [&s \"{'a' * 500_000}\", {', '.join(['*s'] * n)}]\n")
    return path


def test_an_alias_bomb_is_refused_quickly_in_bounded_memory_naming_the_file_and_size(tmp_path):
    path = _bomb(tmp_path / "bomb.yaml")
    assert path.stat().st_size < 1_000_000
    code = textwrap.dedent(f"""
        import resource, tracemalloc
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
        from lstm_data import BatchSpec
        from lstm_data.errors import SchemaError
        tracemalloc.start()
        try:
            BatchSpec.from_weaver({str(path)!r})
        except SchemaError as exc:
            print(type(exc).__name__, exc.file, exc.message)
            print(tracemalloc.get_traced_memory()[1])
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    first, peak = out.stdout.strip().splitlines()
    assert first.startswith(f"SchemaError {path}") and "MAX_SPEC_EXPANDED" in first
    assert f"more than {MAX_SPEC_EXPANDED}" in first and "line 7" in first
    assert int(peak) < 100 << 20  # bytes allocated at the peak (the file's text and its nodes)


def test_an_alias_inside_its_own_anchor_is_refused_and_shared_anchors_are_read(tmp_path):
    with pytest.raises(SchemaError, match="inside its own anchor") as err:
        BatchSpec.from_weaver(write(tmp_path, "inputs: &a {pf: [*a]}\n"))
    assert err.value.file == str(tmp_path / "config.yaml")
    text = ("inputs:\n  pf:\n    length: 4\n    vars: &v [[x, 0, 1]]\n  sv:\n    length: 2\n    vars: *v\n"
            "labels:\n  type: simple\n  value: [a, b]\n")
    spec = BatchSpec.from_weaver(write(tmp_path, text))
    assert list(spec.inputs["pf"].vars) == list(spec.inputs["sv"].vars) == ["x"]


# -- generated hostile configs: only lstm_data's own errors escape ---------------------------------------
#: characters of generated text: YAML's and expressions' syntax, a quote, folded and unfolded letters
_TEXT = st.text(alphabet="ax_0 ,.`'\"&*!#:{}[]()<>+-\n\u00e9\uff58\ufb01", max_size=8)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                     _TEXT, st.sampled_from(["auto", "manual", "simple", "custom", "x", "nan",
                                                           "constant", "wrap", "argmax(a, b)", "x > 0"]))
_ANY = st.recursive(_SCALARS, lambda c: st.one_of(st.lists(c, max_size=4),
                                                  st.dictionaries(st.one_of(_TEXT, st.integers()),
                                                                  c, max_size=4)), max_leaves=12)
_VALID = {
    "selection": "x > 0",
    "new_variables": {"y": "x * 2"},
    "preprocess": {"method": "manual", "data_fraction": 0.5, "params": {"x": {"center": 0, "scale": 1}}},
    "inputs": {"pf": {"length": 4, "pad_mode": "constant", "vars": [["x", 0, 1, -5, 5, 0]]}},
    "labels": {"type": "simple", "value": ["a", "b"]},
    "observers": ["o"],
}


def _paths(value, at=()):
    """Every key path of ``value`` (nested mappings and lists)."""
    yield at
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*at, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from _paths(v, (*at, k))


_ALL_PATHS = list(_paths(_VALID))[1:]


def _replaced(config, path, value):
    if len(path) == 1:
        config[path[0]] = value
        return config
    _replaced(config[path[0]], path[1:], value)
    return config


def _fresh():
    return yaml.safe_load(yaml.safe_dump(_VALID))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(_ALL_PATHS), _ANY), min_size=1, max_size=3))
def test_a_weaver_config_with_anything_at_any_key_gives_only_lstm_datas_errors(tmp_path, changes):
    config = _fresh()
    for path, value in changes:
        try:
            _replaced(config, path, value)
        except (KeyError, IndexError, TypeError):  # an earlier change took the path away
            continue
    file = write(tmp_path, config)
    try:
        BatchSpec.from_weaver(file)
    except OWN as exc:
        assert getattr(exc, "file", None) in (None, str(file)) or str(file) in str(exc)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 40), st.integers(1, 12), st.integers(2, 60))
def test_nested_aliases_are_refused_or_read_by_their_expanded_size(tmp_path, width, depth, copies):
    lines = ["a0: &a0 [x, y, z]"]
    for d in range(1, depth + 1):
        lines.append(f"a{d}: &a{d} [{', '.join([f'*a{d - 1}'] * width)}]")
    lines.append(f"inputs: [{', '.join([f'*a{depth}'] * copies)}]")
    file = write(tmp_path, "\n".join(lines) + "\n")
    expanded = 3 * 2 * width ** depth * copies  # a lower bound: each 'x' one node and one character
    try:
        BatchSpec.from_weaver(file)
    except SchemaError as exc:
        assert exc.file == str(file)
        if "MAX_SPEC_EXPANDED" not in exc.message:
            assert expanded <= MAX_SPEC_EXPANDED
    else:  # pragma: no cover - 'a0' is no weaver key: always an error
        raise AssertionError("read")


_TOML_VALID = ('version = 2\nselection = "x > 0"\n[derived]\ny = "x * 2"\n[inputs.pf]\ntype = "ragged"\n'
               'vars = ["x", "y"]\nmax_len = 4\n[inputs.pf.standardize.x]\ncenter = 0.5\nscale = 2\n'
               '[targets.t]\ntype = "scalars"\nvars = ["o"]\ndtype = "int64"\n')


def _toml_value(value) -> str:
    if value is None or isinstance(value, float) and not math.isfinite(value):
        return '"nan"' if value is not None else '"none"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f'"k{i}" = {_toml_value(v)}' for i, v in enumerate(value.values())) + "}"


_TOML_KEYS = ["version", "selection", "y", "type", "vars", "max_len", "center", "scale", "dtype"]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(_TOML_KEYS), st.integers(0, 3), _ANY)
def test_a_toml_spec_with_anything_at_any_key_gives_only_lstm_datas_errors(tmp_path, key, nth, value):
    lines = _TOML_VALID.splitlines()
    hits = [k for k, line in enumerate(lines) if line.startswith(f"{key} = ")]
    k = hits[nth % len(hits)]
    lines[k] = f"{key} = {_toml_value(value)}"
    path = tmp_path / "spec.toml"
    path.write_text("\n".join(lines) + "\n")
    try:
        BatchSpec.from_toml(path)
    except OWN as exc:
        assert getattr(exc, "file", None) == str(path) or str(path) in str(exc)
