"""Every figure of a survey equals a second, independent reading of the same stored object.

The toy project is surveyed with one more keys file (``OCCUPANCY_KEYS``): GEMMs compiled with
``waves_per_eu`` (LLVM then allocates registers so that no more waves fit) and with tiles big enough
to hold AGPRs. A spread of the demo's decode-layer keys is surveyed for gfx942 and gfx950 too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.model.results import SCHEMA_VERSION
from regsurvey.model.targets import TARGETS

from ..readings import TRITON_39_CODEGEN, asm_comment, check_row, stored_text

ROOT = Path(__file__).resolve().parents[2]

OCCUPANCY_KEYS = '''
"""GEMMs that set waves_per_eu, or whose accumulators spill into AGPRs."""

import torch

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx942", "gfx950"], waves=[1, 2, 3, 4, 6], tile=[128, 256])


def launch(tile, **options):
    a, b, c = (rs.tensor(shape, "bf16") for shape in ((512, 512), (512, 512), (512, 512)))
    grid = (512 // tile, 512 // tile)
    ops.matmul[grid](a, b, c, 512, 512, 512, BLOCK_M=tile, BLOCK_N=tile, BLOCK_K=64, num_warps=4,
                     num_stages=2, **options)


@matrix.kind(axes=["waves"])
def waves_per_eu(waves):
    # waves_per_eu is an AMD compile option: CUDA refuses it, as real launchers know.
    launch(128, **({"waves_per_eu": waves} if torch.version.hip else {}))


@matrix.kind(axes=["tile"])
def wide(tile):
    launch(tile)
'''

# One key of each demo kind, small enough to keep the survey short; mla_decode twice: on gfx950 its
# bf16 build holds 254 arch VGPRs beside its AGPRs, which the object alone rounds to 256.
DEMO_KEYS = ("front_proj/w8/nostop", "q_b/tp8/w8/nostop", "q_absorb/w8/nostop", "kv_write/e4m3/nostop",
             "mla_decode/tp8/w8/e4m3/nostop", "mla_decode/tp8/w8/bf16/nostop", "v_up/w8/nostop",
             "o_proj/tp8/w8/nostop", "router/w8/nostop",
             "topk/w8/nostop", "moe_align/w8", "moe_up_gate/tp8/w8/nostop", "moe_down/tp8/w8/nostop")


@pytest.fixture(scope="module")
def toy_survey(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    import shutil

    from ..conftest import TOY, commit_all, git

    repo = tmp_path_factory.mktemp("readings") / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "keys" / "occupancy.py").write_text(OCCUPANCY_KEYS)
    git(repo, "init", "-q")
    commit_all(repo, "toy")
    store = repo / "store"
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--store", str(store),
                          "--target", "gfx942,gfx950,sm90,sm100"], cwd=repo, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr
    return store, json.loads(out.stdout)


@pytest.fixture(scope="module")
def demo_spread(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    store = tmp_path_factory.mktemp("demo-spread")
    keys = [arg for key in DEMO_KEYS for arg in ("--key", key)]
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--store", str(store),
                          "--target", "gfx942,gfx950", *keys], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return store, json.loads(out.stdout)


def llvm_occupancy(store: Path, row: dict) -> int:
    """LLVM's own ``; Occupancy`` for the row's kernel (registers only: it never sees Triton's LDS)."""
    return asm_comment(stored_text(store, row, "amdgcn"), "Occupancy")


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
    # The ptxas of every NVIDIA target this regsurvey knows (the opt-in ones too), whichever a survey builds.
    assert set(survey["toolchain"]["cuda"]["ptxas"]) == {t.name for t in TARGETS.values() if t.is_nvidia}
    assert all(v.startswith("Build cuda_") for v in survey["toolchain"]["cuda"]["ptxas"].values())
    assert survey["schema_version"] == SCHEMA_VERSION and len(survey["commit"]) == 40


def test_waves_per_eu_and_agprs_are_read(toy_survey: tuple[Path, dict]) -> None:
    # Occupancy is LLVM's where LDS does not bind, lower where it does; both happen here, on both
    # targets, and waves_per_eu=N caps LLVM's figure at N.
    store, survey = toy_survey
    amd = [r for r in survey["rows"] if r["target"].startswith("gfx")]
    for target in ("gfx942", "gfx950"):
        rows = [r for r in amd if r["target"] == target]
        assert any(r["resources"]["occupancy"] == llvm_occupancy(store, r) for r in rows), target
        assert any(r["resources"]["occupancy"] < llvm_occupancy(store, r) for r in rows), target
        for waves in (1, 2, 3, 4, 6):
            [row] = [r for r in rows if r["key"] == f"waves_per_eu/waves{waves}"]
            assert row["resources"]["occupancy"] <= llvm_occupancy(store, row) <= waves
    # With 256x256 tiles the accumulator lives in AGPRs on both targets.
    assert all(r["resources"]["agpr"] > 0 for r in amd if r["key"] == "wide/tile256")
    # And waves_per_eu=2 leaves a GEMM 126 arch VGPRs beside 8 AGPRs on gfx950 (the object says 128):
    # check_row holds vgpr to LLVM's NumVgprs, so a count not a multiple of 4 beside AGPRs is there.
    if TRITON_39_CODEGEN:  # the kernel was chosen for Triton 3.9's LLVM; 3.6's allocates it otherwise
        assert any(r["resources"]["agpr"] and r["resources"]["vgpr"] % 4 for r in amd)


def test_demo_spread_matches_a_second_reading(demo_spread: tuple[Path, dict]) -> None:
    store, survey = demo_spread
    surveyed = {(r["key"], r["target"]) for r in survey["rows"]}
    assert surveyed == {(key, target) for key in DEMO_KEYS for target in ("gfx942", "gfx950")}
    for row in survey["rows"]:
        check_row(store, row)
    # The demo has kernels that LDS limits, and one (mla_decode) that holds AGPRs.
    assert any(r["resources"]["occupancy"] < llvm_occupancy(store, r) for r in survey["rows"])
    assert any(r["resources"]["agpr"] > 0 for r in survey["rows"])
    # mla_decode bf16 on gfx950: LLVM's 254 arch VGPRs (check_row holds every row to NumVgprs).
    [row] = [r for r in survey["rows"] if (r["key"], r["target"], r["launch"]) == ("mla_decode/tp8/w8/bf16/nostop",
                                                                                   "gfx950", 0)]
    if TRITON_39_CODEGEN:  # Triton 3.6's LLVM allocates this kernel otherwise
        assert row["resources"]["vgpr"] % 4 and row["resources"]["agpr"] > 0
