"""Issue #30, item 2: a stored survey of a target serves every command that needs that target, however the
targets were named (spelled out with ``--target``, by default from the keys files, a subset), and is
replaced only by a survey of at least its scope; the store keeps no command's name for it.

The project: the toy kernels on two targets, two commits of the same kernels. ``gemm`` declares gfx950
only, so ``--target sm90`` (every kind on sm90) and a survey without ``--target`` (the kinds that declare
sm90: ``scale``) differ on sm90. Every survey a command makes is recorded (``survey_checkout``, wrapped):
a command served by the store makes none.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from regsurvey.revisions import obtain

from ..conftest import TOY, commit_all, git
from .runner import invoke

KEYS = '''"""scale on both targets, gemm on gfx950 only."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950", "sm90"], width=[2], labels={"width": "w"})


@matrix.kind(axes=["width"])
def scale(width):
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)


@matrix.kind(axes=["width"], targets=["gfx950"])
def gemm(width):
    ops.gemm(rs.tensor((width, 512), "bf16"), rs.tensor((512, 256), "bf16"))
'''
DECLARED = {("scale/w2", "gfx950"), ("scale/w2", "sm90"), ("gemm/w2", "gfx950")}  # without --target
EVERY_KIND = DECLARED | {("gemm/w2", "sm90")}  # --target gfx950,sm90


@dataclass(frozen=True)
class Project:
    repo: Path
    base: str  # HEAD~1
    head: str
    store: Path

    def args(self) -> tuple[str, ...]:
        return ("-C", str(self.repo), "--store", str(self.store), "-q")

    def stored(self, sha: str) -> dict[str, tuple[bytes, int]]:
        """Each file stored for ``sha`` (its surveys per target, checksums, index): bytes and mtime."""
        folder = self.store / "surveys" / sha
        return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()}

    def stored_survey(self, sha: str, target: str) -> dict[str, Any]:
        return json.loads((self.store / "surveys" / sha / f"{target}.json").read_text())


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    repo = tmp_path_factory.mktemp("targets") / "proj"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "keys" / "toy.py").write_text(KEYS)
    git(repo, "init", "-q", "-b", "main")
    base = commit_all(repo, "toy project")
    (repo / "NOTES.md").write_text("notes\n")
    return repo.resolve(), base, commit_all(repo, "notes")


@pytest.fixture
def project(repo: tuple[Path, str, str], tmp_path: Path) -> Project:
    """The project with a store of this test's own."""
    return Project(*repo, store=tmp_path / "store")


@pytest.fixture
def surveyed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str | None, tuple[str, ...] | None]]:
    """Each survey commands make from now on: (commit, targets asked for)."""
    made: list[tuple[str | None, tuple[str, ...] | None]] = []
    survey_checkout = obtain.survey_checkout

    def recorded(checkout: Any, objects_dir: Path, options: Any, progress: Any = None) -> Any:
        made.append((checkout.commit, options.targets))
        return survey_checkout(checkout, objects_dir, options, progress)

    monkeypatch.setattr(obtain, "survey_checkout", recorded)
    return made


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return result


def builds(data: dict[str, Any]) -> set[tuple[str, str]]:
    return {(r["key"], r["target"]) for r in data["rows"]}


def test_targets_spelled_out_serve_commands_without_them(project: Project,
                                                         surveyed: list[tuple[str | None, tuple[str, ...] | None]]
                                                         ) -> None:
    # Reported: `run --commit HEAD -t gfx942,gfx950,sm90` (the targets the keys declare), then `diff HEAD~1
    # HEAD` without -t surveyed HEAD again (83 s instead of 1.5 s): only a survey without -t said its targets.
    first = json.loads(ok(invoke("run", *project.args(), "--commit", "HEAD", "-t", "gfx950,sm90",
                                 "--format", "json")).stdout)
    assert surveyed == [(project.head, ("gfx950", "sm90"))] and builds(first) == EVERY_KIND
    stored = project.stored(project.head)
    assert project.stored_survey(project.head, "sm90")["label"] == project.head[:10]  # not "HEAD"

    # diff without -t: HEAD from the store (as a survey without -t makes it: gemm is no sm90 build), HEAD~1
    # surveyed; the same builds on both sides.
    diff = ok(invoke("diff", "HEAD~1", "HEAD", *project.args(), "--format", "json"))
    assert surveyed[1:] == [(project.base, None)] and diff.stderr == ""
    rows = json.loads(diff.stdout)["rows"]
    assert {(r["key"], r["target"]) for r in rows} == DECLARED
    assert {r["mark"] for r in rows} == {"unchanged"}

    # A subset, spelled out, and explain of a target (the working tree: HEAD), from the store too.
    sm90 = json.loads(ok(invoke("run", *project.args(), "--commit", "HEAD", "-t", "sm90", "--format", "json")).stdout)
    assert builds(sm90) == {("scale/w2", "sm90"), ("gemm/w2", "sm90")} and sm90["created"] == first["created"]
    assert sm90["label"] == f"HEAD ({project.head[:10]})"
    explained = ok(invoke("explain", "gemm/*", *project.args(), "-t", "sm90", "--format", "json"))
    assert [item["target"] for item in json.loads(explained.stdout)["builds"]] == ["sm90"] and explained.stderr == ""
    default = json.loads(ok(invoke("run", *project.args(), "--commit", "HEAD", "--format", "json")).stdout)
    assert builds(default) == DECLARED and default["created"] == first["created"]
    assert surveyed[1:] == [(project.base, None)]  # nothing more surveyed
    assert project.stored(project.head) == stored  # nothing rewritten


def test_a_target_of_a_survey_without_targets_serves_it_spelled_out(
        project: Project, surveyed: list[tuple[str | None, tuple[str, ...] | None]]) -> None:
    # Reported: `explain KEY --target sm90` just after `diff HEAD~1 HEAD` took 58 s (about 1 s without
    # --target), surveyed every key of that target again and stored it as "working tree".
    ok(invoke("diff", "HEAD~1", "HEAD", *project.args()))
    assert surveyed == [(project.base, None), (project.head, None)]
    stored = project.stored(project.head)
    explained = ok(invoke("explain", "scale/*", *project.args(), "-t", "gfx950", "--format", "json"))
    assert [item["target"] for item in json.loads(explained.stdout)["builds"]] == ["gfx950"] and explained.stderr == ""
    assert len(surveyed) == 2 and project.stored(project.head) == stored
    assert project.stored_survey(project.head, "gfx950")["label"] == project.head[:10]  # not "working tree"

    # sm90 stored without --target holds scale only: --target sm90 (every kind there) surveys it again, says
    # why, and its wider survey replaces the stored one, which then serves both ways.
    sm90 = ok(invoke("run", *project.args(), "--commit", "HEAD", "-t", "sm90", "--format", "json"))
    assert surveyed[2:] == [(project.head, ("sm90",))]
    assert sm90.stderr == (f"regsurvey: surveying HEAD ({project.head[:10]}) again: the stored survey of sm90 lacks "
                           "kind gemm, which the keys files do not declare for sm90 and --target surveys there too\n")
    assert builds(json.loads(sm90.stdout)) == {("scale/w2", "sm90"), ("gemm/w2", "sm90")}
    wider = project.stored(project.head)
    assert wider["gfx950.json"] == stored["gfx950.json"] and wider["sm90.json"] != stored["sm90.json"]
    default = json.loads(ok(invoke("run", *project.args(), "--commit", "HEAD", "--format", "json")).stdout)
    assert builds(default) == DECLARED and len(surveyed) == 3

    # HEAD~1: gfx950 serves as it is, sm90 alone is surveyed again.
    both = ok(invoke("run", *project.args(), "--commit", "HEAD~1", "-t", "gfx950,sm90", "--format", "json"))
    assert surveyed[3:] == [(project.base, ("sm90",))] and builds(json.loads(both.stdout)) == EVERY_KIND
    assert both.stderr.startswith(f"regsurvey: surveying HEAD~1 ({project.base[:10]}) again on sm90: the stored "
                                  "survey of sm90 lacks kind gemm")

    # A narrower survey of the same toolchain (--force without --target) leaves the wider sm90 as it is.
    ok(invoke("run", *project.args(), "--commit", "HEAD", "--force", "--format", "json"))
    assert surveyed[4:] == [(project.head, None)]
    after = project.stored(project.head)
    assert after["sm90.json"] == wider["sm90.json"] and after["gfx950.json"] != wider["gfx950.json"]
    assert {r["kind"] for r in project.stored_survey(project.head, "sm90")["rows"]} == {"scale", "gemm"}
