"""Optional dependencies: the error names the purpose, the packages and the extra."""
from __future__ import annotations

import json

import pytest

from lstm_data._util.optional import require


def test_require_returns_the_first_module_and_loads_submodules():
    assert require("testing", "test", "json", "json.decoder") is json


def test_a_missing_module_names_the_extra_and_the_cause():
    with pytest.raises(ImportError, match=r"reading things needs json and no_such_module_zz: "
                                          r"pip install 'lstm_data\[things\]' \(No module named"):
        require("reading things", "things", "json", "no_such_module_zz")


def test_no_module_is_a_usage_error():
    with pytest.raises(ValueError):
        require("nothing", "none")
