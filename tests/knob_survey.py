"""A real survey of a knob that does nothing and one that does: flash-linear-attention's (fla, of the
real-world corpus) L2 norm, ``l2norm_fwd`` as Qwen3-Next's gated delta rule calls it, on gfx950 and sm90.

fla buckets the token count into ``NB = cdiv(T, 2048 * 32)``, a constexpr of ``l2norm_fwd_kernel`` that is
part of its autotune key and that the kernel never reads (fla#1147: it "fragments both the autotune and
compilation caches"): 65536, 131072 and 262144 rows give NB 1, 2 and 4, three compiles of one object. The
kernel's own autotune configs are pinned to two that differ only in ``num_warps`` (4 and 8, BT 32), which
does change the object. Twelve builds, compiled once per test session (about 15 s), in a store of its own.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from regsurvey.model.options import SurveyOptions
from regsurvey.model.results import Survey
from regsurvey.revisions.obtain import obtain_survey, open_store

from .conftest import commit_all, git

KNOB_KEYS = '''"""fla's L2 norm at token counts that move NB, under two of its autotune configs."""

from fla.modules.norm.l2norm import l2norm_fwd, l2norm_fwd_kernel

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950", "sm90"], rows=[65536, 131072, 262144], warps=[4, 8])
# fla's configs: for num_warps in [1, 2, 4, 8, 16] for BT in [8, 16, 32, 64, 128]; BT 32 under 4 and 8 warps.
CONFIG = {4: 12, 8: 17}


@matrix.kind(axes=["rows", "warps"])
def l2norm(rows, warps):
    rs.pin_config(l2norm_fwd_kernel, CONFIG[warps])
    l2norm_fwd(rs.tensor((rows, 64), "bf16"))
'''


@dataclass(frozen=True)
class KnobSurvey:
    """The project's one-commit repository, its store, and the survey."""

    repo: Path
    store: Path
    survey: Survey


_CACHE: dict[str, KnobSurvey] = {}


def knob_survey(workdir: Path) -> KnobSurvey:
    """The project surveyed under ``workdir`` the first time, then the same; the test skips where fla is not
    installed (fails under ``REGSURVEY_CORPUS_REQUIRED``, as CI sets it)."""
    if importlib.util.find_spec("fla") is None:
        why = "fla is not installed (pip install --no-deps -r tests/realworld/requirements.txt)"
        if os.environ.get("REGSURVEY_CORPUS_REQUIRED"):
            pytest.fail(f"{why}, and REGSURVEY_CORPUS_REQUIRED is set")
        pytest.skip(why)
    if "survey" not in _CACHE:
        repo = workdir / "knobs"
        (repo / "keys").mkdir(parents=True)
        (repo / "keys" / "l2norm.py").write_text(KNOB_KEYS)
        git(repo, "init", "-q", "-b", "main")
        commit_all(repo, "fla's l2norm over NB and num_warps")
        store = workdir / "store"
        survey = obtain_survey(repo, None, open_store(store, repo), SurveyOptions(jobs=2))
        _CACHE["survey"] = KnobSurvey(repo.resolve(), store, survey)
    return _CACHE["survey"]
