"""Key ids are unique: every axis value is spelled apart from the others, and no value or kind name holds
the separator (issue #12, defect 3). A collision would merge two keys into one row without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

import regsurvey as rs
from regsurvey.keys.keyfiles import KeysFileError, load_kinds


@pytest.mark.parametrize(("axes", "message"), [
    ({"w": [2, "w2"]}, "axis 'w' values 2 and 'w2' are both spelled 'w2' in key ids"),
    ({"dtype": ["bf16", "fp8/e4m3"]}, "axis 'dtype' value 'fp8/e4m3' holds '/', which separates a key id's parts"),
    ({"stop": [True, "stop"]}, "axis 'stop' values True and 'stop' are both spelled 'stop' in key ids"),
])
def test_values_spelled_alike_are_refused(axes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rs.Matrix(targets=["sm90"], **axes)


def test_labels_tell_values_apart() -> None:
    matrix = rs.Matrix(targets=["sm90"], labels={"width": "w"}, width=[2, 4], mode=["w2", "w4"])

    @matrix.kind(axes=["width", "mode"])
    def k(width: int, mode: str) -> None:
        return None

    assert [key.id for key in matrix.keys()] == ["k/w2/w2", "k/w2/w4", "k/w4/w2", "k/w4/w4"]


def test_a_kind_name_with_the_separator_is_refused() -> None:
    matrix = rs.Matrix(targets=["sm90"], w=[2])
    with pytest.raises(ValueError, match="kind name 'attn/w2' must be non-empty and without '/'"):
        matrix.kind(axes=[], name="attn/w2")(lambda: None)


def test_a_keys_file_that_collides_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "suite.py").write_text(
        "import regsurvey as rs\n\nmatrix = rs.Matrix(targets=['sm90'], w=[2, 'w2'])\n")
    with pytest.raises(KeysFileError) as raised:
        load_kinds(tmp_path, tmp_path / "keys")
    assert str(raised.value) == ("keys file keys/suite.py:3 raised ValueError: axis 'w' values 2 and 'w2' are "
                                 "both spelled 'w2' in key ids")
