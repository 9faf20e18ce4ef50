"""The project the CI tests judge: the toy kernels under a keys file of one key on sm90, in a git
repository of two commits, the second widening the row block from 4096 to 8192 (more registers and fewer
warps per SM: the gate fails on the occupancy drop; :func:`scale_reading` reads each side's figures without
regsurvey, for the texts the tests expect). A real survey of each commit; one key on one target keeps a
cold check at a few seconds."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from regsurvey.model.results import Survey

from ..conftest import TOY, commit_all, git
from ..readings import independent_reading

REGSURVEY = Path(__file__).resolve().parents[2]  # the action's own checkout: action.yml, ci/

KEYS = '''"""One key on sm90."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[2])


@matrix.kind(axes=["width"])
def scale(width):
    ops.scale(rs.tensor((width, {columns}), "bf16"), 0.5)
'''

# A merge request's keys file that hunts for the CI's tokens (its own environment's, and those of every
# process above it, where it may read them) and raises with what it found; LEAK_DUMP names the file it
# writes its environment and its finds to.
LEAKING_KEYS = '''"""A merge request's keys file that hunts for the CI's tokens and raises with what it found."""

import json
import os
from pathlib import Path

from toykernels import ops

import regsurvey as rs


def tokens():
    """Every TOKEN variable of this process and of each process above it."""
    found = {name: value for name, value in os.environ.items() if "TOKEN" in name}
    pid = os.getppid()
    while pid > 1:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
        for entry in environ.split(b"\\0"):
            name, _, value = entry.decode(errors="replace").partition("=")
            if "TOKEN" in name:
                found.setdefault(name, value)
        pid = parent
    return found


matrix = rs.Matrix(targets=["sm90"], width=[2])


@matrix.kind(axes=["width"])
def leak(width):
    found = tokens()
    Path(os.environ["LEAK_DUMP"]).write_text(json.dumps({"environ": dict(os.environ), "found": found}))
    print("tokens:", found)
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
    raise RuntimeError(f"tokens {found}")
'''


@dataclass(frozen=True)
class Project:
    repo: Path
    base: str  # the first commit
    head: str  # the second, checked out


@pytest.fixture
def project(tmp_path: Path) -> Project:
    repo = tmp_path / "workspace"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "keys" / "toy.py").write_text(KEYS.format(columns=4096))
    git(repo, "init", "-q", "-b", "main")
    base = commit_all(repo, "rows of 4096")
    (repo / "keys" / "toy.py").write_text(KEYS.format(columns=8192))
    head = commit_all(repo, "rows of 8192")
    return Project(repo=repo.resolve(), base=base, head=head)


def scale_reading(store: Path, sha: str) -> dict[str, int]:
    """The figures of the one build (scale/width2 on sm90) the commit's survey in ``store`` names, read
    without regsurvey (tests/readings.independent_reading: ptxas -v, the cubin's own records, Triton's
    metadata, CUDA's occupancy rules)."""
    (row,) = Survey.from_json((store / "surveys" / sha / "sm90.json").read_text()).rows
    return independent_reading(store, row.to_dict())
