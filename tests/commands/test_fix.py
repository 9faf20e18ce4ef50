"""``regsurvey fix`` on the toy project for gfx950, with the real toolchain: the variants ranked, the control
with no effect, each variant's figures equal to a survey of a keys file pinned to it (a knob passed as a
launch option, and a block size changed under an autotuner whose heuristics depend on it), and bad input in
one line."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from regsurvey.objects.object_sections import differing_sections, is_debug_section
from regsurvey.store.objectstore import ObjectStore

from ..conftest import TOY, commit_all, git
from .runner import assert_one_line_error, invoke

# The toy GEMM and the toy autotuned axpy (configs BLOCK 128/512/1024; its heuristics set EVEN from n and
# BLOCK), and the same launches pinned to the variants the tests sweep: the GEMM with num_warps=8 and
# num_stages=1 passed by the launcher, the axpy's config 1 with BLOCK=1024 (EVEN then False: 1536 % 1024).
KEYS = '''"""The toy GEMM and axpy on gfx950, and launches pinned to two of their variants."""

import triton
from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[8])


@matrix.kind(axes=["width"])
def gemm(width):
    ops.gemm(rs.tensor((width, 512), "bf16"), rs.tensor((512, 256), "bf16"))


@matrix.kind(axes=["width"])
def gemm_pinned(width):
    a, b = rs.tensor((width, 512), "bf16"), rs.tensor((512, 256), "bf16")
    c = rs.tensor((width, 256), "bf16")
    ops.matmul[(1, 4)](a, b, c, width, 256, 512, BLOCK_M=16, BLOCK_N=64, BLOCK_K=64, num_warps=8, num_stages=1)


@matrix.kind(axes=["width"])
def axpy(width):
    ops.axpy(rs.tensor((1536,), "fp32"), rs.tensor((1536,), "fp32"), 2.0)


@matrix.kind(axes=["width"])
def axpy_pinned(width):
    x, y = rs.tensor((1536,), "fp32"), rs.tensor((1536,), "fp32")
    ops.axpy_kernel.fn[(2,)](x, y, 1536, 2.0, BLOCK=1024, num_warps=4, num_stages=3)  # config 1: Config defaults
'''


@dataclass(frozen=True)
class Project:
    repo: Path
    store: Path

    def args(self) -> tuple[str, ...]:
        return ("-C", str(self.repo), "--store", str(self.store), "-q", "-j", "2")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("fix")
    repo = root / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "keys" / "toy.py").write_text(KEYS)
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "toy project")
    return Project(repo.resolve(), root / "store")


def _fix(project: Project, *args: str) -> dict[str, Any]:
    result = invoke("fix", *args, *project.args(), "--format", "json")
    assert result.exit_code == 0, result.stderr
    return {"report": json.loads(result.stdout), "stderr": result.stderr}


def _survey(project: Project, key: str) -> dict[str, Any]:
    result = invoke("run", *project.args(), "--key", key, "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = [r for r in json.loads(result.stdout)["rows"] if r["kernel"]]
    assert len(rows) == 1, rows
    return rows[0]


@pytest.fixture(scope="module")
def gemm_fix(project: Project) -> dict[str, Any]:
    return _fix(project, "gemm/width8", "--knob", "num_warps=8", "--knob", "num_stages=1,3")


def test_the_plan_is_said_before_it_compiles(gemm_fix: dict[str, Any]) -> None:
    stderr = gemm_fix["stderr"]
    assert stderr.startswith("fix: 1 build, 3 variants to compile (about "), stderr
    assert "of compile, the base builds' own compile times; about " in stderr


def test_variants_ranked_with_the_control_of_no_effect(project: Project, gemm_fix: dict[str, Any]) -> None:
    (build,) = gemm_fix["report"]["builds"]
    assert (build["key"], build["kernel"], build["target"]) == ("gemm/width8", "matmul", "gfx950")
    labels = [t["label"] for t in build["ranked"]]
    assert sorted(labels) == ["base", "num_warps=8 num_stages=1", "num_warps=8 num_stages=3"]
    assert build["control"]["label"] == "launch_cooperative_grid=True"
    assert build["control"]["effect"] == "no effect"
    # The base's object byte for byte, or (Triton's cache handing out an object compiled from another
    # checkout of the toy kernels) one that differs from it in its debug sections only.
    if build["control"]["object"] != build["base"]["object"]:
        objects = ObjectStore(project.store / "objects")
        found = {sha: next(objects.root.glob(f"*/{sha}.hsaco")) for sha in (build["control"]["object"],
                                                                            build["base"]["object"])}
        sections = differing_sections(*(found[sha].read_bytes() for sha in found))
        assert sections and all(is_debug_section(name) for name in sections), sections
    assert build["control"]["triton_hash"] != build["base"]["triton_hash"]  # compiled, not taken from the base
    for tried in build["ranked"]:
        if tried["label"] != "base":
            assert tried["effect"] == "changed" and tried["object"] != build["base"]["object"]
    keys = [(t["figures"]["loop_spill_ops"], t["figures"]["vgpr_spill"] + t["figures"]["sgpr_spill"],
             -t["figures"]["occupancy"], t["figures"]["vgpr_total"]) for t in build["ranked"]]
    assert keys == sorted(keys)


def test_a_variant_equals_a_survey_pinned_to_it(project: Project, gemm_fix: dict[str, Any]) -> None:
    (build,) = gemm_fix["report"]["builds"]
    tried = next(t for t in build["ranked"] if t["label"] == "num_warps=8 num_stages=1")
    pinned = _survey(project, "gemm_pinned/width8")
    assert pinned["triton_hash"] == tried["triton_hash"]
    assert pinned["object"]["sha256"] == tried["object"]
    assert {name: pinned["resources"].get(name) for name in tried["figures"]} == tried["figures"]


def test_a_block_size_under_heuristics_equals_a_pinned_survey(project: Project) -> None:
    report = _fix(project, "axpy/width8", "--config", "1", "--knob", "BLOCK=1024")["report"]
    (build,) = report["builds"]
    assert build["config"] == 1
    tried = next(t for t in build["ranked"] if t["label"] == "BLOCK=1024")
    assert tried["effect"] == "changed"
    pinned = _survey(project, "axpy_pinned/width8")
    assert pinned["build"] == {"BLOCK": 1024, "EVEN": False}  # the heuristics saw the variant's BLOCK
    assert pinned["triton_hash"] == tried["triton_hash"]
    assert {name: pinned["resources"].get(name) for name in tried["figures"]} == tried["figures"]


def test_the_table_names_the_options_to_use(project: Project, gemm_fix: dict[str, Any]) -> None:
    result = invoke("fix", "gemm/width8", "--knob", "num_warps=8", "--knob", "num_stages=1,3", *project.args())
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ("gemm/width8 matmul on gfx950 (base: num_warps=4 num_stages=2): 2 variants and the control, "
                        "2 changed the code, "
                        "0 no effect, 0 failed")
    assert "control launch_cooperative_grid=True: no effect (the base's object, byte for byte)" in result.stdout
    best = gemm_fix["report"]["builds"][0]["best"]
    if best["label"] != "base":
        use = "use: launch options " + ", ".join(f"{k}={v!r}" for k, v in best["variant"]["options"].items())
        assert use in lines


def test_bad_input_is_one_line(project: Project, gemm_fix: dict[str, Any]) -> None:
    assert_one_line_error(invoke("fix", "nothing/*", *project.args()),
                          "no key matches the selection (--kind/--key)")
    assert_one_line_error(invoke("fix", "gemm/width8", "--knob", "maxnreg=128", *project.args()),
                          "--knob maxnreg: gfx950 has no launch option maxnreg, and it is no constexpr of matmul")
    assert_one_line_error(invoke("fix", "gemm/width8", "--knob", "kpack=2", *project.args()),
                          "--knob kpack: gfx950's Triton ignores it (it compiles kpack=1 whatever is asked)")
    assert_one_line_error(invoke("fix", "gemm/width8", "--knob", "num_warps=2,8", "--knob", "num_stages=1,3",
                                 "--max", "3", *project.args()),
                          "the sweep has 5 variants (1 build), more than --max 3: name fewer builds or knobs, "
                          "or raise --max")
    assert_one_line_error(invoke("fix", "gemm/width8", "--knob", "num_warps", *project.args()),
                          "--knob 'num_warps': expected NAME=VALUE[,VALUE...] (num_warps=4,8)")
