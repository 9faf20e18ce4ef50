"""``regsurvey stack`` and ``diff`` on a project of three commits (real compiles, about 12 s cold): the second
inserts a config in front of an autotuned kernel's two and moves one of them (its builds are paired by
what each config built them with, whatever its index: issue 35's defect 3, fla's ``chunk_fwd_kernel_o``
under Triton 3.9) and widens a GEMM's K tile until its LDS outgrows a gfx950 CU (the build can no longer
launch: defect 4, flag_gems' ``mm``); the third changes a config's ``num_warps`` in place (paired by its
index: a changed build). Every format says the same of both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.results import Survey

from ..conftest import commit_all, git
from ..readings import independent_reading
from .runner import invoke

OPS = '''"""An autotuned kernel and a GEMM whose K tile is a constexpr."""

import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=2)]
BLOCK_K = 64


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def axpy_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(y_ptr + offs, mask=m) + alpha * tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty))


def axpy(x: torch.Tensor, y: torch.Tensor, alpha: float) -> None:
    n = x.numel()
    axpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, alpha)


def gemm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    matmul[(triton.cdiv(M, 128), triton.cdiv(N, 128))](a, b, c, M, N, K, BLOCK_M=128, BLOCK_N=128,
                                                      BLOCK_K=BLOCK_K, num_warps=4, num_stages=2)
    return c
'''

KEYS = '''"""Keys of the tiles project."""

from tiles import ops

import regsurvey as rs

axpy_matrix = rs.Matrix(targets=["gfx950", "sm90"], n=[4096])
gemm_matrix = rs.Matrix(targets=["gfx950"], k=[1024])


@axpy_matrix.kind(axes=["n"])
def axpy(n):
    ops.axpy(rs.tensor((n,), "fp32"), rs.tensor((n,), "fp32"), 2.0)


@gemm_matrix.kind(axes=["k"])
def gemm(k):
    ops.gemm(rs.tensor((256, k), "bf16"), rs.tensor((k, 256), "bf16"))
'''

# The second commit: a config (BLOCK 512) in front, the two after it in the other order; a 256-wide K tile,
# whose two stages of 128x256 and 256x128 bf16 tiles take more LDS than a CU has.
INSERTED = ('CONFIGS = [triton.Config({"BLOCK": 512}, num_warps=8), triton.Config({"BLOCK": 128}, num_warps=2),\n'
            '           triton.Config({"BLOCK": 256}, num_warps=4)]')
# The third: the last config's num_warps changed in place.
IN_PLACE = INSERTED.replace('{"BLOCK": 256}, num_warps=4', '{"BLOCK": 256}, num_warps=8')
MOVED = "axpy/n4096@cfg0->axpy/n4096#2@cfg2"  # the (256, 4) config: the base's first, the head's last


def edit(repo: Path, old: str, new: str) -> None:
    ops = repo / "tiles" / "ops.py"
    text = ops.read_text()
    assert old in text
    ops.write_text(text.replace(old, new))


@pytest.fixture(scope="module")
def tiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The project's three commits, ``stack``ed once as JSON (each commit surveyed and stored)."""
    root = tmp_path_factory.mktemp("tiles")
    repo = root / "tiles"
    (repo / "tiles").mkdir(parents=True)
    (repo / "keys").mkdir()
    (repo / "tiles" / "__init__.py").write_text("")
    (repo / "tiles" / "ops.py").write_text(OPS)
    (repo / "keys" / "tiles.py").write_text(KEYS)
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "axpy and gemm")
    edit(repo, OPS.splitlines()[6], INSERTED)
    edit(repo, "BLOCK_K = 64", "BLOCK_K = 256")
    commit_all(repo, "a config in front, a wider K tile")
    edit(repo, INSERTED, IN_PLACE)
    commit_all(repo, "8 warps for 256-wide blocks")
    common = ("-C", repo, "--store", root / "store", "-q")
    result = invoke("stack", "HEAD~2..HEAD", *common, "--format", "json")
    assert result.exit_code == 0, result.stderr
    shas = [git(repo, "rev-parse", f"HEAD~{n}") for n in (2, 1, 0)]
    return {"data": json.loads(result.stdout), "common": common, "store": root / "store", "shas": shas}


def rows(comparison: dict[str, Any]) -> dict[tuple[str, str], tuple[str, str, list[Any]]]:
    """(target, row id) -> (mark, label, what the build was made with that differs)."""
    return {(r["target"], r["row_id"]): (r["mark"], r["label"], r["build_changes"]) for r in comparison["rows"]}


def head_row(tiles: dict[str, Any], sha: str, key: str, target: str) -> dict[str, Any]:
    survey = Survey.from_json((tiles["store"] / "surveys" / sha / f"{target}.json").read_text())
    return next(r.to_dict() for r in survey.rows if r.key == key)


