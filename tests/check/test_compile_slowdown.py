"""The gate's compile-slowdown rule on comparisons of a real survey (tests/measured_survey.py) whose measured
compile times are scaled: each test takes a build's real stage seconds and multiplies them (or one stage)
to the seconds a pathological toolchain would take. Its thresholds: by default 10 times as long and over
30 s; the baseline's [check] and ``check --compile-slowdown`` set them.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.check.baseline import Baseline, BaselineError, CheckRules, parse_baseline, with_compile_slowdown
from regsurvey.check.gate import COMPILE_SLOWDOWN, GateResult, judge
from regsurvey.diff.core import compare
from regsurvey.model.comparison import Mark
from regsurvey.model.results import Row, Survey
from regsurvey.output.gate_text import problem_message

from ..layer_survey import row
from ..measured_survey import measured_survey, scaled, with_rows


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    return measured_survey(tmp_path_factory.mktemp("measured"))


def test_the_survey_measured_each_build_and_its_reuse(measured: Survey) -> None:
    """Real compiles: every stage took some time, ptxas (sm90) and the assembler and lld (gfx950) apart,
    together no longer than the compile; the build compiled for one key and reused by the other carries
    the one measurement, and says it is reused."""
    for r in measured.rows:
        assert r.ok and r.stage_s is not None, r
        assert all(seconds > 0 for seconds in r.stage_s.values()) and r.stage_s.total <= r.compile_s + 0.01
        assert {"ptxas"} <= set(r.stage_s) if r.target == "sm90" else {"assembler", "lld"} <= set(r.stage_s)
    for target in ("sm90", "gfx950"):
        w2, w8 = row(measured, "gemm/w2", target), row(measured, "gemm/w8", target)
        assert w2.triton_hash == w8.triton_hash and w2.reused != w8.reused
        assert (w2.compile_s, w2.stage_s) == (w8.compile_s, w8.stage_s)


def compiled(measured: Survey, target: str = "sm90") -> Row:
    """The row of ``target`` whose kernel the survey compiled (the other key's row reused it)."""
    return next(r for r in measured.rows if r.target == target and not r.reused)


def _judged(measured: Survey, before: Row, after: Row, baseline: Baseline | None = None) -> GateResult:
    """The gate on ``measured`` with ``before`` as the base's row of that build and ``after`` the head's."""
    assert (before.row_id, before.target) == (after.row_id, after.target)
    base = with_rows(measured, {(before.row_id, before.target): before})
    head = with_rows(measured, {(after.row_id, after.target): after})
    return judge(compare(base, head), baseline or Baseline())


def _slowdowns(result: GateResult) -> list[str]:
    return [problem_message(p) for p in result.problems if p.rule is COMPILE_SLOWDOWN]


@pytest.mark.parametrize(("before", "after", "fails"), [
    (3.1, 30.69, False),  # 9.9 times as long, over 30 s
    (2.9, 29.0, False),  # 10 times as long, 29 s
    (3.1, 31.0, True),  # 10 times as long, 31 s
    (0.5, 600.0, True),
    (40.0, 31.0, False),  # faster
])
def test_a_build_fails_at_ten_times_as_long_and_over_30_s(measured: Survey, before: float, after: float,
                                                            fails: bool) -> None:
    real = compiled(measured)
    result = _judged(measured, scaled(real, before), scaled(real, after, other_kernel=True))
    assert len(_slowdowns(result)) == fails and result.passed is not fails
    # Compile time never marks a build: its figures decide (the same object's, here).
    (compared,) = [r for r in result.comparison.rows if (r.row_id, r.target) == (real.row_id, real.target)]
    assert compared.mark is Mark.UNCHANGED and compared.compile_time is not None
    assert math.isclose(compared.compile_time.ratio, after / before)


def test_the_gate_says_which_build_its_seconds_and_the_stage_that_grew_most(measured: Survey) -> None:
    real = compiled(measured)
    assert real.stage_s is not None
    result = _judged(measured, scaled(real, 3.1), scaled(real, 31.0, stage="ptxas", other_kernel=True))
    (message,) = _slowdowns(result)
    assert real.kernel is not None
    assert message.startswith(f"{real.key} on sm90 ({real.kernel}): compile time 3.10 s → 31.0 s (10.0x slower; "
                              "most in ptxas ")
    grown = 3.1 / real.compile_s * real.stage_s["ptxas"]  # the base: every real stage scaled alike
    assert f"most in ptxas {grown:.2f} s → " in message and message.endswith("; fails at 10x and over 30 s")
    (problem,) = [p for p in result.problems if p.rule is COMPILE_SLOWDOWN]
    assert problem.row.compile_time is not None and problem.row.compile_time.grew_most is not None
    assert problem.row.compile_time.grew_most.stage == "ptxas"


def test_sarif_names_the_rule_and_carries_the_compile_time(measured: Survey) -> None:
    from regsurvey.check.sites import Site
    from regsurvey.output.sarif import sarif_log

    real = compiled(measured)
    result = _judged(measured, scaled(real, 3.1), scaled(real, 31.0, stage="ptxas", other_kernel=True))
    (run,) = sarif_log(result, {f"sm90:{real.row_id}": Site("keys/toy.py", 16)})["runs"]
    rule = next(r for r in run["tool"]["driver"]["rules"] if r["id"] == "regsurvey/compile-slowdown")
    assert rule["properties"]["tags"] == ["performance"] and "compile_slowdown" in rule["help"]["text"]
    (found,) = run["results"]
    assert found["ruleId"] == "regsurvey/compile-slowdown" and found["message"]["text"] == _slowdowns(result)[0]
    timed = found["properties"]["compile_time"]
    assert (timed["before"], timed["after"], timed["grew_most"]["stage"]) == (3.1, 31.0, "ptxas")


def test_one_kernel_on_both_sides_is_never_judged(measured: Survey) -> None:
    """An equal Triton hash is the same kernel and the same toolchain: its seconds moved with the machine."""
    real = compiled(measured)
    result = _judged(measured, scaled(real, 3.1), scaled(real, 310.0))
    assert result.passed and all(r.compile_time is None for r in result.comparison.rows)


def test_a_side_without_a_measured_compile_is_never_judged(measured: Survey) -> None:
    """A build Triton read from its own cache measured no stage: its seconds are a file read, not a compile."""
    from dataclasses import replace

    real = compiled(measured)
    result = _judged(measured, replace(scaled(real, 0.01), stage_s=None), scaled(real, 31.0, other_kernel=True))
    assert result.passed


def test_a_reused_build_is_judged_by_the_measurement_of_its_compile(measured: Survey) -> None:
    """The head's build reused from an earlier compile (a store warm from an earlier run of the gate) carries
    that compile's seconds: a slowdown fails the gate run again as it failed the first run, and says whose
    seconds they are."""
    from dataclasses import replace

    reused = next(r for r in measured.rows if r.target == "sm90" and r.reused)
    real = compiled(measured)
    head = replace(scaled(reused, 31.0, other_kernel=True), key=real.key)  # that build on the head
    result = _judged(measured, scaled(real, 3.1), head)
    (message,) = _slowdowns(result)
    assert "3.10 s → 31.0 s (an earlier compile's) (10.0x slower" in message


def test_the_baseline_sets_the_rule(measured: Survey) -> None:
    real = compiled(measured)
    before, after = scaled(real, 2.0), scaled(real, 12.0, other_kernel=True)  # 6 times as long, 12 s
    assert _judged(measured, before, after).passed
    tighter = parse_baseline("[check]\ncompile_slowdown = 5\ncompile_slowdown_s = 10\n")
    assert (tighter.rules.compile_slowdown, tighter.rules.compile_slowdown_s) == (5.0, 10.0)
    (message,) = _slowdowns(_judged(measured, before, after, tighter))
    assert message.endswith("; fails at 5x and over 10 s")
    off = parse_baseline("[check]\ncompile_slowdown = false\n")
    assert off.rules.compile_slowdown is None
    assert _judged(measured, scaled(real, 3.1), scaled(real, 310.0, other_kernel=True), off).passed
    assert parse_baseline("[check]\ncompile_slowdown = true\n").rules == CheckRules()


@pytest.mark.parametrize(("setting", "message"), [
    ("compile_slowdown = 0.5", "compile_slowdown must be a factor of 1 or more"),
    ('compile_slowdown = "10x"', "compile_slowdown must be a factor of 1 or more"),
    ("compile_slowdown_s = -1", "compile_slowdown_s must be a number of seconds of 0 or more"),
    ("compile_slowdown_s = true", "compile_slowdown_s must be a number of seconds"),
])
def test_a_baseline_with_an_unusable_rule_is_refused_in_one_line(setting: str, message: str) -> None:
    with pytest.raises(BaselineError, match=message) as caught:
        parse_baseline(f"[check]\n{setting}\n", "regsurvey.baseline.toml")
    assert str(caught.value).startswith("regsurvey.baseline.toml: [check]: ") and "\n" not in str(caught.value)


@pytest.mark.parametrize(("option", "factor", "over_s"), [
    ("off", None, 30.0),
    ("20x,60s", 20.0, 60.0),
    ("5x", 5.0, 30.0),
    ("90s", 10.0, 90.0),
    ("2.5x, 12.5s", 2.5, 12.5),
])
def test_the_command_line_sets_the_rule_over_the_baseline(option: str, factor: float | None, over_s: float) -> None:
    rules = with_compile_slowdown(CheckRules(), option)
    assert (rules.compile_slowdown, rules.compile_slowdown_s) == (factor, over_s)


@pytest.mark.parametrize("option", ["", "10", "10x30", "0.5x", "fast", "10x,30s,5"])
def test_a_command_line_rule_of_another_shape_is_refused(option: str) -> None:
    with pytest.raises(BaselineError, match="--compile-slowdown .*give FACTORx,SECONDSs"):
        with_compile_slowdown(CheckRules(), option)


def test_check_refuses_an_unusable_compile_slowdown_before_surveying(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "regsurvey", "check", "--base", "HEAD", "--compile-slowdown",
                           "ten", "-C", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--compile-slowdown \"ten\"" in done.stderr
