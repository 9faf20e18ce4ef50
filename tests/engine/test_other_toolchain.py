"""Surveys with another environment's Triton and torch (``--toolchain``, engine/other_toolchain.py): bad input
is one line and exit status 2; a survey made through it is the survey made inside that environment, object
for object; its workers import that environment's torch and Triton and this regsurvey.

The tests that survey need another environment (``REGSURVEY_OTHER_TOOLCHAIN``: CI's Triton 3.6 venv)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from regsurvey.engine.other_toolchain import PACKAGE_PARENT
from regsurvey.model.targets import TARGETS

from ..commands.runner import assert_one_line_error, invoke
from ..conftest import commit_all, git

# -- bad input: one line, exit status 2 ----------------------------------------------------------------------


def _venv(where: Path, triton: str | None = None, torch: bool = False) -> Path:
    """A virtual environment without pip (seconds) holding, as asked, a stand-in ``triton`` package of
    version ``triton`` and a stand-in ``torch``: what the checks read before anything compiles."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    site = next(where.glob("lib/python*/site-packages"))
    if triton is not None:
        (site / "triton").mkdir()
        (site / "triton" / "__init__.py").write_text(f"__version__ = {triton!r}\n")
    if torch:
        (site / "torch").mkdir()
        (site / "torch" / "__init__.py").write_text("__version__ = '2.13.0'\n")
    return where


def _answering(where: Path, answer: dict[str, Any]) -> Path:
    """An executable that answers the check as an interpreter would (an older Python, one whose regsurvey
    does not import, a usable one) without being one."""
    where.write_text(f"#!/bin/sh\nprintf '%s\\n' 'REGSURVEY-PROBE {json.dumps(answer)}'\n")
    where.chmod(0o755)
    return where


def _usable_answer() -> dict[str, Any]:
    return {"python": list(sys.version_info[:3]), "triton": "3.6.0", "torch": "2.13.0", "lacking": [],
            "regsurvey": f"{PACKAGE_PARENT}/regsurvey/__init__.py",
            "toolchain": {"hip": {"triton": "3.6.0"}, "cuda": {"triton": "3.6.0"}}}


def test_a_toolchain_that_is_no_interpreter_is_one_line(tmp_path: Path) -> None:
    script = tmp_path / "fails"
    script.write_text("#!/bin/sh\necho 'not python' >&2\nexit 3\n")
    script.chmod(0o755)
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    (tmp_path / "empty").mkdir()
    for spec, why in [(tmp_path / "nope", "no such file or directory"),
                      (plain, "not a Python interpreter (not an executable file)"),
                      (tmp_path / "empty", "a directory without bin/python (expected a Python interpreter or a "
                                           "virtual environment)"),
                      (script, "not a Python interpreter that runs (not python)")]:
        assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", spec), f"--toolchain {spec}: {why}")


def test_an_environment_without_triton_or_torch_or_of_another_triton_is_one_line(tmp_path: Path) -> None:
    bare = _venv(tmp_path / "bare")
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", bare),
                          f"--toolchain {bare}: its environment has no Triton (import triton: ModuleNotFoundError: "
                          "No module named 'triton')")
    no_torch = _venv(tmp_path / "no-torch", triton="3.6.0")
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", no_torch / "bin" / "python"),
                          f"--toolchain {no_torch / 'bin' / 'python'}: its environment has no torch (import torch: "
                          "ModuleNotFoundError: No module named 'torch')")
    old = _venv(tmp_path / "old", triton="3.5.1", torch=True)
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", old),
                          f"--toolchain {old}: Triton 3.5.1 is outside the releases regsurvey supports (3.6 to 3.9)")
    new = _venv(tmp_path / "new", triton="3.10.0", torch=True)
    assert_one_line_error(invoke("diff", "HEAD", "-C", tmp_path, "--toolchain", new),
                          f"--toolchain {new}: Triton 3.10.0 is outside the releases regsurvey supports (3.6 to 3.9)")
    # A stand-in Triton of a supported release: regsurvey imports (its dependencies from this environment,
    # which the bare venv lacks), but that Triton cannot say what it compiles with.
    fake = _venv(tmp_path / "fake", triton="3.6.0", torch=True)
    result = invoke("run", "-C", tmp_path, "--toolchain", fake)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"regsurvey: error: --toolchain {fake}: its Triton 3.6.0 does not say what it "
                                    "compiles with (") and result.stderr.count("\n") == 1, result.stderr


def test_a_python_older_than_regsurveys_or_one_it_does_not_import_under_is_one_line(tmp_path: Path) -> None:
    old = _answering(tmp_path / "python3.9", {"python": [3, 9, 18]})
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", old),
                          f"--toolchain {old}: Python 3.9.18 cannot run regsurvey (it needs Python 3.10 or newer)")
    broken = _answering(tmp_path / "broken", {**_usable_answer(), "unusable": "ImportError: no msgpack\nmore"})
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", broken),
                          f"--toolchain {broken}: regsurvey does not import under Python "
                          f"{'.'.join(map(str, sys.version_info[:3]))} there (ImportError: no msgpack)")


