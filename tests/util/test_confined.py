"""Names read from a file stay inside their directory (lstm_data._util.confined)."""
from __future__ import annotations

import pytest

from lstm_data._util.confined import check_plain_name, confined
from lstm_data.errors import FormatError


@pytest.mark.parametrize(("name", "why"), [
    ("../x", "'..' component"), ("a/../../x", "'..' component"), ("a\\..\\x", "'..' component"),
    ("/etc/passwd", "absolute"), ("C:\\x", "absolute"), ("C:x", "absolute"), ("\\\\host\\share", "absolute"),
    ("", "non-empty string"), (3, "non-empty string"), (None, "non-empty string"), ("a\0b", "NUL"),
])
def test_a_name_that_is_not_plain_is_refused_naming_the_file_and_the_key(name, why):
    with pytest.raises(FormatError, match=rf"the key 'weights' names .*{why}") as caught:
        check_plain_name(name, file="run/position.json", key="weights")
    assert caught.value.file == "run/position.json"


def test_a_link_leading_out_is_refused_and_one_staying_in_is_taken(tmp_path):
    inside, outside = tmp_path / "in", tmp_path / "out"
    inside.mkdir(), outside.mkdir()
    (outside / "f").write_text("x")
    (inside / "away").symlink_to(outside, target_is_directory=True)
    (inside / "sub").mkdir()
    (inside / "near").symlink_to(inside / "sub", target_is_directory=True)
    with pytest.raises(FormatError, match="resolves to .*outside"):
        confined(inside, "away/f", file="meta", key="k")
    with pytest.raises(FormatError, match="resolves to .*outside"):
        confined(inside, "away/not-yet", file="meta", key="k")  # what does not exist yet is checked too
    assert confined(inside, "near/f", file="meta", key="k") == inside / "near" / "f"
    assert confined(inside, "sub/new.h5", file="meta", key="k") == inside / "sub" / "new.h5"
