"""``regsurvey lint`` in this process: loose files of tests/fixtures/lint (0 clean or notes only, 1 with a
miscompile suspect), the tiny project's stored survey, and what cannot be linted (one line, exit 2)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from regsurvey.lint.disassembler import find_objdump

from .conftest import Tiny
from .runner import NO_KEY_MATCHES, UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lint"
CLEAN_WITH_NOTES = FIXTURES / "matmul-gfx950.amdgcn"  # M and N preloaded, never read: two notes
SUSPECT = FIXTURES / "restore-removed.amdgcn"  # out_ptr spilled and never restored: a miscompile suspect
HSACO = FIXTURES / "many_buffers-gfx950.hsaco"


def test_a_file_with_notes_only_exits_0() -> None:
    result = invoke("lint", CLEAN_WITH_NOTES)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines()[-1] == "1 kernel linted: 0 miscompile suspects, 2 notes"
    found = json.loads(invoke("lint", "--format", "json", CLEAN_WITH_NOTES).stdout)
    assert [(f["kernel"], f["arg_offset"], f["severity"]) for f in found] == [
        ("matmul_kernel", 24, "note"), ("matmul_kernel", 28, "note")]


def test_a_miscompile_suspect_exits_1() -> None:
    result = invoke("lint", "--format", "json", CLEAN_WITH_NOTES, SUSPECT)
    assert result.exit_code == 1, result.stderr
    found = json.loads(result.stdout)
    assert {f["file"] for f in found} == {str(CLEAN_WITH_NOTES), str(SUSPECT)}
    (error,) = [f for f in found if f["severity"] == "error"]
    assert (error["file"], error["kernel"], error["arg_index"], error["load"]["line"]) == (
        str(SUSPECT), "many_buffers_kernel", 32, 28)
    table = invoke("lint", SUSPECT, "--verbose")
    assert table.exit_code == 1
    assert table.stdout.splitlines()[-1].startswith("1 kernel linted: 1 miscompile suspect")
    assert table.stderr.startswith("lint: ") and " s for 1 kernel (" in table.stderr


@pytest.mark.skipif(find_objdump() is None, reason="no llvm-objdump of LLVM >= 20 installed")
def test_a_code_object() -> None:
    result = invoke("lint", "--format", "json", HSACO)
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


@pytest.fixture
def not_lintable(tmp_path: Path) -> Path:
    """Files lint refuses, each named for what it is."""
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "empty.s").write_text("")
    (folder / "prose.s").write_text("hello, not a kernel\n")
    (folder / "ir.amdgcn").write_text((FIXTURES / "matmul-gfx950.llir").read_text())  # LLVM IR, not amdgcn
    (folder / "noise.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "cut.hsaco").write_bytes(HSACO.read_bytes()[:3000])
    # Real amdgcn, slightly malformed (issue #12, defect 7): a register range that runs backwards, and a
    # metadata offset that is not a number.
    text = (FIXTURES / "many_buffers-gfx950.amdgcn").read_text()
    (folder / "backwards.amdgcn").write_text(text.replace("s[2:3], s[0:1], 0x0", "s[3:2], s[0:1], 0x0", 1))
    (folder / "offset.amdgcn").write_text(re.sub(r"\.offset: +0\n", ".offset: zz\n", text, count=1))
    (folder / "a-directory.s").mkdir()
    return folder


NOT_AMDGCN = "no .amdhsa_kernel block or metadata: not a kernel's amdgcn text"


@pytest.mark.parametrize(("name", "problem"), [
    ("empty.s", NOT_AMDGCN),
    ("prose.s", NOT_AMDGCN),
    ("ir.amdgcn", NOT_AMDGCN),
    ("noise.bin", "neither amdgcn text nor an ELF code object"),
    ("backwards.amdgcn", "malformed amdgcn: register range s[3:2] runs backwards"),
    ("offset.amdgcn", "malformed amdgcn: invalid literal for int() with base 10: 'zz'"),
    ("cut.hsaco", f"HSACO is cut short: its headers describe {HSACO.stat().st_size} bytes, it has 3000"),
    ("a-directory.s", "Is a directory"),
    ("missing.s", "No such file or directory"),
])
def test_a_file_that_is_not_lintable_is_one_line(not_lintable: Path, name: str, problem: str) -> None:
    path = not_lintable / name
    assert_one_line_error(invoke("lint", path), f"{path}: {problem}")


def test_the_first_file_refused_ends_the_run(not_lintable: Path) -> None:
    path = not_lintable / "prose.s"
    assert_one_line_error(invoke("lint", CLEAN_WITH_NOTES, path, SUSPECT), f"{path}: {NOT_AMDGCN}")


def test_an_nvidia_cubin_is_not_a_loose_file_lint_reads(tiny: Tiny, tiny_survey: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """A cubin is linted against the PTX of its compile, which only a survey keeps: the line says so, and
    how to lint it (a survey of its target)."""
    stored = tiny.store / tiny_survey["data"]["rows"][0]["object"]["path"]
    cubin = tmp_path / "scale_rows.cubin"
    shutil.copyfile(stored, cubin)
    assert_one_line_error(invoke("lint", cubin), f"{cubin}: an NVIDIA cubin: the lint reads a cubin only with the "
                          "PTX of its compile, which a survey keeps beside it; `regsurvey lint --target "
                          "sm90,sm100,sm103,sm120` (no FILES) lints every key's cubin")


def test_files_and_a_commit_do_not_go_together() -> None:
    assert_one_line_error(invoke("lint", "--commit", "HEAD", CLEAN_WITH_NOTES), "give FILES or --commit, not both")


def test_the_stored_survey_of_a_commit(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    result = invoke("lint", "--commit", "HEAD", *tiny.survey_args(), "--format", "json")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "[]\n", "")
    table = invoke("lint", *tiny.survey_args())  # the working tree: HEAD, clean
    assert table.exit_code == 0 and table.stdout.splitlines()[-1] == "1 kernel linted: 0 miscompile suspects, 0 notes"


@pytest.mark.parametrize(("args", "message"), [
    (("--commit", "no-such-rev"), "unknown revision 'no-such-rev' in {repo}"),
    (("--target", "gfx999"), UNKNOWN_TARGET),
    (("--kind", "no_such_kind"), NO_KEY_MATCHES),
])
def test_bad_input_to_a_survey_is_one_line(tiny: Tiny, tiny_survey: dict[str, Any], args: tuple[str, ...],
                                           message: str) -> None:
    assert_one_line_error(invoke("lint", *args, *tiny.survey_args()), message.format(repo=tiny.repo))


def test_a_stored_object_altered_is_compiled_again(tiny: Tiny, tiny_survey: dict[str, Any], tmp_path: Path) -> None:
    # Issue #12, defect 8: repaired on the spot (a warning, the commit surveyed again), not an error.
    store = tmp_path / "store"
    shutil.copytree(tiny.store, store)
    path = tiny_survey["data"]["rows"][0]["object"]["path"]
    good = (store / path).read_bytes()
    (store / path).write_bytes(b"\x7fELF altered")
    result = invoke("lint", "--commit", "HEAD", "-C", tiny.repo, "--store", store, "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(f"regsurvey: warning: stored object {path} does not match its sha256 "
                                    "(corrupt or truncated); surveying HEAD")
    assert (store / path).read_bytes() == good  # the object compiled again is the one stored before


def test_a_bad_format_is_a_usage_error() -> None:
    assert_usage_error(invoke("lint", "--format", "sarif", CLEAN_WITH_NOTES),
                       "Usage: regsurvey lint [OPTIONS] [FILES]...",
                       "Invalid value for '--format': 'sarif' is not one of 'table', 'json', 'csv'.")
