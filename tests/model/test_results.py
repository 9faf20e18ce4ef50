"""Survey JSON: round trip, schema version, and clear errors on damaged files."""

from __future__ import annotations

import json

import pytest

from regsurvey.model.results import ObjectRef, Row, SaidOnce, Survey, SurveyFormatError, error_line


def sample() -> Survey:
    row = Row(key="router/tp8/w4", kind="router", axes={"tp": 8, "width": 4}, target="gfx950",
              kernel="router_gemm", status="ok", resources={"vgpr": 128, "sgpr_spill": 3},
              object=ObjectRef("objects/ab/abc.hsaco", "abc"), compile_s=1.5, triton_hash="f00")
    bad = Row(key="router/tp8/w8", kind="router", axes={"tp": 8, "width": 8}, target="gfx950",
              kernel=None, status="error", error="kind body raised at keys/x.py:3: ValueError: no")
    return Survey(commit="a" * 40, label="HEAD", targets=("gfx950",), toolchain={"hip": {"triton": "3.9.0"}},
                  rows=(row, bad))


def test_round_trip() -> None:
    survey = sample()
    assert Survey.from_json(survey.to_json()) == survey


@pytest.mark.parametrize(("text", "problem"), [
    ("{not json", "not JSON"),
    ('{"rows": []}', "no schema_version"),
    ('{"schema_version": 99}', "schema version 99"),
    ('{"schema_version": 1, "rows": [{"key": 1}]}', "malformed survey"),
])
def test_damaged_survey(text: str, problem: str) -> None:
    with pytest.raises(SurveyFormatError, match=problem):
        Survey.from_json(text)


