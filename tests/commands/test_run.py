"""``regsurvey run`` in this process: a real survey of the tiny project and its exit statuses (0, 1 with
--strict and a key that fails, 2 on bad input, in one line), and a damaged stored survey surveyed again."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.results import Row, Survey
from regsurvey.output.problems import only, problem_lines
from regsurvey.output.table import summary_line

from ..conftest import git, reseal
from ..problem_survey import ProblemSurvey, problem_survey
from .conftest import Tiny
from .runner import NO_KEY_MATCHES, UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke, unwrapped

USAGE = "Usage: regsurvey run [OPTIONS]"


def test_a_survey_of_the_tiny_project(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    data = tiny_survey["data"]
    assert (data["commit"], data["targets"], data["dirty"]) == (tiny.sha, ["sm90"], False)
    rows = {r["key"]: r for r in data["rows"]}
    assert [(k, r["status"], r["kernel"]) for k, r in rows.items()] == [
        ("scale/width2", "ok", "scale_rows"), ("idle/width2", "error", None)]
    assert rows["scale/width2"]["resources"]["regs"] > 0
    assert rows["idle/width2"]["error"].endswith("launched no kernel")
    # Stored per commit and target, with the object the row names.
    stored = Survey.from_json((tiny.store / "surveys" / tiny.sha / "sm90.json").read_text())
    assert [(r.key, r.status.value) for r in stored.rows] == [("scale/width2", "ok"), ("idle/width2", "error")]
    assert (tiny.store / rows["scale/width2"]["object"]["path"]).is_file()


def test_the_table_reuses_the_stored_survey_and_strict_exits_1(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    table = invoke("run", *tiny.survey_args())
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.strip().splitlines()
    summary = next(i for i, line in enumerate(lines) if line.startswith("2 keys on sm90: 2 builds (1 ok, 1 failed);"))
    tail = unwrapped(lines[summary:])  # (a line past the table's width, 120 columns here, wraps)
    # The stored survey itself: made when the JSON survey was.
    assert tail[1].startswith(f"made {tiny_survey['data']['created']} on ")
    idle = Row.from_dict(tiny_survey["data"]["rows"][1])
    assert tail[2:4] == ["spills: none", f"failures: 1 build: idle/width2 on sm90 (error: {idle.error_line})"]
    assert tail[-1] == "(--only problems shows only these builds)"
    strict = invoke("run", *tiny.survey_args(), "--strict")
    assert (strict.exit_code, strict.stdout) == (1, table.stdout)


def test_strict_passes_when_every_selected_key_builds(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    result = invoke("run", *tiny.survey_args(), "--strict", "--kind", "scale", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert [(r["key"], r["status"]) for r in json.loads(result.stdout)["rows"]] == [("scale/width2", "ok")]


def test_force_compiles_past_tritons_own_cache(tiny: Tiny, tmp_path: Path) -> None:
    # Issue #30 item 14: --force took every kernel from Triton's cache (no compile: --timeout 1 never fired).
    # Under --force Triton compiles each kernel again and writes it into its cache anew (a new file).
    cache = tmp_path / "triton-cache"
    args = ("run", "-C", tiny.repo, "--store", tmp_path / "store", "-q", "--format", "json", "--force")
    first = invoke(*args, env={"TRITON_CACHE_DIR": str(cache)})
    assert first.exit_code == 0, first.stderr
    cubins = {path: path.stat().st_ino for path in cache.rglob("*.cubin")}
    assert len(cubins) == 1  # scale's kernel, on sm90
    again = invoke(*args, env={"TRITON_CACHE_DIR": str(cache)})
    assert again.exit_code == 0, again.stderr
    assert all(path.stat().st_ino != inode for path, inode in cubins.items())
    rows = [json.loads(out.stdout)["rows"][0] for out in (first, again)]
    assert [(r["key"], r["reused"]) for r in rows] == [("scale/width2", False)] * 2
    assert rows[0]["resources"] == rows[1]["resources"] and rows[1]["compile_s"] > 0


@pytest.mark.parametrize(("args", "message"), [
    (("--target", "gfx999"), UNKNOWN_TARGET),
    (("--target", "sm90,gfx999"), UNKNOWN_TARGET),
    (("--commit", "no-such-rev"), "unknown revision 'no-such-rev' in {repo}"),
    (("--commit", "HEAD~1"), "unknown revision 'HEAD~1' in {repo}"),  # a one-commit repository
    (("--kind", "no_such_kind"), NO_KEY_MATCHES),
    (("--key", "scale/width3"), NO_KEY_MATCHES),
])
def test_bad_input_is_one_line(tiny: Tiny, tiny_survey: dict[str, Any], args: tuple[str, ...], message: str) -> None:
    assert_one_line_error(invoke("run", *tiny.survey_args(), *args), message.format(repo=tiny.repo))


def test_an_unknown_kind_in_a_commit_leaves_no_worktree(tiny: Tiny) -> None:
    result = invoke("run", *tiny.survey_args(), "--commit", "HEAD", "--kind", "no_such_kind")
    assert_one_line_error(result, NO_KEY_MATCHES)
    (main,) = git(tiny.repo, "worktree", "list", "--porcelain").split("\n\n")  # the main worktree only
    assert main.startswith(f"worktree {tiny.repo}\n")


def test_a_bad_finishing_mode_is_one_line(tiny: Tiny) -> None:
    # --kind: a selection is always surveyed (never taken from the store), so the variable is read.
    result = invoke("run", *tiny.survey_args(), "--kind", "scale", env={"REGSURVEY_FINISH": "later"})
    assert_one_line_error(result, "REGSURVEY_FINISH='later': expected one of process, thread")


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("REGSURVEY_SERVER", "sometimes", "REGSURVEY_SERVER='sometimes': expected one of auto, use, off"),
    ("REGSURVEY_WORKER_START", "fork", "REGSURVEY_WORKER_START='fork': expected one of server, forkserver, spawn"),
])
def test_a_bad_worker_start_variable_is_one_line(tiny: Tiny, variable: str, value: str, message: str) -> None:
    """A smoke test in a fresh interpreter: how workers start is decided once per process (cached), so in
    this one, after the first survey, the variable would no longer be read."""
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", *tiny.survey_args(), "--kind", "scale"],
                         capture_output=True, text=True, timeout=120, env={**os.environ, variable: value})
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"regsurvey: error: {message}\n")


def test_a_keys_file_that_raises_names_file_and_line(outside_git: Path) -> None:
    (outside_git / "keys").mkdir()
    (outside_git / "keys" / "broken.py").write_text("import regsurvey as rs\n\nx = 1 / 0\n")
    result = invoke("run", "-q", "-C", outside_git, "--store", outside_git.parent / "store")
    assert_one_line_error(result, "keys file keys/broken.py:3 raised ZeroDivisionError: division by zero")


def test_no_keys_directory(outside_git: Path) -> None:
    result = invoke("run", "-q", "-C", outside_git, "--store", outside_git.parent / "store")
    assert_one_line_error(result, f"no keys/ directory in working tree ({outside_git}): nothing to survey")


def test_a_commit_needs_a_git_repository(outside_git: Path) -> None:
    result = invoke("run", "-q", "-C", outside_git, "--commit", "HEAD")
    assert_one_line_error(result, f"'HEAD' names a git revision, and {outside_git} is not in a git repository")


@pytest.mark.parametrize(("args", "error"), [
    (("--format", "xml"), "Invalid value for '--format': 'xml' is not one of 'table', 'json', 'csv'."),
    (("--timeout", "0"), "Invalid value for '--timeout': 0.0 is not in the range x>=1."),
    (("--verbose",), "No such option '--verbose'."),
    (("extra",), "Got unexpected extra argument (extra)"),
])
def test_bad_arguments_are_usage_errors(args: tuple[str, ...], error: str) -> None:
    assert_usage_error(invoke("run", *args), USAGE, error)


def test_a_missing_repository_directory_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert_usage_error(invoke("run", "-C", missing), USAGE,
                       f"Invalid value for '-C' / '--repo': Directory '{missing}' does not exist.")


@pytest.mark.parametrize(("damage", "problem"), [
    (lambda text: text[: len(text) // 2], "not JSON ("),
    (lambda text: json.dumps({**json.loads(text), "schema_version": 99}), "schema version 99 (this regsurvey reads "),
], ids=["truncated", "future-schema"])
def test_a_damaged_stored_survey_is_reported_and_surveyed_again(tiny: Tiny, tiny_survey: dict[str, Any],
                                                                tmp_path: Path, damage: Any, problem: str) -> None:
    store = tmp_path / "store"
    shutil.copytree(tiny.store, store)
    stored = store / "surveys" / tiny.sha / "sm90.json"
    stored.write_text(damage(stored.read_text()))
    reseal(stored)  # damaged, with its checksum recomputed: what the survey's own reading finds
    result = invoke("run", "-C", tiny.repo, "--store", store, "-q", "--format", "json")
    assert result.exit_code == 0, result.stderr
    warning = result.stderr.removesuffix("\n")
    assert warning.startswith(f"regsurvey: surveying the working tree again: stored survey {stored} is unusable: "
                              f"{problem}")
    assert "\n" not in warning
    survey = json.loads(result.stdout)
    assert [(r["key"], r["status"]) for r in survey["rows"]] == [("scale/width2", "ok"), ("idle/width2", "error")]
    assert survey["created"] != tiny_survey["data"]["created"]  # surveyed now, not read back
    # ... and stored again, whole.
    assert [r.key for r in Survey.from_json(stored.read_text()).rows] == ["scale/width2", "idle/width2"]


def test_a_keys_file_that_hangs_at_import_is_given_up_on(toy_repo: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue #12, defect 10: the import of the keys files has its own limit (not --timeout, 600 s by
    # default, meant for one key's compile), shortened here.
    from regsurvey.engine import survey

    monkeypatch.setattr(survey, "IMPORT_TIMEOUT_S", 8.0)
    (toy_repo / "keys" / "hangs.py").write_text("import time\n\ntime.sleep(600)\n")
    result = invoke("run", "-q", "-C", toy_repo, "--target", "sm90", "--store", tmp_path / "store")
    assert_one_line_error(result, "the keys files did not finish importing within 8 s: a keys file, or what it "
                                  "imports, hangs")


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_signing_key_too_short_is_one_line(tiny: Tiny, command: str) -> None:
    # Refused before anything is surveyed: a key anyone could guess would sign nothing.
    args = ("--base", "HEAD") if command == "check" else ()
    result = invoke(command, *tiny.survey_args(), *args, env={"REGSURVEY_CACHE_KEY": "secret"})
    assert_one_line_error(result, "REGSURVEY_CACHE_KEY holds 6 characters; a signing key needs at least 32 (e.g. "
                                  "the output of `openssl rand -hex 32`)")


# ---- progress on stderr, and what run ends with ------------------------------------------------------------

def test_progress_lines_outside_a_terminal(tiny: Tiny, tmp_path: Path) -> None:
    # Issue #33: outside a terminal nothing was printed until the table. A store of its own: surveyed now.
    result = invoke("run", "-C", tiny.repo, "--store", tmp_path / "store", "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = [Row.from_dict(r) for r in json.loads(result.stdout)["rows"]]
    assert "\r" not in result.stderr and "\x1b" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "regsurvey: surveying working tree"
    assert all(line.startswith("regsurvey: working tree: ") for line in lines[1:]), lines
    listed = next(i for i, line in enumerate(lines) if " to survey; " in line)
    assert lines[listed].startswith("regsurvey: working tree: 2 keys to survey; ")
    compiled = sum(r.ok and not r.reused for r in rows)
    assert (compiled, sum(r.failed for r in rows)) == (1, 1)  # scale built, idle launched nothing
    assert re.fullmatch(r"regsurvey: working tree: 2/2 keys, 1 build compiled, 0 reused, 1 failed; done in \d+s",
                        lines[-1]), lines[-1]
    for line in lines[listed + 1:-1]:  # between: keys done of 2
        assert re.fullmatch(r"regsurvey: working tree: 1/2 keys, .* elapsed(, about \S+ left)?", line), line


def test_quiet_prints_no_progress(tiny: Tiny) -> None:
    # A selection is surveyed each time (never taken from the store): both runs survey the one key.
    loud = invoke("run", "-C", tiny.repo, "--store", tiny.store, "--kind", "scale")
    quiet = invoke("run", "-C", tiny.repo, "--store", tiny.store, "--kind", "scale", "-q")
    assert (loud.exit_code, quiet.exit_code) == (0, 0), loud.stderr
    assert loud.stderr.splitlines()[-1].startswith("regsurvey: working tree: 1/1 key, ")
    assert quiet.stderr == ""
    assert any(line.startswith("1 key on sm90: 1 build (1 ok, 0 failed); VGPR spills in 0 builds")
               for line in quiet.stdout.splitlines())


@pytest.fixture(scope="module")
def problems(tmp_path_factory: pytest.TempPathFactory) -> ProblemSurvey:
    return problem_survey(tmp_path_factory.mktemp("problems"))


def test_run_ends_with_what_spills_fails_and_runs_lowest(problems: ProblemSurvey) -> None:
    result = invoke("run", "-C", problems.repo, "--store", problems.store, "-q")  # the stored survey
    assert result.exit_code == 0, result.stderr
    survey = problems.survey
    lines = result.stdout.splitlines()
    # (a line past the table's width, 120 columns here, wraps)
    lines = unwrapped(lines[next(i for i, line in enumerate(lines) if line.startswith(summary_line(survey)[:40])):])
    # The summary line, the timing line, then (tests/output/test_problems.py checks them against the figures read
    # without regsurvey) what spills, what fails, each target's lowest occupancy, and how to see only those.
    assert lines[0] == summary_line(survey)
    assert lines[1].startswith("made ")
    assert lines[2:] == [*problem_lines(survey), "(--only problems shows only these builds)"]
    assert lines[2].startswith("spills: 2 builds: capped/n4 spill_kernel on gfx950 (") and "; " in lines[2]
    assert lines[3].startswith("failures: 2 builds: broken/n4 peak_kernel on gfx950 (error: ")


@pytest.mark.parametrize("which", ["problems", "spills", "failures", "low-occupancy"])
def test_only_shows_the_builds_asked_for(problems: ProblemSurvey, which: str) -> None:
    args = ("run", "-C", problems.repo, "--store", problems.store, "-q", "--only", which)
    data = json.loads(invoke(*args, "--format", "json").stdout)
    expected = only(problems.survey, which).rows
    assert [(r["target"], r["key"]) for r in data["rows"]] == [(r.target, r.key) for r in expected]
    assert expected and len(expected) < len(problems.survey.rows)
    table = invoke(*args)
    assert table.exit_code == 0, table.stderr
    rows = [line.split() for line in table.stdout.splitlines() if not line.startswith(" ")]
    shown = {row[0] for row in rows if len(row) > 1 and row[1] in problems.survey.targets}  # key, target, ...
    assert shown == {r.key for r in expected}
    # The summary still counts every build; the last line says how many are shown.
    assert summary_line(problems.survey) in unwrapped(table.stdout.splitlines())
    assert table.stdout.splitlines()[-1] == f"--only {which}: {len(expected)} of 6 builds shown"


def test_strict_judges_every_build_whatever_only_shows(problems: ProblemSurvey) -> None:
    strict = invoke("run", "-C", problems.repo, "--store", problems.store, "-q", "--only", "spills", "--strict")
    assert strict.exit_code == 1 and "error: " not in strict.stdout.split("spills: ")[0]