@pytest.mark.parametrize("command", [
    ["run"], ["diff", "HEAD"], ["check", "--base", "HEAD"], ["history", "HEAD~1..HEAD"], ["stack", "HEAD~1.."],
    ["bisect", "HEAD~1", "HEAD", "--key", "k", "--figure", "vgpr"], ["explain", "k/*"], ["demo"]])
def test_every_surveying_command_takes_a_toolchain(command: list[str], tmp_path: Path) -> None:
    where = ("-C", tmp_path) if command != ["demo"] else ()  # the demo makes a repository of its own
    assert_one_line_error(invoke(*command, *where, "--toolchain", tmp_path / "nope"),
                          f"--toolchain {tmp_path / 'nope'}: no such file or directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(invoke(*command, *where, "--toolchain", empty),
                          f"--toolchain {empty}: a directory without bin/python (expected a Python interpreter or a "
                          "virtual environment)")


def test_a_target_that_toolchains_triton_cannot_build_for_is_refused_in_one_line(tmp_path: Path) -> None:
    """That environment's Triton is asked what it cannot build for (compile.toolchain.cannot_build, there); a
    survey naming such a target is refused before anything starts, in its Triton's name."""
    why = "its CUDA 12.8 ptxas /opt/cuda-12.8/bin/ptxas does not know sm_103a"
    answer = {**_usable_answer(), "cannot_build": {**dict.fromkeys(TARGETS), "sm103": why}}
    usable = _answering(tmp_path / "python", answer)
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", usable, "-t", "sm90,sm103"),
                          f"target sm103: Triton 3.6.0 cannot build for it ({why}); Triton 3.6 or newer can, with the "
                          "compilers it ships")
    # The others pass (and the survey goes on: here to the project's missing keys).
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", usable, "-t", "sm90"),
                          f"no keys/ directory in working tree ({tmp_path}): nothing to survey")


def test_another_toolchain_on_ray_is_one_line(tmp_path: Path) -> None:
    usable = _answering(tmp_path / "python", _usable_answer())
    # (--ray sets REGSURVEY_RAY in this process: given here, the runner puts it back as it was)
    assert_one_line_error(invoke("run", "-C", tmp_path, "--toolchain", usable, "--ray", "local",
                                 env={"REGSURVEY_RAY": None}),
                          "--toolchain surveys with local workers only: it cannot be used with --ray (or "
                          "REGSURVEY_RAY)")


def test_current_and_this_interpreter_are_this_environment() -> None:
    from regsurvey.engine.other_toolchain import chosen_toolchain

    assert chosen_toolchain(None) is None
    assert chosen_toolchain("current") is None
    assert chosen_toolchain(sys.executable) is None


# -- surveys with another environment -------------------------------------------------------------------------

WHERE_KEYS = '''"""One key whose body says where its interpreter, torch, Triton and regsurvey come from."""

import sys

import torch
import triton

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], n=[1])


@matrix.kind(axes=["n"])
def where(n):
    rs.skip(f"python={sys.executable} triton={triton.__version__}@{triton.__file__} torch={torch.__file__} "
            f"regsurvey={rs.__file__}")
'''


