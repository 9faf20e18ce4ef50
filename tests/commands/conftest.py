"""Fixtures of the CliRunner tests: a tiny project (the toy kernels under a keys file of two keys on sm90,
one that builds and one that launches nothing), surveyed once per session by ``regsurvey run``, and
directories outside any git repository."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from regsurvey.repo.checkout import repo_root

from ..conftest import TOY, commit_all, git
from .runner import invoke

TINY_KEYS = '''"""Two keys on sm90: one builds, one launches no kernel (an error row)."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[2])


@matrix.kind(axes=["width"])
def scale(width):
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)


@matrix.kind(axes=["width"])
def idle(width):
    pass
'''


@dataclass(frozen=True)
class Tiny:
    """The tiny project: a one-commit repository and the store its surveys are kept in."""

    repo: Path
    store: Path
    sha: str

    def survey_args(self) -> tuple[str, ...]:
        """``-C REPO --store STORE -q``: what every surveying command here is given."""
        return ("-C", str(self.repo), "--store", str(self.store), "-q")

    def clone(self, where: Path) -> Path:
        """A clone of the repository (its HEAD has the same sha: the store's surveys serve it)."""
        git(where.parent, "clone", "-q", str(self.repo), str(where))
        return where


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Tiny:
    root = tmp_path_factory.mktemp("tiny")
    repo = root / "tiny"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "keys" / "toy.py").write_text(TINY_KEYS)
    git(repo, "init", "-q", "-b", "main")
    sha = commit_all(repo, "tiny project")
    return Tiny(repo=repo.resolve(), store=root / "store", sha=sha)


@pytest.fixture(scope="session")
def tiny_survey(tiny: Tiny) -> dict[str, Any]:
    """``regsurvey run --format json`` of the tiny project (a real survey, stored in its store), parsed."""
    result = invoke("run", *tiny.survey_args(), "--format", "json")
    assert result.exit_code == 0, result.stderr
    return {"result": result, "data": json.loads(result.stdout)}


@pytest.fixture
def tiny_survey_file(tiny_survey: dict[str, Any], tmp_path: Path) -> Path:
    """The tiny survey as a survey JSON file, as ``regsurvey run --format json > FILE`` writes it."""
    path = tmp_path / "tiny.json"
    path.write_text(tiny_survey["result"].stdout)
    return path


@pytest.fixture
def outside_git(tmp_path: Path) -> Path:
    """A directory in no git repository."""
    directory = tmp_path / "plain"
    directory.mkdir()
    if repo_root(directory) is not None:
        pytest.skip(f"{directory} is inside a git repository")
    return directory.resolve()
