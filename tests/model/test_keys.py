"""Keys (model/keys.py): one build configuration each, its axes by name, and how an axis value is spelled in
a key id. The ids a whole matrix makes are tests/keys/test_matrix.py's."""

from __future__ import annotations

import pickle

import pytest

from regsurvey.model.keys import Key, axis_label

MLA = Key(kind="mla_decode", axes=(("tp", 4), ("width", 2), ("cache", "e4m3"), ("stop", True)), target="gfx950",
          id="mla_decode/tp4/w2/e4m3/stop")


def test_a_keys_axes_by_name_in_the_kinds_order() -> None:
    assert MLA.axes_dict == {"tp": 4, "width": 2, "cache": "e4m3", "stop": True}
    assert list(MLA.axes_dict) == ["tp", "width", "cache", "stop"]
    assert Key(kind="norm", axes=(), target="sm90", id="norm").axes_dict == {}


def test_a_key_is_a_value() -> None:
    same = Key(kind="mla_decode", axes=MLA.axes, target="gfx950", id=MLA.id)
    assert same == MLA and hash(same) == hash(MLA) and {MLA: 1}[same] == 1
    assert Key(kind="mla_decode", axes=MLA.axes, target="sm90", id=MLA.id) != MLA  # another target
    assert pickle.loads(pickle.dumps(MLA)) == MLA
    with pytest.raises(AttributeError):
        MLA.target = "sm90"  # type: ignore[misc]


@pytest.mark.parametrize(("axis", "value", "labels", "segment"), [
    ("tp", 8, {}, "tp8"),
    ("width", 4, {"width": "w"}, "w4"),  # the project's label for the axis
    ("width", 0, {"width": "w"}, "w0"),
    ("cache", "e4m3", {"cache": "c"}, "e4m3"),  # a string is its own segment
    ("stop", True, {}, "stop"),
    ("stop", False, {}, "nostop"),
    ("stop", False, {"stop": "s"}, "nos"),
])
def test_an_axis_value_as_a_key_id_spells_it(axis: str, value: object, labels: dict[str, str], segment: str) -> None:
    assert axis_label(axis, value, labels) == segment
