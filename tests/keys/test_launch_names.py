"""One name per build, in every report: a key that launches one kernel twice through one library call (an
MoE's gate/up and down GEMMs) shows two builds told apart, by the names the kind body gave them in launch
order (``rs.names``), else by launch index; and the survey table keeps what a kind body said out of its
figure columns. Real compiles for gfx950 of a small project written here.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from regsurvey.check.baseline import Baseline
from regsurvey.check.gate import NEW_SPILL, judge
from regsurvey.check.sites import build_site
from regsurvey.diff.core import compare
from regsurvey.diff.summary import summarize
from regsurvey.engine.worker import Worker
from regsurvey.kept_pressure import pressure_of
from regsurvey.keys.keyfiles import expand_keys
from regsurvey.model.names import build_names
from regsurvey.model.results import Row, Survey
from regsurvey.output.diff_json import comparison_dict
from regsurvey.output.diff_table import TableFormat
from regsurvey.output.explain import Explained, format_text
from regsurvey.output.gate_text import problem_message
from regsurvey.output.html import comparison_data
from regsurvey.output.markdown import MarkdownFormat, format_gate
from regsurvey.output.sarif import sarif_log
from regsurvey.output.table import print_survey
from regsurvey.repo.sources import SourcePaths

from ..layer_survey import edited

# The library: fused_experts launches expert_matmul twice (gate/up, then down) with an activation between.
LIBRARY = '''"""An MoE layer's launcher in the style of a serving engine's: one call, three launches."""

import torch
import triton
import triton.language as tl


@triton.jit
def expert_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=rn[None, :] < N, other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def silu_inplace(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(x_ptr + offs, (x * tl.sigmoid(x)).to(x_ptr.dtype.element_ty), mask=mask)


def _gemm(a, b):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    expert_matmul[(triton.cdiv(M, 16), triton.cdiv(N, 64))](a, b, c, M, N, K, BLOCK_M=16, BLOCK_N=64,
                                                            BLOCK_K=64, num_warps=4, num_stages=2)
    return c


def fused_experts(x, w1, w2):
    """x @ w1, SiLU, then @ w2."""
    h = _gemm(x, w1)
    silu_inplace[(triton.cdiv(h.numel(), 1024),)](h, h.numel(), BLOCK=1024)
    return _gemm(h, w2)


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4)],
                 key=["n"])
@triton.jit
def tuned_scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def scale_twice(x):
    """Two autotuned launches in one call."""
    for _ in range(2):
        tuned_scale[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, x.numel())
'''

KEYS = '''"""Keys of the MoE layer: named launches, unnamed ones, and names in launch order over every kernel."""

import namedmoe

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[2], labels={"width": "w"})


def _layer(width):
    x = rs.tensor((width, 256), "bf16")
    namedmoe.fused_experts(x, rs.tensor((256, 512), "bf16"), rs.tensor((512, 256), "bf16"))


@matrix.kind(axes=["width"])
def moe(width):
    rs.names("gate_up", "down", kernel=namedmoe.expert_matmul)  # the activation between keeps no name
    _layer(width)


@matrix.kind(axes=["width"])
def unnamed(width):
    _layer(width)


@matrix.kind(axes=["width"])
def in_order(width):
    rs.names("gate_up", "act", "down", "spare")  # one name more than the layer launches
    _layer(width)


@matrix.kind(axes=["width"])
def tuned(width):
    rs.names("first", "second", kernel="tuned_scale")  # an autotuned launch is one launch, its configs many rows
    namedmoe.scale_twice(rs.tensor((width, 4096), "fp32"))
'''

AMD = "gfx950"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Worker]]:
    root = tmp_path_factory.mktemp("names") / "repo"
    (root / "keys").mkdir(parents=True)
    (root / "namedmoe").mkdir()
    (root / "namedmoe" / "__init__.py").write_text(LIBRARY)
    (root / "keys" / "moe.py").write_text(KEYS)
    sys.path.insert(0, str(root))
    try:
        yield root, Worker(root, root / "keys", root.parent / "store" / "objects", AMD)
    finally:
        sys.path.remove(str(root))


@pytest.fixture(scope="module")
def surveyed(project: tuple[Path, Worker]) -> Survey:
    _, worker = project
    keys = expand_keys(list(worker.kinds().values()), [AMD])
    rows = [row for key in keys for row in worker.survey_key(key)]
    return Survey(commit="a" * 40, label="base", targets=(AMD,), toolchain={}, rows=tuple(rows))


def rows_of(survey: Survey, kind: str) -> list[Row]:
    return [r for r in survey.rows if r.kind == kind]


def survey_text(survey: Survey, width: int) -> str:
    """``regsurvey run``'s tables as a terminal of ``width`` columns shows them (plain text)."""
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    print_survey(survey, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_names_in_launch_order_name_each_launch_of_one_library_call(surveyed: Survey) -> None:
    # moe: the names go to expert_matmul's launches only; the activation between keeps none.
    moe = rows_of(surveyed, "moe")
    assert [(r.kernel, r.name, r.launch) for r in moe] == [
        ("expert_matmul", "gate_up", 0), ("silu_inplace", None, 1), ("expert_matmul", "down", 2)]
    assert all(r.ok and r.resources["vgpr"] > 0 for r in moe), [r.error for r in moe]
    # in_order: one name per launch, whatever the kernel; the name left over is said with the key.
    in_order = rows_of(surveyed, "in_order")
    assert [r.name for r in in_order] == ["gate_up", "act", "down"]
    assert in_order[0].messages == [
        "rs.names: 'spare' named no launch (the kind body made 3 launches after naming 4)"]
    assert rows_of(surveyed, "unnamed")[0].name is None and not moe[0].messages
    # tuned: each autotuned launch is a row per config, all under the launch's name.
    assert [(r.name, r.config, r.launch) for r in rows_of(surveyed, "tuned")] == [
        ("first", 0, 0), ("first", 1, 1), ("second", 0, 2), ("second", 1, 3)]
    # Both GEMMs are the same build (one Triton hash): the down GEMM took the gate/up's compile.
    assert moe[0].triton_hash == moe[2].triton_hash and moe[2].reused and moe[2].resources == moe[0].resources


def test_two_launches_of_one_kernel_are_two_rows_of_the_survey_table(surveyed: Survey) -> None:
    text = survey_text(surveyed, 200)
    kernels = {}
    for line in text.splitlines():
        cells = re.split(r" {2,}", line)  # the key, target and kernel stand two blanks apart at least
        if len(cells) > 3 and cells[1] == AMD:
            kernels.setdefault(cells[0], []).append(cells[2])
    assert kernels == {
        "moe/w2": ["expert_matmul [gate_up]", "silu_inplace", "expert_matmul [down]"],
        "unnamed/w2": ["expert_matmul [launch 0]", "silu_inplace", "expert_matmul [launch 2]"],
        "in_order/w2": ["expert_matmul [gate_up]", "silu_inplace [act]", "expert_matmul [down]"],
        "tuned/w2": ["tuned_scale [first, cfg 0]", "tuned_scale [first, cfg 1]", "tuned_scale [second, cfg 0]",
                     "tuned_scale [second, cfg 1]"],
    }


def test_every_report_names_the_build_alike(project: tuple[Path, Worker], surveyed: Survey) -> None:
    root, worker = project
    down = next(r for r in surveyed.rows if r.key == "moe/w2" and r.name == "down")
    spill = down.resources["vgpr_spill"]
    head = edited(surveyed, {(down.row_id, AMD): {"vgpr_spill": spill + 4}}, commit="b" * 40, label="head")
    comparison = compare(surveyed, head)
    (changed,) = comparison.regressions
    name = build_names(head.rows)[(AMD, down.row_id)]
    assert (str(name), name.text) == ("moe/w2 expert_matmul [down]", "expert_matmul [down]")
    assert changed.name == name
    # The diff: table, Markdown, JSON, HTML and the summary.
    table = TableFormat(width=200).format(comparison)
    assert re.search(rf"\nmoe/w2 +gfx950 +expert_matmul \[down\] +{spill} → {spill + 4} \(\+4\)\n", table)
    assert f"| **worse** | `moe/w2` | gfx950 | `expert_matmul [down]` | Vspill {spill} → {spill + 4} (+4) |" in \
        MarkdownFormat().format(comparison)
    (data,) = [r for r in comparison_dict(comparison)["rows"] if r["mark"] == "worse"]
    assert (data["row_id"], data["label"]) == ("moe/w2#2", "expert_matmul [down]")
    (html,) = [r for r in comparison_data(comparison, "x")["rows"] if r["mark"] == "worse"]
    assert html["kernel_text"] == "expert_matmul [down]"
    assert summarize(comparison).texts[0] == (f"adds VGPR spills to moe (expert_matmul [down]) w2 on gfx950 "
                                              f"({spill} → {spill + 4})")
    # The check: its report and SARIF say the same sentence.
    result = judge(comparison, Baseline())
    (problem,) = result.problems
    message = (f"moe/w2 on gfx950 (expert_matmul [down]): VGPR spills {spill} → {spill + 4}; "
               "no baseline entry allows it")
    assert (problem.rule, problem_message(problem)) == (NEW_SPILL, message)
    assert f"- moe/w2 on gfx950 (expert_matmul \\[down\\]): VGPR spills {spill} → {spill + 4}" in \
        format_gate(result)
    (sarif,) = sarif_log(result, {problem.row.ref: build_site(problem.row, root)})["runs"][0]["results"]
    assert sarif["message"]["text"] == message and sarif["properties"]["name"] == "expert_matmul [down]"
    # The launch site is the library's line that launched the down GEMM (inside this repository).
    assert sarif["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "namedmoe/__init__.py"
    # explain.
    explained = Explained(down, pressure_of(down, worker.objects), name)
    assert format_text([explained], SourcePaths(root, None)).startswith(
        "moe/w2 on gfx950: kernel expert_matmul [down], ")


def test_what_a_kind_body_said_is_a_line_under_the_table(surveyed: Survey) -> None:
    """A serving engine's launcher logs 70 to 100 characters a key: said in a cell, it widened the first
    figure column (VGPR) for every row. On a terminal of 160 columns the VGPR column stays as wide as its
    header, and what was said is a line of its own under the key's last row, cut to the terminal."""
    said = ("INFO vllm.model_executor.layers.fused_moe.fused_moe: Using configuration from "
            "/opt/vllm/configs/E=8,N=14336,device_name=AMD_Instinct_MI355X.json for MoE layer.")
    told = replace(surveyed, rows=tuple(replace(r, messages=[said, "UserWarning: a second line"])
                                        if r.key == "moe/w2" else r for r in surveyed.rows))
    lines = survey_text(told, 160).splitlines()
    header = next(line for line in lines if line.startswith("key "))
    end = header.index("VGPR") + len("VGPR")  # figures stand right-justified under their headers
    assert header[header.index("VGPR") - 1] == " " and header[end] == " ", header
    # Every build's VGPR count stands whole in its column, a row a line.
    names = build_names(told.rows)
    for row in told.rows:
        (line,) = [ln for ln in lines if ln.startswith(f"{row.key} ") and f" {names[(AMD, row.row_id)].text} " in ln]
        assert line[:end].split()[-1] == str(row.resources["vgpr"]), line
    # What the key said: its first message, a line under the key's last row (its down GEMM), cut to 160.
    down = next(i for i, line in enumerate(lines) if line.startswith("moe/w2 ") and "expert_matmul [down]" in line)
    message = lines[down + 1]
    assert message.startswith("    said: INFO vllm.model_executor.layers.fused_moe.fused_moe: Using"), message
    assert message.endswith("… (+1 more)") and len(message) <= 160
    assert [line for line in lines if " said: " in line] == [message, next(
        line for line in lines if line.startswith("    said: rs.names: 'spare' named no launch"))]
