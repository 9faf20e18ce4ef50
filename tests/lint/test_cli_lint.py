"""`regsurvey lint` as a user runs it: loose files, surveys, exit statuses, JSON, bad input in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.lint import ERROR, NOTE
from regsurvey.lint.disassembler import find_objdump
from regsurvey.linting import lint_survey
from regsurvey.model.results import ObjectRef, Row, Survey
from regsurvey.store.store import Store

from ..conftest import git

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lint"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
FIELDS = {"file", "target", "kernel", "arg_index", "arg_offset", "arg_name", "severity", "load", "reason"}
needs_objdump = pytest.mark.skipif(find_objdump() is None, reason="no llvm-objdump of LLVM >= 20 installed")


def regsurvey(*args: str, cwd: Path = FIXTURES, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run the CLI as a user would (a fresh interpreter)."""
    return subprocess.run([sys.executable, "-m", "regsurvey", "lint", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def expected_offsets(mutant: str) -> set[int]:
    """Byte offsets of the arguments a mutant loses, from the manifest's names."""
    entry = MANIFEST["mutants"][mutant]
    base = MANIFEST["bases"][entry["base"]]
    visible = [a for a in base["args"] if not a["value_kind"].startswith("hidden_")]
    offsets = {name: arg["offset"] for arg, name in zip(visible, base["arg_names"])}
    return {offsets[name] for name in entry["expected"]}


def test_loose_text_exit_status_and_json() -> None:
    mutants = list(MANIFEST["mutants"])
    out = regsurvey("--format", "json", *(MANIFEST["mutants"][m]["amdgcn"] for m in mutants))
    assert out.returncode == 1, out.stderr
    found = json.loads(out.stdout)
    assert all(set(f) == FIELDS for f in found)
    assert all(set(f["load"]) == {"instruction", "line"} and isinstance(f["load"]["line"], int) for f in found)
    for mutant in mutants:
        mine = [f for f in found if f["file"] == MANIFEST["mutants"][mutant]["amdgcn"]]
        # A loose file has no IR and no names: suspects are named by position and offset.
        assert {f["arg_offset"] for f in mine if f["severity"] == ERROR} == expected_offsets(mutant)
        assert all(f["arg_name"] is None and f["target"] == "gfx950" for f in mine)
    (first,) = [f for f in found if f["file"] == "restore-removed.amdgcn"]
    assert first["kernel"] == "many_buffers_kernel" and first["arg_index"] == 32
    assert first["load"] == {"instruction": "s_load_dwordx2 s[12:13], s[0:1], 0x100", "line": 28}


def test_clean_and_notes_only_exit_0() -> None:
    out = regsurvey("--format", "json", "many_buffers-gfx950.amdgcn")
    assert (out.returncode, json.loads(out.stdout)) == (0, [])
    # matmul's M and N are preloaded and never read: notes, not suspects.
    out = regsurvey("--format", "json", "matmul-gfx950.amdgcn")
    assert out.returncode == 0
    assert [(f["arg_offset"], f["severity"]) for f in json.loads(out.stdout)] == [(24, NOTE), (28, NOTE)]
    table = regsurvey("matmul-gfx950.amdgcn")
    assert table.returncode == 0 and "1 kernel linted: 0 miscompile suspects, 2 notes" in table.stdout


@needs_objdump
def test_loose_objects() -> None:
    out = regsurvey("--format", "json", MANIFEST["mutants"]["use-redirected"]["object"], "many_buffers-gfx950.hsaco")
    assert out.returncode == 1, out.stderr
    (found,) = [f for f in json.loads(out.stdout) if f["severity"] == ERROR]
    assert found["file"] == "use-redirected.co" and found["arg_offset"] in expected_offsets("use-redirected")
    assert found["load"]["instruction"] == "s_load_dword s0, s[4:5], 0x2c" and "address" in found["load"]
    assert regsurvey("many_buffers-gfx950.hsaco").returncode == 0


def one_line_error(out: subprocess.CompletedProcess, *fragments: str) -> None:
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.startswith("regsurvey: error: ") and out.stderr.strip().count("\n") == 0, out.stderr
    for fragment in fragments:
        assert fragment in out.stderr


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    one_line_error(regsurvey("no-such-file.s"), "no-such-file.s", "No such file")
    cut = tmp_path / "cut.hsaco"
    cut.write_bytes((FIXTURES / "many_buffers-gfx950.hsaco").read_bytes()[:3000])
    one_line_error(regsurvey(str(cut)), "cut.hsaco", "cut short")
    notes = tmp_path / "notes.s"
    notes.write_text("hello, not a kernel\n")
    one_line_error(regsurvey(str(notes)), "not a kernel's amdgcn text")
    binary = tmp_path / "noise.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    one_line_error(regsurvey(str(binary)), "neither amdgcn text nor an ELF code object")
    one_line_error(regsurvey("many_buffers-gfx950.hsaco", env={"REGSURVEY_LLVM_OBJDUMP": "/nonexistent"}),
                   "no llvm-objdump of LLVM >= 20")
    one_line_error(regsurvey("--commit", "HEAD", "many_buffers-gfx950.amdgcn"), "not both")


def test_survey_of_the_toy_project_is_clean(toy_repo: Path, tmp_path: Path) -> None:
    out = regsurvey("-q", "--format", "json", "--store", str(tmp_path / "store"), "--verbose", cwd=toy_repo)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
    assert "lint: " in out.stderr and " kernels (" in out.stderr and "% of " in out.stderr
    one_line_error(regsurvey("-q", "--target", "gfx999", cwd=toy_repo), "unknown target 'gfx999'")


def stored_survey(repo: Path, store: Store) -> Survey:
    """A stored survey of HEAD whose one row is the restore-removed mutant: the object Triton built for
    the base kernel, stored with the mutant's amdgcn text and the base's IR."""
    from regsurvey.model.version import READER_REVISION
    from regsurvey.revisions.obtain import current_toolchain

    mutant = MANIFEST["mutants"]["restore-removed"]
    base = MANIFEST["bases"][mutant["base"]]
    sha, path = store.objects.put((FIXTURES / base["hsaco"]).read_bytes(), "hsaco", extras={
        "amdgcn": (FIXTURES / mutant["amdgcn"]).read_text(), "llir": (FIXTURES / base["llir"]).read_text()})
    row = Row(key="spill/w8", kind="spill", axes={"w": 8}, target="gfx950", kernel="many_buffers_kernel",
              status="ok", object=ObjectRef(path=path, sha256=sha))
    broken = Row(key="spill/w2", kind="spill", axes={"w": 2}, target="gfx950", kernel=None, status="error",
                 error="kind body raised")
    return Survey(commit=git(repo, "rev-parse", "HEAD"), label="HEAD", targets=("gfx950",),
                  toolchain=current_toolchain(["gfx950"]), rows=(row, broken), reader=READER_REVISION)


def test_survey_findings_name_the_key(toy_repo: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    survey = stored_survey(toy_repo, store)
    store.save(survey)
    run = lint_survey(survey, store.objects)
    assert (run.kernels, [(f.key, f.arg_offset) for f in run.findings]) == (1, [("spill/w8", 256)])
    # The stored survey of HEAD is reused: nothing is compiled.
    out = regsurvey("-q", "--commit", "HEAD", "--target", "gfx950", "--store", str(store.root), "--format", "json",
                    cwd=toy_repo)
    assert out.returncode == 1, out.stderr
    (found,) = json.loads(out.stdout)
    assert set(found) == FIELDS - {"file"} | {"key"}
    assert (found["key"], found["target"], found["arg_offset"], found["severity"]) == ("spill/w8", "gfx950", 256, ERROR)
    # A stored object altered behind the store's back: the commit is surveyed again on the spot (its real
    # kernels, which lint clean), with a warning naming the object.
    (store.root / survey.rows[0].object.path).write_bytes(b"\x7fELF broken")  # type: ignore[union-attr]
    again = regsurvey("-q", "--commit", "HEAD", "--target", "gfx950", "--store", str(store.root), cwd=toy_repo)
    assert again.returncode == 0, again.stderr
    assert "does not match its sha256 (corrupt or truncated); surveying HEAD" in again.stderr.splitlines()[0]
