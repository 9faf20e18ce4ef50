"""An enum whose members are their text (model/enums.py): shown, formatted, compared, hashed and written to
JSON as its value, and a text that is none of its values refused. The two of regsurvey's: a row's status and
a finding's severity."""

from __future__ import annotations

import json

import pytest

from regsurvey.model.enums import TextEnum
from regsurvey.model.findings import Severity
from regsurvey.model.results import Status


class Colour(TextEnum):
    RED = "red"
    DARK_BLUE = "dark blue"


def test_a_member_is_shown_and_formatted_as_its_text() -> None:
    assert str(Colour.DARK_BLUE) == "dark blue" and f"{Colour.RED}" == "red"
    assert f"[{Colour.RED:>5}]" == "[  red]" and f"{Colour.DARK_BLUE:.4}" == "dark"
    assert "-".join([Colour.RED, Colour.DARK_BLUE]) == "red-dark blue"
    assert repr(Colour.RED) == "<Colour.RED: 'red'>"  # the repr still says which


def test_a_member_is_its_text_wherever_a_text_is_taken() -> None:
    assert Colour.RED == "red" and "red" == Colour.RED and Colour.RED != "Red"
    assert {"red": 1}[Colour.RED] == 1 and {Colour.RED: 1}["red"] == 1  # hashed as its text
    assert json.dumps({"colour": Colour.DARK_BLUE}) == '{"colour": "dark blue"}'
    assert Colour("dark blue") is Colour.DARK_BLUE and isinstance(Colour.RED, str)
    with pytest.raises(ValueError, match="'green' is not a valid Colour"):
        Colour("green")


def test_regsurveys_text_enums() -> None:
    assert [str(s) for s in Status] == ["ok", "error", "skipped", "flaky"]
    assert [f"{s}" for s in Severity] == ["error", "note"]
    assert Status("error") is Status.ERROR and Status.ERROR == Severity.ERROR == "error"
    assert json.dumps([Status.SKIPPED, Severity.NOTE]) == '["skipped", "note"]'