def test_the_workers_import_that_environments_torch_and_triton_and_this_regsurvey(other_python: str,
                                                                                 tmp_path: Path) -> None:
    repo = tmp_path / "where"
    (repo / "keys").mkdir(parents=True)
    (repo / "keys" / "where.py").write_text(WHERE_KEYS)
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "where")
    prefix = subprocess.run([other_python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                            check=True).stdout.strip()
    result = invoke("run", "-C", repo, "--store", tmp_path / "store", "-q", "--toolchain", other_python,
                    "--format", "json")
    assert result.exit_code == 0, result.stderr
    survey = json.loads(result.stdout)
    said = dict(part.split("=", 1) for part in survey["rows"][0]["skip_reason"].split())
    assert said["python"] == other_python
    version, _, triton_file = said["triton"].partition("@")
    assert triton_file.startswith(prefix + os.sep) and said["torch"].startswith(prefix + os.sep)
    assert said["regsurvey"] == f"{PACKAGE_PARENT}/regsurvey/__init__.py"
    assert survey["toolchain"]["cuda"]["triton"] == version  # the block the listing worker recorded: its Triton's


def test_that_environments_triton_says_it_builds_for_every_target(other_python: str) -> None:
    """The probe's question asked there, of its own Triton (CI: 3.6, which builds for every target)."""
    from regsurvey.engine.other_toolchain import probed

    assert probed(os.path.abspath(other_python)).cannot_build == dict.fromkeys(TARGETS)


def test_a_survey_through_toolchain_is_the_survey_made_inside_that_environment(
        other_python: str, upgrade_project: tuple[Path, Path], tmp_path: Path) -> None:
    """Build for build the same figures and the same object (sha256), each survey compiling every launch
    itself (``--force``: Triton's cache keys a kernel by its source, not its file, and may hold an object
    another checkout's path is compiled into), with the same toolchain block."""
    repo, store = upgrade_project
    through = invoke("run", "-C", repo, "--store", store, "-q", "--force", "--toolchain", other_python,
                     "--format", "json")
    assert through.exit_code == 0, through.stderr
    inside = subprocess.run([other_python, "-m", "regsurvey", "run", "-C", str(repo), "--store",
                             str(tmp_path / "inside"), "-q", "--force", "--format", "json"],
                            env={**os.environ, "PYTHONPATH": PACKAGE_PARENT}, capture_output=True, text=True,
                            timeout=600)
    assert inside.returncode == 0, inside.stderr
    a, b = json.loads(through.stdout), json.loads(inside.stdout)
    assert a["toolchain"] == b["toolchain"] and a["toolchain"]["hip"]["triton"] != _this_triton()

    def builds(survey: dict[str, Any]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        return {(r["target"], r["key"], r["launch"], r["config"]):
                (r["status"], r["object"]["sha256"], r["resources"], r["triton_hash"]) for r in survey["rows"]}

    assert builds(a) == builds(b)
    assert len(builds(a)) == 4 and all(status == "ok" for status, *_ in builds(a).values())


def test_explain_explains_the_build_of_that_toolchain(other_python: str, upgrade_project: tuple[Path, Path]) -> None:
    """``explain --toolchain``: the build that environment's Triton made (its stored survey reused), its live
    registers read by that environment's nvdisasm on sm90 (Triton 3.6's CUDA 12 cubin, whose life ranges
    this environment's CUDA 13 nvdisasm cannot read)."""
    repo, store = upgrade_project
    common = ("-C", repo, "--store", store, "-q", "--target", "sm90")
    theirs = invoke("run", *common, "--toolchain", other_python, "--format", "json")
    assert theirs.exit_code == 0, theirs.stderr
    (row,) = [r for r in json.loads(theirs.stdout)["rows"] if r["key"] == "gemm/width2"]
    result = invoke("explain", "gemm/width2", *common, "--toolchain", other_python, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert "surveying" not in result.stderr  # the run's survey, reused
    (build,) = json.loads(result.stdout)["builds"]
    assert (build["key"], build["target"], build["object"]) == ("gemm/width2", "sm90", row["object"]["sha256"])
    assert build["resources"] == row["resources"]
    pressure = build["pressure"]
    assert pressure["method"] == "nvdisasm life ranges"
    assert 0 < max(pressure["series"]["gpr"]) <= row["resources"]["regs"]
    ours = invoke("explain", "gemm/width2", *common, "--format", "json")  # this environment's build, another object
    assert ours.exit_code == 0, ours.stderr
    assert json.loads(ours.stdout)["builds"][0]["object"] != build["object"]
    text = invoke("explain", "gemm/width2", *common, "--toolchain", other_python).stdout
    assert text.startswith("gemm/width2 on sm90: kernel ") and "(nvdisasm life ranges)" in text.splitlines()[0]


def _this_triton() -> str:
    import triton

    return triton.__version__


def test_surveys_of_two_toolchains_are_stored_apart_and_each_serves_only_its_own(
        other_python: str, upgrade_project: tuple[Path, Path]) -> None:
    """A survey with another toolchain is kept in the store's part for it (revisions/obtain.toolchain_store):
    this environment's survey of the same commit and its own do not replace each other, each is reused
    by a survey with its toolchain, and one whose toolchain block is not that toolchain's (a venv made
    again with another Triton) is surveyed again, saying why."""
    from regsurvey.revisions.obtain import toolchain_store
    from regsurvey.store.store import Store

    from ..conftest import reseal

    repo, store = upgrade_project
    runs = {name: ["run", "-C", repo, "--store", store, "-q", "--format", "json", *toolchain]
            for name, toolchain in (("ours", []), ("theirs", ["--toolchain", other_python]))}
    first = {name: invoke(*args) for name, args in runs.items()}
    assert all(r.exit_code == 0 for r in first.values()), [r.stderr for r in first.values()]
    again = {name: invoke(*args) for name, args in runs.items()}
    for name, result in again.items():
        assert result.exit_code == 0 and "surveying" not in result.stderr, (name, result.stderr)  # reused
        assert json.loads(result.stdout)["rows"] == json.loads(first[name].stdout)["rows"]
    tritons = {name: json.loads(r.stdout)["toolchain"]["hip"]["triton"] for name, r in again.items()}
    assert tritons == {"ours": _this_triton(), "theirs": probed_triton(other_python)}
    # Its stored survey of gfx950, as if made by another Triton in the same place.
    part = toolchain_store(Store(store), other_python).root / "surveys" / git(repo, "rev-parse", "HEAD") / "gfx950.json"
    data = json.loads(part.read_text())
    data["toolchain"]["hip"]["triton"] = "3.7.0"
    part.write_text(json.dumps(data))
    reseal(part)
    remade = invoke(*runs["theirs"])
    assert remade.exit_code == 0, remade.stderr
    assert ("the toolchain changed since the stored survey of gfx950 (hip triton: \"3.7.0\" → "
            f"\"{tritons['theirs']}\")") in remade.stderr, remade.stderr


def probed_triton(python: str) -> str:
    return subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True, text=True,
                          check=True).stdout.strip()
