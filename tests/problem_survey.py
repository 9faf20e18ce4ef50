"""A real survey holding a build of each problem ``run`` ends by saying (``output/problems.py``), from the
kernels of ``tests/pressure_kernels.py`` on gfx950 and sm90:

- ``capped``: ``spill_kernel`` in one wave with ``waves_per_eu=8``, which caps gfx950's VGPRs at 64: it spills
  (as ``tests/commands/test_history_bisect.py``'s commit that adds the spill).
- ``wide``: ``peak_kernel`` on a tile of 8192 in one wave or warp: its tiles take the registers a thread has.
- ``broken``: a tile of 2000, not a power of two: it fails to build on both targets.
- ``steady``: a small tile, built on gfx950 and skipped on sm90 (``rs.skip``).

Surveyed once per test session (real compiles, about 15 s) into a store of its own, where ``run`` finds it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from regsurvey.model.options import SurveyOptions
from regsurvey.model.results import Survey
from regsurvey.revisions.obtain import obtain_survey, open_store

from . import pressure_kernels
from .conftest import commit_all, git

PROBLEM_KEYS = '''"""A build of each problem: spills, low occupancy, a failure; and a skipped key."""

import regsurvey as rs
from kernels import peak_kernel, spill_kernel

matrix = rs.Matrix(targets=["gfx950", "sm90"], n=[4])


@matrix.kind(axes=["n"], targets=["gfx950"])
def capped(n):
    x, y, out = rs.tensor((2048,), "fp32"), rs.tensor((n * 2048,), "fp32"), rs.tensor((2048,), "fp32")
    spill_kernel[(1,)](x, y, out, BLOCK=2048, N=n, num_warps=1, waves_per_eu=8)


@matrix.kind(axes=["n"])
def wide(n):
    x, y, out = rs.tensor((8192,), "fp32"), rs.tensor((8192,), "fp32"), rs.tensor((8192,), "fp32")
    peak_kernel[(1,)](x, y, out, BLOCK=8192, num_warps=1)


@matrix.kind(axes=["n"])
def broken(n):
    x, y, out = rs.tensor((2000,), "fp32"), rs.tensor((2000,), "fp32"), rs.tensor((2000,), "fp32")
    peak_kernel[(1,)](x, y, out, BLOCK=2000, num_warps=1)


@matrix.kind(axes=["n"])
def steady(n):
    if rs.target().name == "sm90":
        rs.skip("no sm90 variant")
    x, y, out = rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32")
    peak_kernel[(1,)](x, y, out, BLOCK=1024, num_warps=1)
'''


@dataclass(frozen=True)
class ProblemSurvey:
    """The project's one-commit repository, the store its survey is kept in, and the survey."""

    repo: Path
    store: Path
    survey: Survey


_CACHE: dict[str, ProblemSurvey] = {}


def problem_survey(workdir: Path) -> ProblemSurvey:
    """The project surveyed under ``workdir`` the first time, then the same."""
    if "survey" not in _CACHE:
        repo = workdir / "problems"
        (repo / "keys").mkdir(parents=True)
        (repo / "keys" / "problems.py").write_text(PROBLEM_KEYS)
        shutil.copy(pressure_kernels.__file__, repo / "kernels.py")
        git(repo, "init", "-q", "-b", "main")
        commit_all(repo, "a build of each problem")
        store = workdir / "store"
        survey = obtain_survey(repo, None, open_store(store, repo), SurveyOptions(jobs=2))
        _CACHE["survey"] = ProblemSurvey(repo.resolve(), store, survey)
    return _CACHE["survey"]
