"""``regsurvey check`` in this process: the gate passing (0) on the tiny project's stored surveys, failing
(1) on a survey file with spills, a baseline written by --update-baseline; and bad input in one line (2):
baseline files missing, unreadable or wrong, options that go together, unknown revisions and targets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import Tiny
from .runner import UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke

USAGE = "Usage: regsurvey check [OPTIONS]"
SPILLS = ("- scale/width2 on sm90 (scale_rows): spill stores 0 → 72 B, spill loads 0 → 72 B; "
          "no baseline entry allows it")


@pytest.fixture
def spilling(tiny_survey_file: Path, tmp_path: Path) -> Path:
    """The tiny survey with its one build spilling 72 bytes each way, as a survey file."""
    data = json.loads(tiny_survey_file.read_text())
    data["rows"][0]["resources"].update(spill_store_bytes=72, spill_load_bytes=72)
    path = tmp_path / "spilling.json"
    path.write_text(json.dumps(data))
    return path


def test_the_gate_passes_on_the_stored_surveys(tiny: Tiny, tiny_survey: dict[str, Any], tmp_path: Path) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    sarif = tmp_path / "out" / "check.sarif"
    result = invoke("check", "--base", "HEAD", *tiny.survey_args(), "--sarif", sarif,
                    env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert (result.exit_code, result.stderr) == (0, ""), result.stderr
    assert result.stdout.startswith("### regsurvey check passed: ")
    assert "- 1 of 2 builds unchanged\n" in result.stdout
    assert summary.read_text() == "earlier step\n" + result.stdout + "\n"
    (run,) = json.loads(sarif.read_text())["runs"]
    assert run["tool"]["driver"]["name"] == "regsurvey" and run["results"] == []


def test_spills_fail_the_gate_until_a_baseline_allows_them(tiny: Tiny, tiny_survey_file: Path, spilling: Path,
                                                           tmp_path: Path) -> None:
    files = ("--base", tiny_survey_file, "--head", spilling, "-C", tiny.repo, "-q")
    failed = invoke("check", *files)
    assert failed.exit_code == 1, failed.stderr
    lines = failed.stdout.splitlines()
    assert lines[0].startswith("### regsurvey check failed, 1 problem: ")
    assert lines[2:4] == ["**spill increase** (`regsurvey/new-spill`)", SPILLS]
    # --update-baseline writes the entry that allows them (a new file), and judges again with it.
    baseline = tmp_path / "accepted.toml"
    updated = invoke("check", *files, "--baseline", baseline, "--update-baseline", "--reason", "a test's spills")
    assert updated.exit_code == 0, updated.stderr
    assert updated.stderr == f"regsurvey: {baseline}: allowed the figures of 1 build (created)\n"
    assert ('[[allow]]\nkey = "scale/width2"\ntarget = "sm90"\nspill_store_bytes = 72\nspill_load_bytes = 72\n'
            'reason = "a test\'s spills"\n') in baseline.read_text()
    again = invoke("check", *files, "--baseline", baseline)
    assert again.exit_code == 0, again.stderr
    assert again.stdout.startswith("### regsurvey check passed: ") and "**allowed by the baseline**" in again.stdout
    # A placeholder reason is no reason.
    placeholder = invoke("check", *files, "--baseline", tmp_path / "other.toml", "--update-baseline",
                         "--reason", "TODO")
    assert_one_line_error(placeholder, '--reason "TODO" is a placeholder: say why these figures are acceptable')
    assert not (tmp_path / "other.toml").exists()


@pytest.mark.parametrize(("text", "problem"), [
    ("[[allow]\n", None),  # "not valid TOML (...)", in the words of the TOML reader
    ("[allowed]\n", "unknown table or key 'allowed' (a baseline holds [check] and [[allow]] entries)"),
    ('[[allow]]\nkey = "scale/*"\nspill_store_bytes = 80\n',
     '[[allow]] entry 1 (key "scale/*"): no reason: say why these figures are acceptable'),
    ('[[allow]]\nkey = "scale/*"\nreason = "fine"\n',
     '[[allow]] entry 1 (key "scale/*"): allows no figure (name one, e.g. vgpr_spill = 64)'),
    ('[[allow]]\nkey = "scale/*"\nreason = "fine"\nspills = 3\n',
     '[[allow]] entry 1 (key "scale/*"): unknown figure \'spills\' (figures: '),
    ("[check]\nregister_increase = -1\n",
     "[check]: register_increase must be a non-negative integer (registers a build may gain), not -1"),
])
def test_a_baseline_the_gate_cannot_use_is_one_line(tiny: Tiny, tmp_path: Path, text: str,
                                                     problem: str | None) -> None:
    baseline = tmp_path / "baseline.toml"
    baseline.write_text(text)
    result = invoke("check", "--base", "no-such-rev", "--baseline", baseline, *tiny.survey_args())
    # Judged before any revision is looked at (this one is unknown).
    if problem is None:
        assert result.exit_code == 2 and result.stderr.count("\n") == 1
        assert result.stderr.startswith(f"regsurvey: error: {baseline}: not valid TOML (")
    elif problem.endswith("(figures: "):  # the figure registry's names follow
        assert result.exit_code == 2 and result.stderr.count("\n") == 1
        assert result.stderr.startswith(f"regsurvey: error: {baseline}: {problem}")
        assert "spill_store_bytes" in result.stderr
    else:
        assert_one_line_error(result, f"{baseline}: {problem}")


def test_a_missing_or_unreadable_baseline_is_one_line(tiny: Tiny, tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    assert_one_line_error(invoke("check", "--base", "HEAD", "--baseline", missing, *tiny.survey_args()),
                          f"{missing}: no such baseline file")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    result = invoke("check", "--base", "HEAD", "--baseline", binary, *tiny.survey_args())
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"regsurvey: error: {binary}: unreadable (")


def test_the_default_baseline_at_the_repository_root_is_read(tiny: Tiny, tmp_path: Path) -> None:
    clone = tiny.clone(tmp_path / "clone")
    (clone / "regsurvey.baseline.toml").write_text("[check]\nspill_increase = 1\n")
    result = invoke("check", "--base", "HEAD", "-C", clone / "keys", "--store", tiny.store, "-q")
    assert_one_line_error(result, f"{clone.resolve() / 'regsurvey.baseline.toml'}: [check]: spill_increase "
                                  "must be true or false, not 1")


@pytest.mark.parametrize(("args", "message"), [
    (("--base", "no-such-rev"), "unknown revision 'no-such-rev' in {repo}"),
    (("--base", "HEAD", "--head", "no-such-rev"), "unknown revision 'no-such-rev' in {repo}"),
    (("--base", "HEAD", "--target", "gfx999"), UNKNOWN_TARGET),
    (("--base", "HEAD", "--update-baseline"), "--update-baseline needs --reason TEXT: why the new figures are "
                                              "acceptable"),
    (("--base", "HEAD", "--reason", "why"), "--reason goes with --update-baseline"),
])
def test_bad_input_is_one_line(tiny: Tiny, tiny_survey: dict[str, Any], args: tuple[str, ...], message: str) -> None:
    assert_one_line_error(invoke("check", *args, *tiny.survey_args()), message.format(repo=tiny.repo))


def test_a_placeholder_reason_is_refused_before_any_survey(tiny: Tiny, tmp_path: Path) -> None:
    # Issue #12: it was refused only once both revisions had been surveyed, minutes later on a real project.
    store = tmp_path / "empty-store"
    result = invoke("check", "--base", "HEAD", "--update-baseline", "--reason", "fixme later", "-C", tiny.repo,
                    "--store", store, "-q")
    assert_one_line_error(result, '--reason "fixme later" is a placeholder: say why these figures are acceptable')
    assert not store.exists()  # nothing was surveyed, not even the store made


def test_outside_git_a_revision_is_one_line(outside_git: Path) -> None:
    result = invoke("check", "--base", "HEAD", "-C", outside_git, "-q")
    assert result.exit_code == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert result.stderr.endswith(f"'HEAD' names a git revision, and {outside_git} is not in a git repository\n")


def test_outside_git_the_error_names_what_was_given(outside_git: Path) -> None:
    result = invoke("check", "--base", "HEAD", "-C", outside_git, "-q")
    assert result.exit_code == 2 and "--commit" not in result.stderr, result.stderr


@pytest.mark.parametrize(("args", "error"), [
    ((), "Missing option '--base'."),
    (("--base",), "Option '--base' requires an argument."),
])
def test_bad_arguments_are_usage_errors(args: tuple[str, ...], error: str) -> None:
    result = invoke("check", *args)
    if args:  # click says only the error here
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"Error: {error}\n")
    else:
        assert_usage_error(result, USAGE, error)


def test_a_directory_as_baseline_is_a_usage_error(tmp_path: Path) -> None:
    assert_usage_error(invoke("check", "--base", "HEAD", "--baseline", tmp_path), USAGE,
                       f"Invalid value for '--baseline': File '{tmp_path}' is a directory.")
