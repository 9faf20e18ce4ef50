"""A target the Triton in use cannot build for (issue 39): every command that surveys refuses it in one line,
exit status 2, naming the Triton release that can, before any key is compiled. The target is one regsurvey
does not have (tests/conftest.py's ``made_up_target``); the probe finding this Triton unable to build for it is
real (compile.toolchain.cannot_build)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from regsurvey.revisions.demo import DEMO_CHANGE

from ..conftest import MADE_UP_TARGET, commit_all
from .conftest import Tiny
from .runner import assert_one_line_error, invoke


@pytest.fixture(scope="module")
def two_commits(tiny: Tiny, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of the tiny project with a second commit (a README): what ranges of commits need."""
    repo = tiny.clone(tmp_path_factory.mktemp("two") / "tiny")
    (repo / "README").write_text("a second commit\n")
    commit_all(repo, "readme")
    return repo


@pytest.mark.parametrize("command", [
    ["run"], ["run", "--commit", "HEAD"], ["diff", "HEAD"], ["check", "--base", "HEAD"], ["lint"],
    ["explain", "scale/*"], ["rebuild-check"], ["prune"], ["fix", "scale/*"], ["stack", "HEAD~1..HEAD"],
    ["history", "HEAD~1..HEAD"], ["bisect", "HEAD~1", "HEAD", "--key", "scale/*", "--figure", "regs"]])
def test_every_surveying_command_refuses_it_in_one_line_before_compiling(
        command: list[str], two_commits: Path, tmp_path: Path, made_up_target: str) -> None:
    store = tmp_path / "store"
    result = invoke(*command, "-C", two_commits, "--store", store, "-q", "-t", f"sm90,{MADE_UP_TARGET}")
    assert_one_line_error(result, made_up_target)
    assert not [p for p in store.rglob("*") if p.is_file() and p.suffix in (".cubin", ".hsaco", ".json")]


def test_the_demo_refuses_it_after_saying_what_it_surveys_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, made_up_target: str) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    report = tmp_path / "demo.html"
    assert_one_line_error(invoke("demo", "-q", "-t", MADE_UP_TARGET, "-o", report), made_up_target, before=(
        f'demo: the decode-layer suite, then "{DEMO_CHANGE.message}"; surveying mla_decode on {MADE_UP_TARGET} for '
        "both commits\n"))
    assert not report.exists() and sorted(scratch.glob("regsurvey-demo-*")) == []
