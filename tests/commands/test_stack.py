"""``regsurvey stack BASE..HEAD`` in this process: a one-commit range on a clone of the tiny project
(exit 0), and ranges that are not ranges, hold no commit or name unknown revisions (one line, exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ..conftest import commit_all, git
from .conftest import Tiny
from .runner import UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke

USAGE = "Usage: regsurvey stack [OPTIONS] BASE..HEAD"


def test_a_range_of_one_commit(tiny: Tiny, tiny_survey: dict[str, Any], tmp_path: Path) -> None:
    clone = tiny.clone(tmp_path / "clone")
    (clone / "NOTES.md").write_text("no kernel changes\n")
    head = commit_all(clone, "notes")
    store = tmp_path / "store"
    shutil.copytree(tiny.store, store)  # the base's survey is stored; the new commit is surveyed
    result = invoke("stack", "HEAD~1..HEAD", "-C", clone, "--store", store, "-q", "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["report"] == "stack"
    assert [(s["commit"], s["subject"]) for s in report["steps"]] == [(head, "notes")]
    (step,) = report["steps"]
    assert step["comparison"]["base"]["label"] == f"HEAD~1 ({tiny.sha[:10]})"
    assert step["comparison"]["head"]["label"] == f"HEAD ({head[:10]})"
    assert {m: n for m, n in step["comparison"]["counts"].items() if n} == {"unchanged": 1, "still failing": 1}
    assert step["keys_built"] == {"ok": 1, "total": 2}
    assert (store / "surveys" / head / "sm90.json").is_file()


@pytest.mark.parametrize(("spec", "message"), [
    ("HEAD", "expected a range BASE..HEAD, got 'HEAD'"),
    ("HEAD...HEAD", "expected a range BASE..HEAD, got 'HEAD...HEAD'"),
    ("a..b..c", "expected a range BASE..HEAD, got 'a..b..c'"),
    ("HEAD..HEAD", "the range HEAD..HEAD holds no commit (HEAD is not ahead of HEAD along its first parents)"),
    ("..", "the range .. holds no commit (HEAD is not ahead of HEAD along its first parents)"),
    ("no-such-rev..HEAD", "unknown revision 'no-such-rev' in {repo}"),
    ("HEAD..no-such-rev", "unknown revision 'no-such-rev' in {repo}"),
])
def test_a_range_that_is_no_range_is_one_line(tiny: Tiny, spec: str, message: str) -> None:
    assert_one_line_error(invoke("stack", spec, *tiny.survey_args()), message.format(repo=tiny.repo))


def test_an_unknown_target_is_one_line(tiny: Tiny) -> None:
    assert_one_line_error(invoke("stack", "HEAD~1..HEAD", "-t", "gfx999", *tiny.survey_args()), UNKNOWN_TARGET)


def test_a_range_needs_a_git_repository(outside_git: Path) -> None:
    assert_one_line_error(invoke("stack", "HEAD~1..HEAD", "-C", outside_git, "-q"),
                          f"a commit range needs a git repository, and {outside_git} is not in one")


def test_nothing_is_surveyed_for_a_range_refused(tiny: Tiny, tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert_one_line_error(invoke("stack", "HEAD..HEAD", "-C", tiny.repo, "--store", store, "-q"),
                          "the range HEAD..HEAD holds no commit (HEAD is not ahead of HEAD along its first parents)")
    assert not store.exists()
    assert git(tiny.repo, "worktree", "list").count("\n") == 0  # the main worktree only


@pytest.mark.parametrize(("args", "error"), [
    ((), "Missing argument 'BASE..HEAD'."),
    (("a..b", "c"), "Got unexpected extra argument (c)"),
    (("a..b", "--format", "pdf"), "Invalid value for '--format': 'pdf' is not one of 'table', 'json', 'markdown', "
                                  "'html', 'csv'."),
])
def test_bad_arguments_are_usage_errors(args: tuple[str, ...], error: str) -> None:
    assert_usage_error(invoke("stack", *args), USAGE, error)


def test_each_step_says_the_first_compiler_stage_that_differs(tiny: Tiny, tiny_survey: dict[str, Any],
                                                              tmp_path: Path) -> None:
    """Real commits of the tiny project: three lines added above the kernel (every text the same once the
    locations are set aside: "identical from TTIR on"), then a change of its code (its TTIR differs); the
    launch that builds nothing has no stage."""
    clone = tiny.clone(tmp_path / "clone")
    ops = clone / "toykernels" / "ops.py"
    ops.write_text(ops.read_text().replace("@triton.jit\ndef scale_rows", "# three\n# more\n# lines\n@triton.jit\n"
                                           "def scale_rows", 1))
    commit_all(clone, "move the kernel")
    ops.write_text(ops.read_text().replace("(x * scale)", "(x * scale + 1.0)"))
    commit_all(clone, "change the kernel")
    store = tmp_path / "store"
    shutil.copytree(tiny.store, store)
    result = invoke("stack", "HEAD~2..HEAD", "-C", clone, "--store", store, "-q", "--format", "json")
    assert result.exit_code == 0, result.stderr
    steps = json.loads(result.stdout)["steps"]
    stages = [{r["key"]: r["first_difference"] for r in s["comparison"]["rows"]} for s in steps]
    assert stages == [{"scale/width2": "locations", "idle/width2": None},
                      {"scale/width2": "ttir", "idle/width2": None}]
    summaries = [[line["text"] for line in s["comparison"]["summary"]] for s in steps]
    assert "1 build: identical from TTIR on (only source locations differ)" in summaries[0]
    assert "1 build: the kernel's Triton IR changed (TTIR differs: registers +2)" in summaries[1]
