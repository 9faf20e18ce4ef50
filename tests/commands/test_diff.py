"""``regsurvey diff`` in this process: the tiny project's stored surveys and survey files compared (exit
0), and bad input: unknown revisions and targets, missing and damaged survey files, in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ..conftest import commit_all, git
from .conftest import Tiny
from .runner import UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke

USAGE = "Usage: regsurvey diff [OPTIONS] BASE [HEAD]"


def rows_and_marks(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(r["key"], r["mark"]) for r in report["rows"]]


def test_two_survey_files(tiny: Tiny, tiny_survey_file: Path) -> None:
    result = invoke("diff", tiny_survey_file, tiny_survey_file, "--format", "json", "-C", tiny.repo)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["report"] == "comparison"
    assert report["base"]["commit"] == report["head"]["commit"] == tiny.sha
    assert rows_and_marks(report) == [("scale/width2", "unchanged"), ("idle/width2", "still failing")]
    assert report["summary"][-1]["text"] == "1 of 2 builds unchanged"
    # The same object on both sides; the launch that builds nothing has no stage.
    assert [r["first_difference"] for r in report["rows"]] == ["identical", None]


def test_head_against_the_working_tree_from_the_store(tiny: Tiny, tiny_survey: dict[str, Any],
                                                      tmp_path: Path) -> None:
    out = tmp_path / "reports" / "diff.md"
    result = invoke("diff", "HEAD", *tiny.survey_args(), "--format", "markdown", "-o", out)
    assert (result.exit_code, result.stdout, result.stderr) == (0, f"wrote {out}\n", "")
    text = out.read_text()
    assert text.startswith("### Registers: ")
    assert "- 1 of 2 builds unchanged\n" in text
    assert "| still failing | `idle/width2` | sm90 |" in text


def test_a_stored_survey_is_labelled_as_the_revision_asked_for(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    result = invoke("diff", "HEAD", *tiny.survey_args(), "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["base"]["label"], report["head"]["label"]) == (f"HEAD ({tiny.sha[:10]})", "working tree")


@pytest.mark.parametrize(("args", "message"), [
    (("no-such-rev",), "unknown revision 'no-such-rev' in {repo}"),
    (("missing.json", "HEAD"), "no survey file missing.json, and no git revision of that name"),
    (("{survey}", "no-such-rev"), "unknown revision 'no-such-rev' in {repo}"),
    (("HEAD", "--target", "gfx999"), UNKNOWN_TARGET),
    (("{survey}", "{survey}", "--rebuild-check"),
     "--rebuild-check needs HEAD to be a git revision or the working tree, not a survey file"),
])
def test_bad_input_is_one_line(tiny: Tiny, tiny_survey_file: Path, args: tuple[str, ...], message: str) -> None:
    args = tuple(a.format(survey=tiny_survey_file) for a in args)
    result = invoke("diff", *args, *tiny.survey_args())
    assert_one_line_error(result, message.format(repo=tiny.repo))


def cut_in_half(survey: str) -> str:
    return survey[: len(survey) // 2]


def unknown_status(survey: str) -> str:
    data = json.loads(survey)
    data["rows"][0]["status"] = "maybe"
    return json.dumps(data)


@pytest.mark.parametrize(("damage", "problem"), [
    (lambda survey: "", "not JSON (Expecting value: line 1 column 1 (char 0))"),
    (lambda survey: "[]", "no schema_version: not a regsurvey survey"),
    (lambda survey: '{"schema_version": 1}', "malformed survey (KeyError: 'rows')"),
    (lambda survey: '{"schema_version": 99}', "schema version 99 (this regsurvey reads "),
    (cut_in_half, "not JSON ("),
    (unknown_status, "malformed survey (ValueError: 'maybe' is not a valid Status)"),
], ids=["empty", "a-list", "no-rows", "future-schema", "cut-in-half", "unknown-status"])
def test_a_damaged_survey_file_is_one_line(tiny: Tiny, tiny_survey_file: Path, tmp_path: Path, damage: Any,
                                           problem: str) -> None:
    damaged = tmp_path / "damaged.json"
    damaged.write_text(damage(tiny_survey_file.read_text()))
    result = invoke("diff", damaged, "HEAD", *tiny.survey_args())
    assert result.exit_code == 2 and result.stdout == "", result.stderr
    assert result.stderr.startswith(f"regsurvey: error: survey file {damaged} is unusable: {problem}")
    assert result.stderr.count("\n") == 1


def wrong_axes(data: dict[str, Any]) -> None:
    data["rows"][0]["axes"] = [2]


def no_key(data: dict[str, Any]) -> None:
    data["rows"][0]["key"] = None


def no_toolchain(data: dict[str, Any]) -> None:
    data["toolchain"] = None


def textual_launch(data: dict[str, Any]) -> None:
    data["rows"][0]["launch"] = "first"


@pytest.mark.parametrize("damage", [wrong_axes, no_key, no_toolchain, textual_launch])
def test_a_survey_file_with_fields_of_the_wrong_type_is_one_line(tiny: Tiny, tiny_survey_file: Path,
                                                                 tmp_path: Path, damage: Any) -> None:
    data = json.loads(tiny_survey_file.read_text())
    damage(data)
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(data))
    result = invoke("diff", tiny_survey_file, damaged, "-C", tiny.repo, "--format", "json")
    assert result.exit_code == 2 and result.stderr.startswith(f"regsurvey: error: survey file {damaged} is unusable")


def test_an_unknown_head_is_refused_before_the_base_is_surveyed(tiny: Tiny, tmp_path: Path) -> None:
    store = tmp_path / "fresh-store"
    result = invoke("diff", "HEAD", "no-such-rev", "-C", tiny.repo, "--store", store, "-q")
    assert_one_line_error(result, f"unknown revision 'no-such-rev' in {tiny.repo}")
    assert not (store / "surveys").exists()  # nothing was surveyed


def test_outside_git_a_revision_is_one_line(outside_git: Path) -> None:
    result = invoke("diff", "HEAD", "-C", outside_git, "-q")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("regsurvey: error: ") and result.stderr.count("\n") == 1
    assert result.stderr.endswith(f"'HEAD' names a git revision, and {outside_git} is not in a git repository\n")


def test_outside_git_the_error_names_what_was_given(outside_git: Path) -> None:
    result = invoke("diff", "HEAD", "-C", outside_git, "-q")
    assert result.exit_code == 2 and "--commit" not in result.stderr, result.stderr


@pytest.mark.parametrize(("args", "error"), [
    ((), "Missing argument 'BASE'."),
    (("HEAD", "--format", "pdf"), "Invalid value for '--format': 'pdf' is not one of 'table', 'json', "
                                  "'markdown', 'html', 'csv'."),
    (("HEAD", "--limit", "-1"), "Invalid value for '--limit': -1 is not in the range x>=0."),
    (("a", "b", "c"), "Got unexpected extra argument (c)"),
])
def test_bad_arguments_are_usage_errors(args: tuple[str, ...], error: str) -> None:
    assert_usage_error(invoke("diff", *args), USAGE, error)


def test_a_diff_surveying_two_revisions_names_each_in_its_progress(tiny: Tiny, tmp_path: Path) -> None:
    # Issue #33: outside a terminal a diff printed nothing until its report; in one, its one bar counted both
    # revisions' keys against the last one's total (436/218) and never said which revision it was on.
    repo = tiny.clone(tmp_path / "clone")
    keys = repo / "keys" / "toy.py"
    keys.write_text(keys.read_text().replace("width=[2]", "width=[2, 4]"))
    commit_all(repo, "a second width")
    shas = [git(repo, "rev-parse", rev) for rev in ("HEAD~1", "HEAD")]
    result = invoke("diff", "HEAD~1", "HEAD", "-C", repo, "--store", tmp_path / "store", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "\r" not in result.stderr and "\x1b" not in result.stderr
    lines = result.stderr.splitlines()
    names = [f"HEAD~1 ({shas[0][:10]}), revision 1 of 2", f"HEAD ({shas[1][:10]}), revision 2 of 2"]
    report = json.loads(result.stdout)
    for name, side, total in zip(names, ("base", "head"), (2, 4)):
        assert f"regsurvey: surveying {name}" in lines
        own = [line for line in lines if line.startswith(f"regsurvey: {name}: ")]
        assert any(line.startswith(f"regsurvey: {name}: {total} keys to survey; ") for line in own)
        assert re.fullmatch(rf"regsurvey: {re.escape(name)}: {total}/{total} keys, .*; done in \d+s", own[-1]), own
        for line in own:  # never past its own total
            done = re.search(r": (\d+)/(\d+) keys", line)
            assert done is None or int(done.group(1)) <= int(done.group(2)) == total, line
        assert report[side]["commit"] == shas[side == "head"]
    # One revision after the other: the second is announced after the first one's last line.
    assert lines.index(f"regsurvey: surveying {names[1]}") > max(i for i, line in enumerate(lines) if names[0] in line)
