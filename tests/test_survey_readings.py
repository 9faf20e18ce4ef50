"""Every figure of a survey equals a second, independent reading of the same stored object."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .readings import check_row


@pytest.fixture(scope="module")
def toy_survey(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    import shutil

    from .conftest import TOY, commit_all, git

    repo = tmp_path_factory.mktemp("readings") / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q")
    commit_all(repo, "toy")
    store = repo / "store"
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--store", str(store),
                          "--target", "gfx942,gfx950,sm90,sm100"], cwd=repo, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr
    return store, json.loads(out.stdout)


def test_every_row_matches_a_second_reading(toy_survey: tuple[Path, dict]) -> None:
    store, survey = toy_survey
    assert {r["target"] for r in survey["rows"]} == {"gfx942", "gfx950", "sm90", "sm100"}
    for row in survey["rows"]:
        check_row(store, row)


def test_survey_records_the_toolchain(toy_survey: tuple[Path, dict]) -> None:
    import triton

    _, survey = toy_survey
    assert survey["toolchain"]["hip"]["triton"] == triton.__version__
    if tuple(map(int, triton.__version__.split(".")[:2])) >= (3, 9):
        assert survey["toolchain"]["hip"]["amd_codegen_revision"]
    assert set(survey["toolchain"]["cuda"]["ptxas"]) == {"sm90", "sm100"}
    assert all(v.startswith("Build cuda_") for v in survey["toolchain"]["cuda"]["ptxas"].values())
    assert survey["schema_version"] == 1 and len(survey["commit"]) == 40
