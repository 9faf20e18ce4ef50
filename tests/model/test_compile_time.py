"""A build's compile time: its stages' seconds (StageTimes, Row.stage_s), and one build on both sides of a
comparison (CompileTime): notable, pathological, and the stage that grew most."""

from __future__ import annotations

import json
import math
import pickle

import pytest

from regsurvey.model.compile_time import CompileTime, StageGrowth, StageTimes
from regsurvey.model.figures import COMPILE_TIME, FIGURES, MEASURED_FIGURES, figure
from regsurvey.model.results import SCHEMA_VERSION, Row, Survey, SurveyFormatError

# The stages of a gfx942 compile as a survey measured them (Triton 3.9, the shape of every AMD compile).
AMD_STAGES = {"frontend": 0.015364, "ttir": 0.004991, "ttgir": 0.01247, "llir": 0.023967, "amdgcn": 0.024001,
              "assembler": 0.001444, "lld": 0.001357, "hsaco": 0.009186, "store": 0.007996}


def test_stage_times_are_a_frozen_mapping_in_the_order_the_stages_ran() -> None:
    stages = StageTimes(AMD_STAGES)
    assert list(stages) == list(AMD_STAGES) and stages == AMD_STAGES and stages["lld"] == 0.001357
    assert math.isclose(stages.total, sum(AMD_STAGES.values()))
    assert StageTimes(list(AMD_STAGES.items())) == stages and hash(StageTimes(AMD_STAGES)) == hash(stages)
    assert pickle.loads(pickle.dumps(stages)) == stages  # sent from workers
    assert StageTimes.from_json(json.loads(json.dumps(stages.to_json()))) == stages
    with pytest.raises(AttributeError):
        stages.total = 0  # type: ignore[misc]


@pytest.mark.parametrize(("seconds", "message"), [
    ({"ttir": -0.5}, "stage ttir took -0.5"),
    ({"ttir": "0.5"}, "stage ttir took '0.5'"),
    ({"ttir": True}, "stage ttir took True"),
    ({"ttir": float("nan")}, "stage ttir took nan"),
    ({"": 0.5}, "stage name '' is not a name"),
])
def test_stage_times_of_another_shape_are_refused(seconds: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StageTimes(seconds)
    with pytest.raises(ValueError, match="not a map of stages"):
        StageTimes.from_json([["ttir", 0.5]])


def _row(**fields: object) -> Row:
    given: dict[str, object] = {"resources": {"vgpr": 64}, **fields}
    return Row(key="gemm/w2", kind="gemm", axes={"w": 2}, target="gfx942", kernel="matmul", status="ok",
               compile_s=0.2, triton_hash="f00", **given)  # type: ignore[arg-type]


def test_a_row_carries_its_stage_times_in_the_survey_json_and_older_surveys_read_without() -> None:
    measured = _row(stage_s=AMD_STAGES)
    assert isinstance(measured.stage_s, StageTimes)  # a plain mapping taken and checked
    survey = Survey(commit="a" * 40, label="HEAD", targets=("gfx942",), toolchain={}, rows=(measured, _row()))
    data = json.loads(survey.to_json())
    assert data["schema_version"] == SCHEMA_VERSION == 6
    assert data["rows"][0]["stage_s"] == AMD_STAGES and data["rows"][1]["stage_s"] is None
    assert list(data["rows"][0]).index("stage_s") == list(data["rows"][0]).index("compile_s") + 1
    assert Survey.from_json(survey.to_json()) == survey
    for row in data["rows"]:
        del row["stage_s"]
    data["schema_version"] = 4
    assert [r.stage_s for r in Survey.from_json(json.dumps(data)).rows] == [None, None]
    data["rows"][0]["stage_s"] = {"ttir": -1}
    with pytest.raises(SurveyFormatError, match=r"row gemm/w2 \(gfx942\): stage ttir took -1"):
        Survey.from_json(json.dumps(data))


def _change(before: float, after: float, **fields: object) -> CompileTime:
    # The LLIR stage keeps the lesser half; the AMDGCN stage (LLVM's backend) takes every change.
    kept = min(before, after) / 2
    return CompileTime(before, after, StageTimes({"llir": before / 2, "amdgcn": before / 2}),
                       StageTimes({"llir": kept, "amdgcn": after - kept}), **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("before", "after", "notable"), [
    (0.3, 0.9, False),  # three times as long, but under a second more: a loaded machine does that
    (4.0, 7.5, False),  # 3.5 s more, under twice as long
    (4.0, 8.0, True),
    (8.0, 4.0, True),  # notably faster too
    (1.2, 0.3, False),
])
def test_compile_time_is_notable_past_the_noise_of_a_loaded_machine(before: float, after: float,
                                                                     notable: bool) -> None:
    assert _change(before, after).notable is notable


@pytest.mark.parametrize(("before", "after", "slowdown"), [
    (2.9, 29.0, False),  # ten times, but not over 30 s
    (3.1, 31.0, True),  # ten times and over 30 s
    (3.0, 30.0, False),  # 30 s is not over 30 s
    (3.2, 31.0, False),  # 9.7 times
    (0.0, 40.0, True),  # from nothing measurable
    (50.0, 40.0, False),
])
def test_a_pathological_slowdown_is_ten_times_and_over_30_s(before: float, after: float, slowdown: bool) -> None:
    assert _change(before, after).slowdown() is slowdown


def test_the_slowdown_rule_takes_other_thresholds() -> None:
    change = _change(1.0, 6.0)
    assert not change.slowdown() and change.slowdown(5, 5) and not change.slowdown(5, 6) and not change.slowdown(7, 5)


def test_the_stage_that_grew_most_is_named() -> None:
    change = _change(2.0, 30.0)
    assert change.grew_most == StageGrowth("amdgcn", 1.0, 29.0)
    assert _change(2.0, 1.0).grew_most is None  # nothing grew
    # A compile that got faster names no stage, even one that grew a little (the demo's gfx942 mla_decode
    # tp8 w8 e4m3 under Triton 3.6 -> 3.9: 58.0 -> 2.4 s, lld 1.0 -> 1.9 ms).
    faster = CompileTime(58.0, 2.4, StageTimes({"amdgcn": 55.98, "lld": 0.001}),
                         StageTimes({"amdgcn": 0.9, "lld": 0.0019}))
    assert faster.grew_most is None and faster.to_dict()["grew_most"] is None
    new_stage = CompileTime(1.0, 3.0, StageTimes({"llir": 1.0}), StageTimes({"llir": 1.0, "ptxas": 2.0}))
    assert new_stage.grew_most == StageGrowth("ptxas", 0.0, 2.0)
    data = _change(3.1, 31.0, reused_before=True).to_dict()
    assert data["ratio"] == 10.0 and data["pathological"] and data["notable"]
    assert data["grew_most"] == {"stage": "amdgcn", "before": 1.55, "after": 29.45}
    assert data["reused"] == {"before": True, "after": False} and data["stages"]["before"] == {"llir": 1.55,
                                                                                                "amdgcn": 1.55}


def test_compile_time_is_a_figure_of_both_vendors_apart_from_the_objects_figures() -> None:
    """Drawn by history like the others (its label, noun and unit from the registry), never a row's
    resource, never worse or better by a verdict."""
    assert figure("compile_s") is COMPILE_TIME and COMPILE_TIME in MEASURED_FIGURES and COMPILE_TIME not in FIGURES
    assert (COMPILE_TIME.vendor, COMPILE_TIME.worse, COMPILE_TIME.unit) == ("", 0, " s")
    with pytest.raises(ValueError, match="unknown figure 'compile_s'"):
        _row(resources={"compile_s": 3})