def test_configs_are_paired_by_what_they_build_not_by_their_place(tiles: dict[str, Any]) -> None:
    inserted, in_place = (step["comparison"] for step in tiles["data"]["steps"])
    for target in ("gfx950", "sm90"):
        axpy = {ref: v for ref, v in rows(inserted).items() if ref[0] == target and ref[1].startswith("axpy")}
        assert axpy == {
            (target, "axpy/n4096@cfg0"): ("added", "axpy_kernel [cfg 0]", []),  # (512, 8): new
            (target, "axpy/n4096#1@cfg1"): ("unchanged", "axpy_kernel [cfg 1]", []),  # (128, 2): stayed
            (target, MOVED): ("unchanged", "axpy_kernel [cfg 0 -> 2]", []),  # (256, 4): moved to the end
        }
        moved = next(r for r in inserted["rows"] if r["target"] == target and r["row_id"] == MOVED)
        assert (moved["before"]["config"], moved["after"]["config"], moved["config"], moved["launch"]) == (0, 2, 2, 2)
        assert moved["before"]["build"] == moved["after"]["build"] == {"BLOCK": 256}
        # The third commit changes that config in place: paired by its index, a build made otherwise.
        mark, label, changes = rows(in_place)[(target, "axpy/n4096#2@cfg2")]
        assert (label, changes) == ("axpy_kernel [cfg 2]", [
            {"name": "num_warps", "before": 4, "after": 8, "constexpr": False}])
        assert mark != "added"
    # The only line of axpy: the (512, 8) config, one a target; none says a build changed (the moved config
    # built the same kernel).
    summary = [line["text"] for line in inserted["summary"] if "axpy" in line["text"]]
    assert summary == ["adds 2 builds: axpy n4096 on gfx950 and sm90 (2 of 6 builds)"]
    assert inserted["counts"]["added"] == 2 and inserted["counts"]["removed"] == 0
    assert tiles["data"]["overall"]["counts"]["added"] == 2  # the range's ends: the same pairing


def test_a_gemm_that_outgrows_the_cu_can_no_longer_launch(tiles: dict[str, Any]) -> None:
    inserted = tiles["data"]["steps"][0]["comparison"]
    # Its figures as read without regsurvey: the LDS of the TTGIR's buffers, allocated again; LLVM's occupancy
    # told that LDS (none: it is above the CU's 160 KiB).
    read = independent_reading(tiles["store"], head_row(tiles, tiles["shas"][1], "gemm/k1024", "gfx950"))
    lds = read["lds_bytes"]
    assert lds > 163840 and read["occupancy"] == 0
    assert rows(inserted)[("gfx950", "gemm/k1024")][0] == "worse"
    line = next(line for line in inserted["summary"] if "can no longer launch" in line["text"])
    assert (line["text"], line["tone"], line["rows"]) == (
        f"1 build of gemm k1024 on gfx950 can no longer launch (LDS {lds} B, above the CU's 163840 B); built "
        "with BLOCK_K 64 -> 256", "worse", ["gfx950:gemm/k1024"])
    assert inserted["summary"][0] == line  # the first of the worse lines
    assert not any(line["text"].startswith("lowers occupancy") for line in inserted["summary"])


@pytest.mark.parametrize("form", ["markdown", "table", "html", "csv"])
def test_every_format_says_the_same(tiles: dict[str, Any], form: str, tmp_path: Path) -> None:
    out = tmp_path / f"diff.{form}"
    result = invoke("diff", "HEAD~2", "HEAD~1", *tiles["common"], "--format", form, "--columns", "200", "-o", out)
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    lds = head_row(tiles, tiles["shas"][1], "gemm/k1024", "gfx950")["resources"]["lds_bytes"]
    said = f"can no longer launch (LDS {lds} B, above the CU's 163840 B)"
    if form == "csv":
        assert text.count("axpy_kernel [cfg 0 -> 2],axpy_kernel,2,2,unchanged,") == 2
        return
    escaped = said.replace("'", "\\u0027") if form == "html" else said
    assert escaped in text or said in text
    assert "can no longer launch: LDS" in text  # the build's own change, under its row or in its column
    # No config is said to be remade; the moved one is listed only where unchanged builds are (HTML).
    arrow = "\\u2192" if form == "html" else "→"
    assert f"num_warps 4 {arrow} 8" not in text and f"BLOCK 256 {arrow} 512" not in text
    assert (f"axpy_kernel [cfg 0 {arrow} 2]" in text) == (form == "html")


def test_the_gate_says_the_build_can_no_longer_launch(tiles: dict[str, Any]) -> None:
    result = invoke("check", "--base", "HEAD~2", "--head", "HEAD~1", *tiles["common"])
    assert result.exit_code == 1, result.stderr
    lds = head_row(tiles, tiles["shas"][1], "gemm/k1024", "gfx950")["resources"]["lds_bytes"]
    problems = [line for line in result.stdout.splitlines() if line.startswith("- gemm/k1024")]
    assert problems == [f"- gemm/k1024 on gfx950 (matmul): occupancy 2 → 0 waves/SIMD (can no longer launch: LDS "
                        f"{lds} B, above the CU's 163840 B); no baseline entry allows it"]
    assert "axpy" not in result.stdout.split("### Registers")[0]  # the moved configs fail nothing
