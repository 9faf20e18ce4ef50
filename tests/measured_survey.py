"""A real survey whose every build's compile was measured, the compile-time tests' starting point.

The toy project's ``gemm`` keys on gfx950 and sm90 (w2 and w8 build one kernel per target: w8's row is w2's
build, reused, with its measurement), surveyed once per test session with a Triton cache of its own, so that
every stage runs (a compile Triton reads from its cache measures none). The compile-time tests scale these
real measurements (:func:`scaled`) to the seconds a pathological toolchain would take, and say so.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from regsurvey.engine.survey import SurveyOptions, survey_checkout
from regsurvey.model.compile_time import StageTimes
from regsurvey.model.results import Row, Survey
from regsurvey.repo.checkout import working_tree

from .conftest import TOY

_CACHE: dict[str, Survey] = {}


def measured_survey(workdir: Path) -> Survey:
    """The survey (made under ``workdir`` the first time, then cached)."""
    if "survey" not in _CACHE:
        project = workdir / "toy"
        shutil.copytree(TOY, project, ignore=shutil.ignore_patterns("__pycache__"))
        options = SurveyOptions(targets=("gfx950", "sm90"), keys=("gemm/*",), jobs=2,
                                triton_cache_dir=str(workdir / "triton-cache"))
        _CACHE["survey"] = survey_checkout(working_tree(project), workdir / "store" / "objects", options)
    return _CACHE["survey"]


def scaled(row: Row, seconds: float, stage: str | None = None, other_kernel: bool = False) -> Row:
    """``row`` with its real measurement scaled to a compile of ``seconds``: every stage by the same factor,
    or, with ``stage``, that stage taking every second added (what an LLVM or ptxas regression does).
    ``other_kernel``: as another build of the same key (its Triton hash changed), what a change of the
    kernel or of the toolchain compiles; one kernel on both sides is never judged."""
    assert row.stage_s is not None, "a measured row"
    if stage is None:
        stages = StageTimes({name: value * seconds / row.compile_s for name, value in row.stage_s.items()})
    else:
        stages = StageTimes({name: value + (seconds - row.compile_s if name == stage else 0.0)
                             for name, value in row.stage_s.items()})
    return replace(row, compile_s=seconds, stage_s=stages,
                   triton_hash=f"other-{row.triton_hash}" if other_kernel else row.triton_hash)


def with_rows(survey: Survey, rows: dict[tuple[str, str], Row]) -> Survey:
    """A copy of ``survey`` whose rows ``(row_id, target)`` are ``rows``'."""
    return replace(survey, rows=tuple(rows.get((r.row_id, r.target), r) for r in survey.rows))
