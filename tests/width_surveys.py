"""Real surveys for the terminal-width tests (tests/output/test_terminal.py): the launcher-patterns kernels
(tests/fixtures/launchers) under keys named as long as a serving engine's, in a git repository of three
commits, each surveyed for gfx950 and sm90 (real compiles, about a minute the first time; the later
commits reuse what did not change).

The base has builds on both vendors; a compile error (fp8 FNUZ on sm90) and a ptxas error (a register cap
too low); what launchers say (a tuned config's long path logged, a warning and a printed line); a skipped
key. The second commit gives the persistent softmax 8 warps (its registers, occupancy and blocks move on
both vendors) and makes the two-pass scale raise after its first launch (newly failing); the third makes it
build again (fixed).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from regsurvey.engine.survey import SurveyOptions, survey_checkout
from regsurvey.model.results import Survey
from regsurvey.repo.checkout import working_tree

from .conftest import FIXTURES, commit_all

KEYS = '''"""Keys named as a serving engine names its layers."""

from launcherkernels import ops

import regsurvey as rs

SOFTMAX_WARPS = 4
ops.FAIL_AFTER_LAUNCH = False

matrix = rs.Matrix(targets=["gfx950", "sm90"], width=[2, 8], labels={"width": "w"})


@matrix.kind(axes=["width"])
def paged_attention_decode_softmax(width):
    ops.softmax(rs.tensor((width * 1024, 1000), "bf16"), num_warps=SOFTMAX_WARPS)


@matrix.kind(axes=["width"])
def tuned_elementwise_scale_by_config(width):
    ops.scale(rs.tensor((width, 256), "bf16"), 0.5)


@matrix.kind(axes=["width"], width=[2])
def fp8_fnuz_rounding(width):
    ops.to_fp8(rs.tensor((128,), "fp32"))


@matrix.kind(axes=["width"], width=[2], targets=["sm90"])
def register_starved_tile_matmul(width):
    ops.small_matmul(rs.tensor((64, 512), "bf16"), rs.tensor((512, 256), "bf16"), maxnreg=24)


@matrix.kind(axes=["width"], width=[2])
def two_pass_scale(width):
    ops.scale_twice(rs.tensor((width, 256), "bf16"), 0.5)


@matrix.kind(axes=["width"])
def specialized_tile_scale(width):
    if width == 8:
        rs.skip("no 8-row variant of this layer")
    ops.tiled_scale(rs.tensor((width, 256), "bf16"), 0.5, 64 * width)
'''
# The config file a vLLM-style launcher logs it loaded: as long as theirs.
TUNED = '"/opt/serving/configs/fused_moe/E=8,N=14336,device_name=AMD_Instinct_MI355X,dtype=fp8_w8a8.json"'


@dataclass(frozen=True)
class WidthSurveys:
    """The three commits' surveys, oldest first, their subjects, the repository and its store's objects."""

    surveys: tuple[Survey, ...]
    subjects: tuple[str, ...]
    repo: Path
    objects: Path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def width_surveys(workdir: Path) -> WidthSurveys:
    """Make the repository under ``workdir`` and survey each of its commits."""
    repo = workdir / "serving"
    shutil.copytree(FIXTURES / "launchers", repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "keys" / "launchers.py").unlink()
    keys = repo / "keys" / "serving.py"
    keys.write_text(KEYS)
    _edit(repo / "launcherkernels" / "ops.py", '"configs/N=4096,device=tuned.json"', TUNED)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subjects = ["serving layers", "softmax: 8 warps; two-pass scale refuses odd shapes",
                "two-pass scale: every shape again"]
    edits = [None, [("SOFTMAX_WARPS = 4", "SOFTMAX_WARPS = 8"),
                    ("ops.FAIL_AFTER_LAUNCH = False", "ops.FAIL_AFTER_LAUNCH = True")],
             [("ops.FAIL_AFTER_LAUNCH = True", "ops.FAIL_AFTER_LAUNCH = False")]]
    objects = workdir / "store" / "objects"
    surveys = []
    for subject, edit in zip(subjects, edits):
        for old, new in edit or ():
            _edit(keys, old, new)
        commit_all(repo, subject)
        surveys.append(survey_checkout(working_tree(repo), objects, SurveyOptions(jobs=2)))
    return WidthSurveys(tuple(surveys), tuple(subjects), repo, objects)
