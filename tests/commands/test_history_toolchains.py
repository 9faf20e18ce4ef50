"""``regsurvey history --toolchains A,B[,C] [REV]`` (issue 35, item 5): one revision surveyed under each
toolchain in turn, drawn as a history whose points are toolchains, each step the comparison ``upgrade`` makes
of the two (judged across the toolchains, with each build's first differing compiler stage). Real surveys of
four builds under Triton 3.6 (REGSURVEY_OTHER_TOOLCHAIN, as tests/commands/test_upgrade.py) and this
environment's, in the store the upgrade tests share; a third Triton where REGSURVEY_THIRD_TOOLCHAIN names
one. Bad input that needs no other environment is tested without one."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import triton

from regsurvey.model.comparison import ToolchainChange
from regsurvey.model.figures import AMD, NVIDIA, figure
from regsurvey.model.results import Survey
from regsurvey.model.targets import get_target

from .runner import assert_one_line_error, assert_usage_error, invoke

DRAWN = ("vgpr", "vgpr_spill", "sgpr", "occupancy", "regs", "spill_store_bytes", "occupancy_warps")


def triton_of(python: str) -> str:
    return subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


def survey_of(common: tuple[Any, ...], *toolchain: str) -> Survey:
    """The stored survey of the project under ``toolchain`` (``--toolchain PATH``, or none: this one's)."""
    run = invoke("run", *common, *toolchain, "--format", "json")
    assert run.exit_code == 0 and "surveying" not in run.stderr, run.stderr  # the history's, reused
    return Survey.from_json(run.stdout)


def spread(survey: Survey, kind: str, target: str, name: str) -> tuple[int | None, int | None]:
    values = [r.resources[name] for r in survey.rows if (r.kind, r.target) == (kind, target) and r.ok
              and name in r.resources]
    return max(values, default=None), min(values, default=None)


def assert_points_are_the_surveys(data: dict[str, Any], surveys: list[Survey]) -> None:
    """Each series' point at each toolchain: the largest and smallest value over the kind's builds in that
    toolchain's own survey."""
    assert data["series"]
    for series in data["series"]:
        for point, survey in zip(series["points"], surveys, strict=True):
            assert (point["max"], point["min"]) == spread(survey, series["kind"], series["target"], series["figure"])


@pytest.fixture(scope="module")
def across(other_python: str, upgrade_project: tuple[Path, Path]) -> dict[str, Any]:
    """``history --toolchains OTHER,current --format json`` of the project and ``upgrade --from OTHER``'s
    comparison (which reuses its surveys), with each toolchain's survey."""
    repo, store = upgrade_project
    common = ("-C", repo, "--store", store, "-q")
    result = invoke("history", "--toolchains", f"{other_python},current", *common, "--figure", ",".join(DRAWN),
                    "--format", "json")
    assert result.exit_code == 0, result.stderr
    upgrade = invoke("upgrade", "--from", other_python, *common, "--format", "json")
    assert upgrade.exit_code == 0 and "surveying" not in upgrade.stderr, upgrade.stderr
    return {"data": json.loads(result.stdout), "upgrade": json.loads(upgrade.stdout), "common": common,
            "python": other_python, "old": triton_of(other_python), "repo": repo,
            "surveys": [survey_of(common, "--toolchain", other_python), survey_of(common)]}


def test_each_point_is_a_toolchain_and_each_step_is_the_upgrade(across: dict[str, Any]) -> None:
    data, upgrade, old, new = across["data"], across["upgrade"], across["old"], triton.__version__
    assert (data["spec"], data["across_toolchains"]) == ("working tree", True)
    first, second = data["commits"]
    assert [(c["toolchain"], c["python"], c["subject"]) for c in data["commits"]] == [
        (f"triton {old}", across["python"], across["python"]), (f"triton {new}", None, "this environment")]
    assert first["sha"] == second["sha"] == upgrade["head"]["commit"]
    # The step is upgrade's comparison: its marks, its toolchain changes, its sentences (the stage ones apart).
    assert second["counts"] == {mark: n for mark, n in upgrade["counts"].items() if n}
    assert "not comparable" not in second["counts"]
    assert second["toolchain_changes"] == [ToolchainChange(**c).describe("->") for c in upgrade["toolchain_changes"]]
    assert f"hip triton: {old} -> {new}" in second["toolchain_changes"]
    said = [line["text"] for line in upgrade["summary"]]
    assert second["stages"] and all(line in said for line in second["stages"])  # first differing stages known
    assert sorted(second["summary"] + second["stages"]) == sorted(said)
    assert {r["first_difference"] for r in upgrade["rows"]} - {None}  # (what the stage sentences come from)
    assert_points_are_the_surveys(data, across["surveys"])
    # Each figure drawn for the targets of its vendor, every kind on every target.
    drawn = {(s["kind"], s["target"], s["figure"]) for s in data["series"]}
    assert drawn == {(kind, target, name) for kind in ("gemm", "scale") for target in ("gfx950", "sm90")
                     for name in DRAWN if figure(name).vendor == (AMD if get_target(target).is_amd else NVIDIA)}


@pytest.mark.parametrize("fmt", ["html", "markdown", "csv"])
def test_every_format_of_a_history_draws_the_toolchains(fmt: str, across: dict[str, Any], tmp_path: Path) -> None:
    old, new, repo = across["old"], triton.__version__, across["repo"]
    out = None if fmt == "html" else tmp_path / f"history.{fmt}"
    result = invoke("history", "--toolchains", f"{across['python']},current", *across["common"], "--format", fmt,
                    *(("-o", out) if out else ()))
    assert result.exit_code == 0, result.stderr
    if out is None:  # the page, under reports/ by default, named for the revision and each Triton
        out = repo / "reports" / f"worktree.triton_{old}..triton_{new}.history.html"
    assert result.stdout == f"wrote {out}\n" and "surveying" not in result.stderr  # both surveys stored
    text = out.read_text()
    step = across["data"]["commits"][1]
    if fmt == "html":
        assert "<title>Registers of working tree over 2 toolchains</title>" in text
        moved = any(m != "unchanged" for m in step["counts"])
        assert ("<div id=verdict class='verdict" in text
                and ("1 of 1 toolchains changed builds" if moved else "Nothing changed") in text)
        assert "<tr id='t-1'" in text and f"<li>toolchain differs: hip triton: {old} → {new}</li>" in text
    elif fmt == "markdown":
        assert text.startswith("### Registers of `working tree` over 2 toolchains\n")
        assert f"- triton {old} → triton {new}: " in text
        assert f"  - toolchain differs: hip triton: {old} → {new}\n" in text
    else:
        rows = list(csv.DictReader(io.StringIO(text)))
        assert [(r["toolchain"], r["python"]) for r in rows] == (
            [(f"triton {old}", across["python"])] * 4 + [(f"triton {new}", "")] * 4)  # 2 kinds on 2 targets each


def test_a_third_toolchain_is_a_third_point(across: dict[str, Any], third_python: str) -> None:
    """OTHER, THIRD and this environment's: each step against the one before, each point its own survey."""
    old, third, new = across["old"], triton_of(third_python), triton.__version__
    assert len({old, third, new}) == 3, (old, third, new)
    result = invoke("history", "--toolchains", across["python"], "--toolchains", f"{third_python},current",
                    *across["common"], "--figure", ",".join(DRAWN), "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [c["toolchain"] for c in data["commits"]] == [f"triton {old}", f"triton {third}", f"triton {new}"]
    assert f"hip triton: {old} -> {third}" in data["commits"][1]["toolchain_changes"]
    assert f"hip triton: {third} -> {new}" in data["commits"][2]["toolchain_changes"]
    # Before 3.9 each Triton compiles AMD code with the LLVM in its libtriton, named by its llvm-project commit:
    # the step between two such releases says the LLVM moved, and no step says None or unknown.
    llvm = [c for c in data["commits"][1]["toolchain_changes"] if c.startswith("hip amd_codegen_revision: ")]
    assert len(llvm) == 1 and re.fullmatch(r"hip amd_codegen_revision: [0-9a-f]{40} -> [0-9a-f]{40}(-\d+)?",
                                           llvm[0]), data["commits"][1]["toolchain_changes"]
    said = [c for point in data["commits"] for c in point["toolchain_changes"]]
    assert not [c for c in said if "None" in c or "unknown" in c], said
    surveys = [across["surveys"][0], survey_of(across["common"], "--toolchain", third_python), across["surveys"][1]]
    assert_points_are_the_surveys(data, surveys)


def test_bad_input_with_another_toolchain_is_one_line(across: dict[str, Any], tmp_path: Path) -> None:
    common, python = across["common"], across["python"]
    venv = Path(python).parent.parent  # the same environment by its directory
    assert_one_line_error(invoke("history", "--toolchains", f"{python},current,{venv}", *common),
                          f"--toolchains: {python} and {venv} are the same toolchain ({python}) given twice: name "
                          "each toolchain once")
    survey_file = tmp_path / "survey.json"
    survey_file.write_text(across["surveys"][0].to_json())
    assert_one_line_error(invoke("history", "--toolchains", f"{python},current", str(survey_file), *common),
                          f"{survey_file} is a survey file: history --toolchains surveys a revision under both "
                          "toolchains (a git revision, or none for the working tree); diff --across-toolchains "
                          "compares two files")
    assert_one_line_error(invoke("history", "--toolchains", f"{python},current", "no-such-rev", *common),
                          f"unknown revision 'no-such-rev' in {across['repo']}")
    assert_one_line_error(invoke("history", "--toolchains", f"current,{tmp_path / 'nope'}", *common),
                          f"--toolchains {tmp_path / 'nope'}: no such file or directory")


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    """What needs no other environment: checked before anything is surveyed."""
    common = ("-C", tmp_path, "-q")
    assert_one_line_error(invoke("history", "--toolchains", "current", *common),
                          "--toolchains needs two toolchains or more to compare, got 1 (current); upgrade --from A "
                          "compares one with this environment's")
    assert_one_line_error(invoke("history", "--toolchains", "current,current", *common),
                          "--toolchains: current is the same toolchain (this environment) given twice: name each "
                          "toolchain once")
    assert_one_line_error(invoke("history", "--toolchains", f"current,{sys.executable}", *common),
                          f"--toolchains: current and {sys.executable} are the same toolchain (this environment) "
                          "given twice: name each toolchain once")
    assert_one_line_error(invoke("history", "--toolchains", "a,b", "HEAD~3..HEAD", *common),
                          "--toolchains surveys one revision under each toolchain, not the range HEAD~3..HEAD (a "
                          "history over commits takes no --toolchains; --toolchain surveys a range with another "
                          "toolchain)")
    assert_one_line_error(invoke("history", "--toolchains", "a,b", "--every", "2", *common),
                          "--every samples commits of a range: a history across --toolchains surveys one revision "
                          "under each")
    assert_one_line_error(invoke("history", "--toolchains", "a,b", "--toolchain", "a", *common),
                          "--toolchain and --toolchains: name every toolchain in --toolchains ('current' for this "
                          "environment's)")
    assert_usage_error(invoke("history", *common), "Usage: regsurvey history [OPTIONS] A..B|REV",
                       "Missing argument 'A..B'.")
