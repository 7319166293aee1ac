"""A schema's declared names checked against a file's columns: each a column, declared once."""
from __future__ import annotations

import pytest

from lstm_data import Schema, SchemaError

COLUMNS = ["x", "y", "z", "px", "py"]


def test_patterns_expand_and_the_rest_stays_undeclared():
    groups, scalars = Schema(groups={"p": "p*"}, scalars=["z"]).resolve(COLUMNS)
    assert groups == {"p": ["px", "py"]} and scalars == ["z"]
    assert Schema(groups={"p": ["py", "px"]}).resolve(COLUMNS) == ({"p": ["py", "px"]}, None)


@pytest.mark.parametrize("schema, message, variable", [
    (Schema(groups={"a": ["x", "y"], "b": ["y"]}), "column 'y' declared in 'a' and 'b'", "y"),
    (Schema(groups={"a": ["x"]}, scalars=["z", "x"]), "column 'x' declared as scalar and in 'a'", "x"),
    (Schema(scalars=["z", "z"]), "column 'z' declared as scalar and in 'scalars'", "z"),
    (Schema(groups={"a": ["q"]}), "unknown column 'q'", "q"),
    (Schema(scalars=["x", "w"]), "unknown column 'w'", "w"),
    (Schema(groups={"a": "q*"}), "group 'a': pattern 'q\\*' matches no column", None),
])
def test_a_name_that_is_no_column_or_is_declared_twice_is_named(schema, message, variable):
    with pytest.raises(SchemaError, match=message) as err:
        schema.resolve(COLUMNS)
    assert err.value.variable == variable
