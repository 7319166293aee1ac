"""The format table: every row is well formed, and what is derived from it follows its rows."""
from __future__ import annotations

import inspect

from lstm_data.io.formats import FORMATS, format_named
from lstm_data.io.plumbing import remote
from lstm_data.io.read_options import READER_OPTIONS, REMOTE_OPTIONS, ReadOptions


def test_every_row_names_a_reader_that_takes_its_options():
    assert len({fmt.name for fmt in FORMATS}) == len(FORMATS)
    for fmt in FORMATS:
        assert fmt.options <= set(ReadOptions.option_names()), fmt.name
        assert all(ext.startswith(".") and ext == ext.lower() for ext in fmt.extensions), fmt.name
        reader = fmt.open_function()
        parameters = inspect.signature(reader).parameters
        takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        assert takes_any or fmt.options - {"connect_timeout", "read_timeout", "retries"} <= set(parameters), \
            fmt.name
        assert takes_any or ("schema" in parameters) == fmt.schema, fmt.name


def test_reader_options_and_remote_magic_are_derived_from_the_rows():
    for fmt in FORMATS:
        extra = set(REMOTE_OPTIONS) if fmt.remote else set()
        assert READER_OPTIONS[fmt.name] == fmt.options | extra
    assert format_named("arrow").options == {"dtype", "threads", "columns", "exclude"}
    assert remote._MAGIC == {b"root": "root", b"PAR1": "parquet"}
