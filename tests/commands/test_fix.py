"""``regsurvey fix`` on the toy project for gfx950, with the real toolchain: the variants ranked, the control
with no effect, each variant's figures equal to a survey of a keys file pinned to it (a knob passed as a
launch option, and a block size changed under an autotuner whose heuristics depend on it), and bad input in
one line."""

from __future__ import annotations

import json
import shutil
import subprocess
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


# A launcher that takes its config from a JSON file by token count, as vLLM's fused MoE does, and a kernel
# compiled under a name of its own (a ``repr``, as triton_kernels' matmuls are), launched at two block
# sizes, with a launch pinned to a variant of the first.
TUNED_KEYS = '''"""A launcher reading its tuned config from a file, and a kernel with a repr of its own."""

import json
import os

import triton
from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[8])
CONFIGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs", "gemm.json")
named_scale = triton.JITFunction(ops.scale_rows.fn, repr=lambda spec: f"scale_rows_b{spec.constants['BLOCK']}")


@matrix.kind(axes=["width"])
def gemm_tuned(width):
    with open(CONFIGS) as f:
        config = json.load(f)[str(width)]
    a, b, c = rs.tensor((width, 512), "bf16"), rs.tensor((512, 256), "bf16"), rs.tensor((width, 256), "bf16")
    ops.matmul[(1, 4)](a, b, c, width, 256, 512, **config)


@matrix.kind(axes=["width"])
def named(width):
    x, out = rs.tensor((width, 256), "fp32"), rs.tensor((width, 256), "fp32")
    for block in (128, 256):
        named_scale[(width,)](x, out, 256, 256, 2.0, BLOCK=block, STOP=False)


@matrix.kind(axes=["width"])
def named_pinned(width):
    x, out = rs.tensor((width, 256), "fp32"), rs.tensor((width, 256), "fp32")
    named_scale[(width,)](x, out, 256, 256, 2.0, BLOCK=128, STOP=False, num_warps=8)
'''
GEMM_CONFIGS = {"8": {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 2},
                "64": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 2}}


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
    (repo / "keys" / "tuned.py").write_text(TUNED_KEYS)
    (repo / "configs").mkdir()
    (repo / "configs" / "gemm.json").write_text(json.dumps(GEMM_CONFIGS, indent=4) + "\n")
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


def test_variant_keys_leave_no_costs(project: Project, gemm_fix: dict[str, Any]) -> None:
    """costs.json schedules the project's keys; a sweep's variants are none of them."""
    known = json.loads((project.store / "costs.json").read_text())
    assert known and not [key for key in known if "~" in key], known


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


def test_a_kernel_with_its_own_name_is_varied_at_the_base_launch(project: Project) -> None:
    """triton_kernels' case: the build's name is the kernel's repr of its specialization, not the Python
    name (before, every variant matched no launch and passed for 'no effect')."""
    report = _fix(project, "named/width8", "--kernel", "scale_rows_b128", "--knob", "num_warps=8")["report"]
    (build,) = report["builds"]
    assert build["kernel"] == "scale_rows_b128"
    tried = next(t for t in build["ranked"] if t["label"] == "num_warps=8")
    assert tried["effect"] == "changed", tried
    assert build["control"]["effect"] == "no effect"
    result = invoke("run", *project.args(), "--key", "named_pinned/width8", "--format", "json")
    assert result.exit_code == 0, result.stderr
    (pinned,) = [r for r in json.loads(result.stdout)["rows"] if r["kernel"]]
    assert pinned["kernel"] == "scale_rows_b128"
    assert pinned["triton_hash"] == tried["triton_hash"]
    assert {name: pinned["resources"].get(name) for name in tried["figures"]} == tried["figures"]


def test_the_config_file_the_launcher_read_gets_the_patch(project: Project, tmp_path: Path) -> None:
    patch = tmp_path / "fix.patch"
    report = _fix(project, "gemm_tuned/width8", "--knob", "num_warps=8", "--patch", str(patch))["report"]
    (build,) = report["builds"]
    tried = next(t for t in build["ranked"] if t["label"] == "num_warps=8")
    source = tried["config_source"]
    assert (source["file"], source["path"], source["changed"]) == ("configs/gemm.json", ["8"], {"num_warps": 8})
    assert source["entry"] == GEMM_CONFIGS["8"]
    if build["best"]["label"] == "num_warps=8":
        text = patch.read_text()
        assert text == source["patch"]
    else:  # the patch of the best only; this one's is in the report
        assert not patch.exists()
        patch.write_text(source["patch"])
    assert source["patch"].splitlines()[:2] == ["--- a/configs/gemm.json", "+++ b/configs/gemm.json"]
    assert [line for line in source["patch"].splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")] == [
        '-        "num_warps": 4,', '+        "num_warps": 8,']
    # Applied, the survey's build of the launch is the variant's.
    git(project.repo, "apply", str(patch))
    try:
        result = invoke("run", *project.args(), "--key", "gemm_tuned/width8", "--format", "json")
        assert result.exit_code == 0, result.stderr
        (row,) = [r for r in json.loads(result.stdout)["rows"] if r["kernel"]]
        assert row["num_warps"] == 8 and row["triton_hash"] == tried["triton_hash"]
        assert "config_source" not in row  # a survey's rows never carry one
    finally:
        git(project.repo, "checkout", "--", "configs/gemm.json")


