"""Specs with bounds: linear in their variables, files read within limits, sizes checked before allocation."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, ReadOptions, Scalars
from lstm_data._util.spec_files import MAX_SPEC_FILE_BYTES, MAX_SPEC_NESTING
from lstm_data.batching.spec.sizes import MAX_SLOTS, check_batch_bytes
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import OptionError, SchemaError

WIDE = 100_000


def test_a_spec_of_a_hundred_thousand_variables_is_checked_and_batched():
    names = [f"v{i}" for i in range(WIDE)]
    scalars = [f"s{i}" for i in range(WIDE)]
    data = InMemoryDataset({s: np.arange(3, dtype=np.float32) for s in scalars},
                           {"g": RaggedGroup(names, np.ones((4, WIDE), np.float32), np.array([0, 1, 3, 4]))})
    spec = BatchSpec(inputs={"p": Ragged(names, max_len=2), "s": Scalars(scalars)})
    assert len(spec.variables) == 2 * WIDE
    inputs, _, _ = Batches(data, spec, Order(batch_size=2, shuffle=False))[0]
    assert inputs["p"].shape == (2, 2, WIDE) and inputs["s"].shape == (2, WIDE)
    with pytest.raises(SchemaError, match="listed twice: .'v5'.") as err:
        Ragged(names + ["v5"])
    assert err.value.variable == "v5"


def test_argmax_over_too_many_columns_is_the_argument_limit():
    labels = ", ".join(f"s{i}" for i in range(100))
    with pytest.raises(SchemaError, match="MAX_ARGUMENTS") as err:
        BatchSpec(inputs={"s": Scalars(["label"])}, derived={"label": f"argmax({labels})"})
    assert err.value.variable == "label"
    with pytest.raises(SchemaError, match="MAX_LENGTH"):
        BatchSpec(inputs={"s": Scalars(["x"])}, selection=" < ".join(["x"] * 10_000))


def _toml(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_deeply_nested_toml_is_a_schema_error_naming_the_file(tmp_path):
    deep = _toml(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SchemaError, match="nests tables or lists too deep") as err:
        BatchSpec.from_toml(deep)
    assert err.value.file == str(deep)
    nested = _toml(tmp_path, "x = " + "[" * (MAX_SPEC_NESTING + 1) + "]" * (MAX_SPEC_NESTING + 1) + "\n", "n.toml")
    with pytest.raises(SchemaError, match=f"x.0.0.0.*nests more than {MAX_SPEC_NESTING}"):
        BatchSpec.from_toml(nested)
    with pytest.raises(OptionError, match="too deep"):
        Order.from_toml(deep)
    with pytest.raises(OptionError, match="too deep"):
        ReadOptions.from_toml(deep)


def test_a_spec_file_past_the_size_limit_is_refused_before_parsing(tmp_path):
    big = tmp_path / "big.toml"
    line = "# " + "x" * 1000 + "\n"
    big.write_text('version = 2\n[inputs.a]\ntype = "scalars"\nvars = ["x"]\n'
                   + line * (MAX_SPEC_FILE_BYTES // len(line) + 1))
    with pytest.raises(SchemaError, match=f"larger than {MAX_SPEC_FILE_BYTES} bytes") as err:
        BatchSpec.from_toml(big)
    assert err.value.file == str(big)


def test_deeply_nested_weaver_yaml_is_a_schema_error_naming_the_file(tmp_path):
    pytest.importorskip("yaml")
    deep = tmp_path / "deep.yaml"
    deep.write_text("inputs: " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(SchemaError, match="too deep|nests more than") as err:
        BatchSpec.from_weaver(deep)
    assert err.value.file == str(deep)
    wide = tmp_path / "wide.yaml"
    wide.write_text("monitor_variables:\n - &a [1, 1, 1, 1, 1, 1, 1, 1]\n - &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
                    " - &c [*b, *b, *b, *b, *b, *b, *b, *b]\n - &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
                    " - [*d, *d, *d, *d, *d, *d, *d, *d]\n")  # aliases walked once each, not expanded
    with pytest.raises(SchemaError, match="'monitor_variables' is not supported"):
        BatchSpec.from_weaver(wide)


def _jets(n=300):
    counts = np.arange(n) % 5
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return InMemoryDataset({"pt": np.ones(n, np.float32)},
                           {"p": RaggedGroup(["p_x", "p_y"], np.ones((int(off[-1]), 2), np.float32), off)})


@pytest.mark.parametrize("spec, option", [
    (BatchSpec(inputs={"p": Ragged(["p_x", "p_y"], max_len=10**12)}), "max_len=1000000000000"),
    (BatchSpec(inputs={"p": Ragged(["p_x"], mask=True)}, pad_to_multiple_of=10**11), "pad_to_multiple_of"),
])
def test_a_batch_that_cannot_fit_names_the_field_and_the_bytes_before_allocating(spec, option):
    with pytest.raises(SchemaError, match=option) as err:
        Batches(_jets(), spec, Order(batch_size=256))
    assert err.value.variable == "p" and "input 'p'" in str(err.value) and " bytes)" in str(err.value)
    assert Batches(_jets(), BatchSpec(inputs={"p": Ragged(["p_x"], max_len=10**12, fixed=False)}),
                   Order(batch_size=256))[0][0]["p"].shape == (256, 4, 1)  # the width follows the rows


def test_the_batch_bytes_count_rows_variables_dtype_masks_and_lengths():
    spec = BatchSpec(inputs={"p": Ragged(["p_x", "p_y"], max_len=10, dtype="float64", mask=True, lengths=True),
                             "s": Scalars(["pt"])})
    need = 100 * (10 * (2 * 8 + 1) + 8) + 100 * 4  # rows x (slots x (variables x 8 + mask) + length) + scalars
    check_batch_bytes(spec.fields(), None, 1000, 100, room=need)
    with pytest.raises(SchemaError, match=rf"a batch of 100 rows takes 17.8 KiB \({need} bytes\)"):
        check_batch_bytes(spec.fields(), None, 1000, 100, room=need - 1)


def test_size_and_fill_options_are_typed_strictly():
    with pytest.raises(SchemaError, match=f"at most {MAX_SLOTS}"):
        Ragged(["p_x"], max_len=2**64)
    with pytest.raises(OptionError, match="pad_to_multiple_of must be a positive int"):
        BatchSpec(inputs={"p": Ragged(["p_x"])}, pad_to_multiple_of=2**64)
    with pytest.raises(SchemaError, match="pad_value must be a number, got True"):
        Ragged(["p_x"], pad_value=True)
    with pytest.raises(OptionError, match="nan_to must be a finite number"):
        BatchSpec(inputs={"p": Ragged(["p_x"])}, nan_to=float("inf"))
    assert np.isnan(Ragged(["p_x"], pad_value=float("nan")).pad_value)


def test_strict_fill_options_from_a_spec_file(tmp_path):
    base = 'version = 2\n[inputs.p]\ntype = "ragged"\nvars = ["p_x"]\n'
    with pytest.raises(SchemaError, match="pad_value must be a number, got True"):
        BatchSpec.from_toml(_toml(tmp_path, base + "pad_value = true\n"))
    with pytest.raises(OptionError, match="nan_to must be a finite number"):
        BatchSpec.from_toml(_toml(tmp_path, "nan_to = inf\n" + base, "n.toml"))