def test_truncated_survey() -> None:
    text = sample().to_json()
    with pytest.raises(SurveyFormatError, match="not JSON"):
        Survey.from_json(text[: len(text) // 2])


def test_a_row_status_is_one_of_four_and_reads_back_as_such() -> None:
    from regsurvey.model.results import Row, Status

    row = Row(key="k/w2", kind="k", axes={"w": 2}, target="gfx950", kernel="k", status="ok")
    assert row.status is Status.OK and row.ok and f"{row.status}" == "ok" and row.status == "ok"
    data = json.loads(sample().to_json())
    assert {r["status"] for r in data["rows"]} <= {s.value for s in Status}
    assert all(isinstance(r.status, Status) for r in Survey.from_json(sample().to_json()).rows)
    with pytest.raises(ValueError):
        Row(key="k/w2", kind="k", axes={"w": 2}, target="gfx950", kernel="k", status="okay")
    data["rows"][0]["status"] = "built"
    with pytest.raises(SurveyFormatError, match="malformed survey"):
        Survey.from_json(json.dumps(data))


@pytest.mark.parametrize(("edit", "message"), [
    ({"resources": {"vgpr": 8, "vgprs": 9}}, "unknown figure 'vgprs'"),
    ({"resources": {"vgpr": "8"}}, "figure vgpr is '8', not a whole number"),
    ({"resources": {"vgpr": 8.5}}, "figure vgpr is 8.5, not a whole number"),
    ({"lint": {"a": 1}}, "lint is neither null nor a list of findings"),
    ({"messages": "said"}, "messages are not a list of lines"),
    # Issue 31: a negative figure was believed (a spill of -3 bytes, reported as fewer spills).
    ({"resources": {"vgpr": 128, "sgpr_spill": -3}}, "figure sgpr_spill is -3, not a whole number of zero or more"),
    # Issue 31: a row on a target its survey does not list crashed `run`'s table (UnknownTargetError's
    # traceback) or was shown under the wrong vendor.
    ({"target": "nosuch"}, "row router/tp8/w4 is on target 'nosuch', not one of the survey's (gfx950)"),
    ({"target": "sm90"}, "row router/tp8/w4 is on target 'sm90', not one of the survey's (gfx950)"),
])
def test_a_stored_row_of_another_shape_is_refused_in_one_line(edit: dict, message: str) -> None:
    # What no survey writes (a hand-edited or damaged store) is refused on load, naming the row and the
    # field: the store then surveys that commit again instead of crashing diff or check later.
    data = json.loads(sample().to_json())
    data["rows"][0].update(edit)
    with pytest.raises(SurveyFormatError, match="malformed survey") as caught:
        Survey.from_json(json.dumps(data))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_survey_of_a_target_this_regsurvey_does_not_know_is_refused_in_one_line() -> None:
    data = json.loads(sample().to_json())
    data["targets"] = ["gfx950", "gfx1234"]
    with pytest.raises(SurveyFormatError, match="target 'gfx1234' is not one this regsurvey knows"):
        Survey.from_json(json.dumps(data))


def test_what_was_said_once_per_process_goes_with_its_target_and_kind() -> None:
    """Kept per kind and target: stored per target, merged, narrowed with the rows; a survey of schema 3
    (before it was recorded) reads with none, and a malformed entry is refused in one line."""
    base = sample()
    sm90 = Row(key="norm/w2", kind="norm", axes={"width": 2}, target="sm90", kernel="norm", status="ok")
    config = SaidOnce("router", "gfx950", "INFO lib: Using configuration from configs/E=8.json")
    tables = SaidOnce("norm", "sm90", "stdout: tables loaded")
    survey = Survey(commit=base.commit, label=base.label, targets=("gfx950", "sm90"), toolchain={},
                    rows=(*base.rows, sm90), said_once=(config, tables))
    assert Survey.from_json(survey.to_json()) == survey
    assert json.loads(survey.to_json())["said_once"][0] == {"kind": "router", "target": "gfx950",
                                                             "text": config.text}
    gfx950 = survey.narrowed_to(base.rows, ("gfx950",))
    assert gfx950.said_once == (config,)
    assert survey.narrowed_to((sm90,), ("gfx950", "sm90")).said_once == (tables,)
    assert gfx950.merge(survey.narrowed_to((sm90,), ("sm90",))).said_once == survey.said_once
    old = json.loads(survey.to_json())
    del old["said_once"]
    old["schema_version"] = 3
    assert Survey.from_json(json.dumps(old)).said_once == ()
    old["said_once"] = [{"kind": "router", "text": "no target"}]
    with pytest.raises(SurveyFormatError, match="malformed survey.*said_once holds"):
        Survey.from_json(json.dumps(old))


# What Triton 3.9 raised for triton_kernels' Hopper mxfp4 matmul (tests/realworld/triton_kernels, sm90),
# cut to three of its 128 located errors.
PTXAS_LINE_ERRORS = """PTXASError: PTXAS error: Internal Triton PTX codegen error
`ptxas` stderr:
ptxas-blackwell /tmp/tmpcg6wm0m4.ptx, line 1549; error   : Arguments mismatch for instruction 'fma'
ptxas-blackwell /tmp/tmpcg6wm0m4.ptx, line 1555; error   : Arguments mismatch for instruction 'fma'
ptxas-blackwell /tmp/tmpcg6wm0m4.ptx, line 1560; error   : Arguments mismatch for instruction 'fma'
ptxas-blackwell fatal   : Ptx assembly aborted due to errors

Repro command: /usr/bin/ptxas-blackwell -lineinfo -v --gpu-name=sm_90a /tmp/tmpcg6wm0m4.ptx -o /tmp/tmpcg6wm0m4.ptx.o
"""


def test_a_ptxas_error_on_a_ptx_line_is_the_line_shown() -> None:
    """Not "Ptx assembly aborted due to errors", and not the temporary file's name (new on every compile,
    so a diff would see every such failure change)."""
    assert error_line(PTXAS_LINE_ERRORS) == (
        "ptxas-blackwell error at PTX line 1549: Arguments mismatch for instruction 'fma' (+2 more)")
    assert error_line(PTXAS_LINE_ERRORS.replace("tmpcg6wm0m4", "tmpi7idw51j")) == error_line(PTXAS_LINE_ERRORS)


def test_an_object_report_with_a_negative_figure_is_refused() -> None:
    """What the result cache keeps of an object: a negative figure is damage (issue 31), refused like an
    unknown one, so the entry is reported and the kernel compiled again."""
    from regsurvey.model.results import ObjectReport

    assert ObjectReport.from_dict({"resources": {"vgpr": 0}, "findings": None}).resources == {"vgpr": 0}
    with pytest.raises(ValueError, match="not figures"):
        ObjectReport.from_dict({"resources": {"vgpr": -1}, "findings": None})