def test_a_variant_that_reaches_no_launch_fails_saying_so(project: Project) -> None:
    from regsurvey.model.fix import Variant
    from regsurvey.model.options import SurveyOptions
    from regsurvey.model.results import Survey
    from regsurvey.revisions.fix import Plan, run_plan
    from regsurvey.store.store import Store

    store = Store(project.store)
    stored = Survey.from_json(invoke("run", *project.args(), "--key", "gemm/width8", "--format", "json").stdout)
    (base,) = [r for r in stored.rows if r.kernel]
    missing = Variant("not_a_kernel", options=(("num_warps", 8),))
    plan = Plan(((base, "gemm/width8 matmul", (missing,)),), 1.0)
    options = SurveyOptions(targets=("gfx950",), kinds=("gemm",), keys=(), jobs=1)
    report = run_plan(project.repo, None, store, options, plan)
    (tried,) = [t for t in report.builds[0].ranked if t.variant.settings]
    assert str(tried.effect) == "failed"
    assert tried.row.error == ("the variant reached no launch: the kind body launched no not_a_kernel that it "
                               "changes")


def test_two_builds_of_one_key_have_their_own_variant_keys() -> None:
    from regsurvey.model.fix import Variant
    from regsurvey.model.keys import Key
    from regsurvey.revisions.fix import variant_key

    key = Key(kind="moe", axes=(("width", 4),), target="gfx942", id="moe/width4")
    variant = Variant("_matmul", options=(("num_warps", 8),))
    assert variant_key(key, variant, 3).id != variant_key(key, variant, 5).id


def test_llvm_options_compile_the_stored_llvm_ir_again(project: Project) -> None:
    """An LLVM option reaches the code only through a compile of its own (Triton passes none per compile):
    the base build's stored LLVM IR compiled again, first as it is (the LLVM control: the base's object),
    then with each option; one LLVM does not know has no effect."""
    report = _fix(project, "gemm/width8", "--knob", "llvm=amdgpu-use-amdgpu-trackers,regsurvey-no-such-option")
    (build,) = report["report"]["builds"]
    assert build["control"] is None  # no launch was changed: no launch control
    control = build["llvm_control"]
    assert (control["label"], control["effect"]) == ("llvm as compiled", "no effect")
    by_label = {t["label"]: t for t in build["ranked"]}
    assert set(by_label) == {"base", "llvm=amdgpu-use-amdgpu-trackers", "llvm=regsurvey-no-such-option"}
    unknown = by_label["llvm=regsurvey-no-such-option"]
    assert unknown["effect"] == "no effect" and unknown["figures"] == build["base"]["figures"]
    assert by_label["llvm=amdgpu-use-amdgpu-trackers"]["variant"]["llvm"] == ["amdgpu-use-amdgpu-trackers"]
    assert by_label["llvm=amdgpu-use-amdgpu-trackers"]["effect"] in ("changed", "no effect")
    # Each variant's figures are read from its own object, as LLVM's own comments in its assembly say them.
    objects = ObjectStore(project.store / "objects")
    for tried in build["ranked"]:
        assembly = objects.text(objects.relpath(tried["object"], "hsaco"), "amdgcn") or ""
        vgprs = int(assembly.split("; NumVgprs: ", 1)[1].split()[0])
        assert tried["figures"]["vgpr_total"] >= vgprs
        assert f"; ScratchSize: {tried['figures']['scratch_bytes']}" in assembly
    # Again: from the store, nothing compiled.
    again = _fix(project, "gemm/width8", "--knob", "llvm=amdgpu-use-amdgpu-trackers,regsurvey-no-such-option")
    assert [t["object"] for t in again["report"]["builds"][0]["ranked"]] == [t["object"] for t in build["ranked"]]


def test_llvm_options_need_triton_39(other_python: str, tmp_path: Path) -> None:
    """Triton before 3.9 sets LLVM's options for its whole process: refused there, saying so."""
    request = json.dumps({"llir": "", "arch": "gfx942", "flags": ["amdgpu-use-amdgpu-trackers"], "fp_fusion": True})
    done = subprocess.run([other_python, "-m", "regsurvey.compile.llvm_options"], input=request, text=True,
                          capture_output=True, timeout=300, check=True)
    version = subprocess.run([other_python, "-c", "import triton; print(triton.__version__)"], text=True,
                             capture_output=True, check=True).stdout.strip()
    if version.startswith("3.9"):
        pytest.skip(f"the other toolchain is Triton {version}")
    assert json.loads(done.stdout) == {"error": f"LLVMOptionsUnsupported: Triton {version} sets LLVM's options for "
                                                f"its whole process, not per compile (Triton 3.9's AMD code "
                                                f"generator does)"}
