"""``regsurvey coverage`` on two corpus libraries, each through its own ops as a serving engine calls them:
conch on gfx942 and FlagGems on sm90 (a capture made offline in the test, the library's corpus keys). Each
program makes some launches the keys have and one in fp16, which no key has. A library that is not
installed skips (fails under ``REGSURVEY_CORPUS_REQUIRED``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..realworld.test_realworld import require_library

ROOT = Path(__file__).resolve().parents[2]

CONCH = '''"""A Llama-3 8B decode step's residual norm and MLP activation through conch, as vLLM calls them."""
import torch
import triton
from conch.ops.activation.silu_and_mul import silu_and_mul
from conch.ops.normalization.rms_norm import fused_add_rms_norm

dev = triton.runtime.driver.active.get_active_torch_device()
for width in (4, 16, 4):
    x = torch.empty(width, 4096, dtype=torch.bfloat16, device=dev)
    fused_add_rms_norm(x, torch.empty_like(x), torch.empty(4096, dtype=torch.bfloat16, device=dev), 1e-5)
silu_and_mul(torch.empty(4, 2 * 14336, dtype=torch.bfloat16, device=dev))   # as mlp_act/8b/width4
silu_and_mul(torch.empty(4, 2 * 14336, dtype=torch.float16, device=dev))    # fp16: the keys are bf16
'''

FLAG_GEMS = '''"""Llama-3 8B norms and softmax through FlagGems, as a model calls them."""
import os

import torch
import triton

os.environ["GEMS_VENDOR"] = "nvidia"
os.environ["FLAGGEMS_DB_URL"] = "sqlite://"
import flag_gems

dev = triton.runtime.driver.active.get_active_torch_device()
for tokens in (16, 16, 4096):  # LibEntry launches a specialization it has once again itself: recorded once
    x = torch.empty(tokens, 4096, dtype=torch.bfloat16, device=dev)
    flag_gems.rms_norm(x, [4096], torch.empty(4096, dtype=torch.bfloat16, device=dev), 1e-5)
x = torch.empty(16, 4096, dtype=torch.float16, device=dev)    # fp16: the keys are bf16
flag_gems.rms_norm(x, [4096], torch.empty(4096, dtype=torch.float16, device=dev), 1e-5)
flag_gems.ops.softmax(torch.empty(16, 4096, dtype=torch.bfloat16, device=dev), -1)
'''


def regsurvey(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``regsurvey ARGS`` in a process of its own (the library's import stays out of the test's)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    return subprocess.run([sys.executable, "-m", "regsurvey", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def coverage(tmp_path: Path, library: str, target: str, program: str, kinds: list[str]) -> dict:
    """The program's launches captured offline for ``target``, against the library's corpus keys."""
    require_library(library)
    shutil.copytree(ROOT / "tests" / "realworld" / library / "keys", tmp_path / "keys")
    (tmp_path / "prog.py").write_text(program)
    captured = regsurvey("capture", "--offline", target, "--records", "run.jsonl", "-o", "captured.py", "--",
                         sys.executable, "prog.py", cwd=tmp_path)
    assert captured.returncode == 0, captured.stderr
    report = regsurvey("coverage", "run.jsonl", *[a for k in kinds for a in ("--kind", k)], "--format", "json",
                       "-C", tmp_path, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    return json.loads(report.stdout)


def differing(kernel: dict) -> dict[str, list[tuple[str, str, object, object]]]:
    """Each missed launch's differences from its nearest key."""
    return {m["launch"]["source"]: [(d["what"], d["argument"], d["key"], d["launch"]) for d in m["differences"]]
            for m in kernel["missed"]}


def test_conch_on_gfx942(tmp_path: Path) -> None:
    report = coverage(tmp_path, "conch", "gfx942", CONCH, ["add_rms_norm", "mlp_act"])
    assert (report["target"], report["records"], report["covered"], report["missed_launches"]) == ("gfx942", 5, 4, 1)
    kernels = {k["name"]: k for k in report["kernels"]}
    # The norm at widths 4 and 16 is one specialization (the row count is no constexpr): every launch covered.
    assert kernels["_rms_norm_kernel"]["covered"] == 3 and kernels["_rms_norm_kernel"]["missed"] == []
    act = kernels["_silu_and_mul_kernel"]
    assert act["covered"] == 1
    [(source, diffs)] = differing(act).items()
    assert source == "launch 5"
    assert sorted(diffs) == [("dtype", "output_ptr", "*bf16", "*fp16"), ("dtype", "x_ptr", "*bf16", "*fp16")]


def test_flag_gems_on_sm90(tmp_path: Path) -> None:
    report = coverage(tmp_path, "flag_gems", "sm90", FLAG_GEMS, ["rms_norm", "softmax"])
    assert (report["target"], report["records"], report["covered"], report["missed_launches"]) == ("sm90", 3, 2, 1)
    kernels = {k["name"]: k for k in report["kernels"]}
    assert kernels["softmax_kernel_inner"]["covered"] == 1 and kernels["softmax_kernel_inner"]["missed"] == []
    norm = kernels["rms_norm_kernel"]
    assert norm["covered"] == 1
    [(source, diffs)] = differing(norm).items()
    assert source == "launch 2"
    assert sorted(diffs) == [("dtype", "in_ptr", "*bf16", "*fp16"), ("dtype", "out_ptr", "*bf16", "*fp16"),
                             ("dtype", "w_ptr", "*bf16", "*fp16")]
