"""A real survey that comparison tests start from: the toy kernels under a keys file with more axes.

``attn`` varies over tp, width and cache and launches two kernels (matmul, then scale_rows), ``proj``
varies over tp and width, on gfx950 and sm90: 24 keys, 40 builds, so summaries have axes and kernels to
group by. It is surveyed once per test session (real compiles, about 15 s);
tests then edit figures of copies of its rows to make the changes they describe.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from regsurvey.engine.survey import SurveyOptions, survey_checkout
from regsurvey.model.results import Row, Survey
from regsurvey.repo.checkout import working_tree

from .conftest import TOY

LAYER_KEYS = '''
"""Toy keys with more axes."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950", "sm90"], tp=[4, 8], width=[2, 8], cache=["bf16", "e4m3"],
                   labels={"width": "w"})


@matrix.kind(axes=["tp", "width", "cache"])
def attn(tp, width, cache):
    out = ops.gemm(rs.tensor((width, 512), "bf16"), rs.tensor((512, 2048 // tp), "bf16"))
    ops.scale(out, 0.5)


@matrix.kind(axes=["tp", "width"])
def proj(tp, width):
    ops.scale(rs.tensor((width, 4096 // tp), "bf16"), 0.5)
'''

_CACHE: dict[str, tuple[Survey, Path]] = {}


def layer_survey(workdir: Path) -> tuple[Survey, Path]:
    """The survey and its store's root (made under ``workdir`` the first time, then cached)."""
    if "survey" not in _CACHE:
        project = workdir / "layer"
        shutil.copytree(TOY, project, ignore=shutil.ignore_patterns("__pycache__"))
        (project / "keys" / "toy.py").unlink()
        (project / "keys" / "layer.py").write_text(LAYER_KEYS)
        store = workdir / "store"
        survey = survey_checkout(working_tree(project), store / "objects", SurveyOptions(jobs=2))
        _CACHE["survey"] = (survey, store)
    return _CACHE["survey"]


def edited(survey: Survey, edits: dict[tuple[str, str], dict[str, Any]], **changes: Any) -> Survey:
    """A copy of ``survey`` whose row ``(row_id, target)`` takes the resources in ``edits`` (merged into
    its own), or, for an edit holding ``status``/``error``, that status; other fields via ``changes``.
    A row id is the key for a key's first launch, ``key#1`` for its second."""
    rows = []
    for row in survey.rows:
        edit = edits.get((row.row_id, row.target))
        if edit is None:
            rows.append(row)
            continue
        fields = {k: v for k, v in edit.items() if k in ("status", "error")}
        resources = {k: v for k, v in edit.items() if k not in fields}
        if fields.get("status") in ("error", "flaky"):
            rows.append(replace(row, resources={}, object=None, **fields))
        else:
            rows.append(replace(row, resources={**row.resources, **resources}, **fields))
    return replace(survey, rows=tuple(rows), **changes)


def without(survey: Survey, drop: set[tuple[str, str]]) -> Survey:
    """A copy of ``survey`` without the rows ``(row_id, target)`` in ``drop``."""
    return replace(survey, rows=tuple(r for r in survey.rows if (r.row_id, r.target) not in drop))


def row(survey: Survey, row_id: str, target: str) -> Row:
    """The row ``row_id`` on ``target``."""
    return next(r for r in survey.rows if r.row_id == row_id and r.target == target)
