"""``regsurvey upgrade``: one revision surveyed with another environment's Triton and with this one's, compared
as ``diff`` compares two commits (the same comparison as ``diff --across-toolchains`` of the two surveys, in
every format of a comparison); a plain diff of the two still says "not comparable"; ``check
--base-toolchain`` gates it. Real surveys of four builds under each toolchain (REGSURVEY_OTHER_TOOLCHAIN:
CI's Triton 3.6 venv), made once for the module."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import triton
from elftools.elf.elffile import ELFFile

from regsurvey.check.baseline import load_baseline
from regsurvey.check.gate import judge
from regsurvey.diff.core import compare
from regsurvey.model.comparison import Comparison
from regsurvey.model.results import Survey
from regsurvey.output.formats import format_names

from .runner import assert_one_line_error, assert_usage_error, invoke


@pytest.fixture(scope="module")
def upgraded(other_python: str, upgrade_project: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory,
             ) -> dict[str, Any]:
    """``upgrade --from OTHER --format json`` of the project, and each toolchain's survey as a file (``run
    --format json``, with and without ``--toolchain``: the surveys the upgrade stored)."""
    repo, store = upgrade_project
    common = ("-C", repo, "--store", store, "-q")
    result = invoke("upgrade", "--from", other_python, *common, "--format", "json")
    assert result.exit_code == 0, result.stderr
    files = tmp_path_factory.mktemp("surveys")
    for name, toolchain in (("old", ("--toolchain", other_python)), ("new", ())):
        run = invoke("run", *common, *toolchain, "--format", "json")
        assert run.exit_code == 0 and "surveying" not in run.stderr, run.stderr  # the upgrade's, reused
        (files / f"{name}.json").write_text(run.stdout)
    old = subprocess.run([other_python, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                         text=True, check=True).stdout.strip()
    assert old != triton.__version__
    return {"data": json.loads(result.stdout), "common": common, "python": other_python, "old": old,
            "files": files, "repo": repo}


def test_upgrade_names_both_tritons_and_judges_every_build(upgraded: dict[str, Any]) -> None:
    data, old, new = upgraded["data"], upgraded["old"], triton.__version__
    assert (data["base"]["label"], data["head"]["label"]) == (f"working tree with triton {old}",
                                                              f"working tree with triton {new}")
    assert data["base"]["commit"] == data["head"]["commit"] is not None
    assert data["across_toolchains"] is True
    changes = {(c["backend"], c["part"]): (c["before"], c["after"]) for c in data["toolchain_changes"]}
    assert changes[("hip", "triton")] == changes[("cuda", "triton")] == (old, new)
    assert data["base"]["toolchain"]["hip"]["triton"] == old and data["head"]["toolchain"]["hip"]["triton"] == new
    marks = {(r["key"], r["target"]): r["mark"] for r in data["rows"]}
    assert len(marks) == 4 and data["counts"]["not comparable"] == 0, marks
    assert all(r["note"] is None for r in data["rows"])  # no row says "not comparable", nor why
    # Each build's mark is what its figures say, as between two commits.
    for r in data["rows"]:
        verdicts = {f["verdict"] for f in r["figures"]}
        worse, better = "worse" in verdicts, "better" in verdicts
        assert r["mark"] == ("mixed" if worse and better else "worse" if worse else "better" if better
                             else "changed" if "changed" in verdicts else "unchanged"), r


def test_each_toolchain_names_its_amd_codegen_revision(upgraded: dict[str, Any]) -> None:
    """Triton 3.9's AMD codegen names its own revision; 3.6 to 3.8 build AMD code with the LLVM linked into
    libtriton, whose llvm-project commit is read from that library: the same commit its LLD writes into
    every hsaco it links (``.comment``: "Linker: LLD 22.0.0 (https://github.com/llvm/llvm-project f6ded0be...)"),
    a second reading from the objects. Neither side is unknown, and no report says None."""
    data = upgraded["data"]
    revisions = [data[side]["toolchain"]["hip"]["amd_codegen_revision"] for side in ("base", "head")]
    assert all(re.fullmatch(r"[0-9a-f]{40}(-\d+)?", str(r)) for r in revisions), revisions
    store = Path(upgraded["common"][upgraded["common"].index("--store") + 1])
    for side, revision in zip(("before", "after"), revisions):
        row = next(r[side] for r in data["rows"] if r["target"] == "gfx950" and r[side]["object"])
        with open(store / row["object"]["path"], "rb") as f:
            linker = ELFFile(f).get_section_by_name(".comment").data().decode()
        linked_by = re.search(r"Linker: LLD \S+ \(\S+ ([0-9a-f]{40})\)", linker)
        assert linked_by, linker
        if "-" not in revision:  # the LLVM in libtriton (before 3.9): its codegen compiled, its LLD linked
            assert linked_by[1] == revision, (side, linker, revision)
    change = next(c for c in data["toolchain_changes"] if c["part"] == "amd_codegen_revision")
    assert (change["before"], change["after"]) == tuple(revisions)
    table = invoke("upgrade", "--from", upgraded["python"], *upgraded["common"], "--columns", "200").stdout
    said = next(line for line in table.splitlines() if line.startswith("toolchain differs: hip amd_codegen_revision"))
    assert said == f"toolchain differs: hip amd_codegen_revision: {revisions[0]} → {revisions[1]}"
    assert "None" not in table


def test_the_old_toolchains_cubins_are_read_by_its_own_nvdisasm(upgraded: dict[str, Any]) -> None:
    """Each side's source-line pressure (``where``) is read by the nvdisasm of the toolchain that built its
    cubins: CUDA 13's computes no life ranges of a CUDA 12 ptxas' cubin (Triton 3.6's on sm90), which its
    own Triton's nvdisasm reads whole. Every sm90 build of the old side has its pressure kept."""
    from regsurvey.engine.other_toolchain import nvdisasm_of, probed
    from regsurvey.kept_pressure import is_kept
    from regsurvey.model.results import Row
    from regsurvey.objects.nvidia_object import tool_path
    from regsurvey.pressure.nvidia import nvidia_pressure
    from regsurvey.store.store import Store

    tool = nvdisasm_of(upgraded["python"])
    theirs = subprocess.run([upgraded["python"], "-c", "import os, triton; print(os.path.dirname(triton.__file__))"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert tool == os.path.join(theirs, "backends", "nvidia", "bin", "nvdisasm") != tool_path("nvdisasm")
    store = Store(Path(upgraded["common"][upgraded["common"].index("--store") + 1]))
    old = [Row.from_dict(r["before"]) for r in upgraded["data"]["rows"] if r["target"] == "sm90"]
    assert old and all(row.object is not None for row in old)
    for row in old:
        assert row.object is not None
        cubin, ptx = store.objects.get(row.object.path, row.object.sha256), store.objects.text(row.object.path, "ptx")
        assert nvidia_pressure(cubin, "sm90", ptx, tool).peaks["gpr"].live["gpr"] > 0
        ours = probed(upgraded["python"]).toolchain["cuda"]["ptxas"]["sm90"]
        if "cuda_12." in ours:  # this environment's CUDA 13 nvdisasm cannot, and says which can
            with pytest.raises(ValueError, match="the nvdisasm of the toolchain that built it"):
                nvidia_pressure(cubin, "sm90", ptx)
    # The upgrade kept the pressure of both sides of every sm90 build whose registers changed, and said where.
    changed = [r for r in upgraded["data"]["rows"] if r["target"] == "sm90"
               and any(f["name"] == "regs" and f["before"] != f["after"] for f in r["figures"])]
    assert changed and all(r["hot_lines"]["before"] and r["hot_lines"]["after"] for r in changed)
    assert all(is_kept(Row.from_dict(r[side]), store.objects) for r in changed for side in ("before", "after"))


def test_upgrade_is_the_diff_of_the_two_surveys_judged_across_toolchains(upgraded: dict[str, Any]) -> None:
    files = upgraded["files"]
    plain = invoke("diff", files / "old.json", files / "new.json", *upgraded["common"], "--format", "json")
    assert plain.exit_code == 0, plain.stderr
    not_judged = json.loads(plain.stdout)
    assert not_judged["across_toolchains"] is False
    assert {r["mark"] for r in not_judged["rows"]} == {"not comparable"}  # what a plain diff says, as before
    assert all(r["note"].startswith(("cuda ", "hip ")) for r in not_judged["rows"])
    judged = invoke("diff", files / "old.json", files / "new.json", *upgraded["common"], "--across-toolchains",
                    "--format", "json")
    assert judged.exit_code == 0, judged.stderr
    across, data = json.loads(judged.stdout), upgraded["data"]
    for part in ("toolchain_changes", "across_toolchains", "counts", "totals", "summary", "skipped"):
        assert across[part] == data[part], part
    assert across["rows"] == data["rows"]


@pytest.mark.parametrize("fmt", [f for f in format_names(Comparison) if f != "json"])
def test_every_format_of_a_comparison_renders_the_upgrade(fmt: str, upgraded: dict[str, Any],
                                                          tmp_path: Path) -> None:
    old, new, data = upgraded["old"], triton.__version__, upgraded["data"]
    out = tmp_path / f"upgrade.{fmt}"
    result = invoke("upgrade", "--from", upgraded["python"], *upgraded["common"], "--format", fmt, "-o", out,
                    "--columns", "200")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"wrote {out}\n" and "surveying" not in result.stderr  # both surveys stored
    text = out.read_text()
    sha = data["head"]["commit"][:10]
    if fmt == "markdown":
        assert text.startswith(f"### Registers: `working tree with triton {old}` ({sha}) → `working tree with "
                               f"triton {new}` ({sha})\n\n> toolchain differs: ")
        assert f"> toolchain differs: hip triton: {old} → {new}\n" in text
        assert "not comparable" not in text
    elif fmt == "table":
        assert text.startswith(f"working tree with triton {old} → working tree with triton {new}\n")
        assert f"toolchain differs: cuda triton: {old} → {new}\n" in text
        # At 80 columns a toolchain line too long for one (ptxas' build strings) wraps under itself.
        narrow = invoke("upgrade", "--from", upgraded["python"], *upgraded["common"], "--columns", "80").stdout
        said = narrow.splitlines()
        assert all(len(line) <= 80 for line in said)
        ptxas = next(i for i, line in enumerate(said) if line.startswith("toolchain differs: cuda ptxas: "))
        assert said[ptxas + 1].startswith("  ") and said[ptxas + 1].strip()
    elif fmt == "html":
        page = json.loads(text.split('<script id="report-data" type="application/json">')[1].split("</script>")[0])
        shown = page["comparisons"][0]
        assert f"hip triton: {old} → {new}" in shown["toolchain_changes"]
        assert shown["counts"] == data["counts"]
    elif fmt == "csv":
        assert len(text.splitlines()) == 1 + len(data["rows"])


def test_the_html_report_is_written_under_reports_by_default(upgraded: dict[str, Any]) -> None:
    result = invoke("upgrade", "--from", upgraded["python"], *upgraded["common"], "--format", "html")
    assert result.exit_code == 0, result.stderr
    path = upgraded["repo"] / "reports" / f"upgrade.worktree.triton_{upgraded['old']}..triton_{triton.__version__}.html"
    assert result.stdout == f"wrote {path}\n" and path.is_file()


def test_check_gates_the_upgrade_with_its_rules_and_baseline(upgraded: dict[str, Any]) -> None:
    """``check --base HEAD --base-toolchain OTHER``: the working tree with this Triton judged against HEAD
    with the other, by the gate's own rules (no baseline: the defaults) on the comparison across them."""
    files = upgraded["files"]
    comparison = compare(Survey.from_json((files / "old.json").read_text()),
                         Survey.from_json((files / "new.json").read_text()), across_toolchains=True)
    expected = judge(comparison, load_baseline(upgraded["repo"] / "no-baseline.toml", required=False))
    result = invoke("check", "--base", "HEAD", "--base-toolchain", upgraded["python"], *upgraded["common"])
    assert result.exit_code == (0 if expected.passed else 1), result.stderr
    old, new = upgraded["old"], triton.__version__
    sha = upgraded["data"]["head"]["commit"][:10]
    assert result.stdout.startswith(f"### regsurvey check {'passed' if expected.passed else 'failed'}")
    assert f"`working tree with triton {new}` ({sha}) against `HEAD with triton {old}` ({sha})" in result.stdout
    assert len(expected.problems) == result.stdout.count("no baseline entry allows it")
    plain = invoke("check", "--base", "HEAD", *upgraded["common"])  # the same toolchain on both sides
    assert plain.exit_code == 0, plain.stdout


def test_bad_input_is_one_line(upgraded: dict[str, Any], tmp_path: Path) -> None:
    common = upgraded["common"]
    assert_one_line_error(invoke("upgrade", "--from", "current", *common),
                          "--from current and --to current are the same toolchain (this environment): nothing to "
                          "compare")
    python = upgraded["python"]
    assert_one_line_error(invoke("upgrade", "--from", python, "--to", python, *common),
                          f"--from {python} and --to {python} are the same toolchain ({python}): nothing to compare")
    assert_one_line_error(invoke("upgrade", "--from", tmp_path / "nope", *common),
                          f"--from {tmp_path / 'nope'}: no such file or directory")
    assert_one_line_error(invoke("upgrade", "--from", python, "--to", tmp_path / "nope", *common),
                          f"--to {tmp_path / 'nope'}: no such file or directory")
    assert_one_line_error(invoke("check", "--base", "HEAD", "--base-toolchain", tmp_path / "nope", *common),
                          f"--base-toolchain {tmp_path / 'nope'}: no such file or directory")
    survey_file = upgraded["files"] / "old.json"
    assert_one_line_error(invoke("upgrade", "--from", python, str(survey_file), *common),
                          f"{survey_file} is a survey file: upgrade surveys a revision under both toolchains (a git "
                          "revision, or none for the working tree); diff --across-toolchains compares two files")
    assert_one_line_error(invoke("upgrade", "--from", python, "no-such-rev", *common),
                          f"unknown revision 'no-such-rev' in {upgraded['repo']}")
    assert_usage_error(invoke("upgrade", *common), "Usage: regsurvey upgrade [OPTIONS] [REV]",
                       "Missing option '--from'.")
