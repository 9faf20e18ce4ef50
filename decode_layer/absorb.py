"""The absorbed-MLA per-head matmuls around decode attention.

Absorbed MLA never expands the cached latent into per-head keys and values. Instead the query is
moved into latent space and the output moved back, one small matmul per head:

* :func:`q_absorb` -- ``q_mla[:, h, :512] = q_nope[:, h] @ W_UK[h]`` (128 -> 512) with the query's
  64 rope dims rotated (NeoX style) into ``q_mla[:, h, 512:]``, giving mla_decode its input;
* :func:`v_up` -- ``o[:, h] = attn_latent[:, h] @ W_UV[h]`` (512 -> 128), giving o_proj its input.

W_UK and W_UV are the halves of kv_b_proj, kept per head in bf16. Decode has few rows, so a program
takes one head and one tile of output columns for a 16-row block.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .device import device_of, width_bucket
from .masks import none_left, unfinished

BLOCK_M = 16

# (BLOCK_N, BLOCK_K, num_warps, num_stages) per family and width bucket.
_TILES: dict[str, dict[int, tuple[int, int, int, int]]] = {
    "amd": {1: (64, 64, 4, 2), 2: (64, 64, 4, 2), 4: (128, 64, 4, 2), 8: (128, 128, 8, 2),
            16: (128, 128, 8, 2)},
    "nvidia": {1: (64, 64, 4, 3), 2: (64, 64, 4, 3), 4: (128, 64, 4, 3), 8: (128, 128, 4, 3),
               16: (128, 128, 8, 3)},
    "cpu": {b: (64, 64, 4, 1) for b in (1, 2, 4, 8, 16)},
}


@triton.jit
def head_bmm_kernel(
    a_ptr, w_ptr, out_ptr, finished_ptr, cos_sin_ptr, positions_ptr,
    M, stride_am, stride_ah, stride_wh, stride_wk, stride_om, stride_oh, stride_cs,
    N: tl.constexpr, K: tl.constexpr, ROPE_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STOP: tl.constexpr,
):
    """out[m, h, :N] = a[m, h, :K] @ w[h] (bf16 in, fp32 accumulate).

    With ROPE_DIM > 0 the ROPE_DIM values after a's first K (the head's rope part) are rotated by
    the row's position and written after out's first N, by the head's first column tile.
    """
    head = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_m = tl.program_id(2)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    if STOP:
        row_ok = unfinished(row_ok, finished_ptr, rows)
        if none_left(row_ok):
            return
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_rows = a_ptr + rows[:, None] * stride_am + head * stride_ah
    w_head = w_ptr + head.to(tl.int64) * stride_wh
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K):
        a = tl.load(a_rows + k0 + ks[None, :], mask=row_ok[:, None], other=0.0)
        w = tl.load(w_head + (k0 + ks)[:, None] * stride_wk + cols[None, :])
        acc = tl.dot(a, w, acc)
    out_rows = out_ptr + rows[:, None] * stride_om + head * stride_oh
    tl.store(out_rows + cols[None, :], acc.to(out_ptr.dtype.element_ty), mask=row_ok[:, None])

    if ROPE_DIM > 0:
        if pid_n == 0:
            half = tl.arange(0, ROPE_DIM // 2)
            x1 = tl.load(a_rows + K + half[None, :], mask=row_ok[:, None], other=0.0).to(tl.float32)
            x2 = tl.load(a_rows + K + ROPE_DIM // 2 + half[None, :], mask=row_ok[:, None],
                         other=0.0).to(tl.float32)
            pos = tl.load(positions_ptr + rows, mask=row_ok, other=0)
            cs = cos_sin_ptr + pos[:, None] * stride_cs + half[None, :]
            cos = tl.load(cs, mask=row_ok[:, None], other=0.0)
            sin = tl.load(cs + ROPE_DIM // 2, mask=row_ok[:, None], other=0.0)
            ty = out_ptr.dtype.element_ty
            tl.store(out_rows + N + half[None, :], (x1 * cos - x2 * sin).to(ty), mask=row_ok[:, None])
            tl.store(out_rows + N + ROPE_DIM // 2 + half[None, :], (x2 * cos + x1 * sin).to(ty),
                     mask=row_ok[:, None])


def _launch(a: torch.Tensor, w: torch.Tensor, out: torch.Tensor, *, rows: int, heads: int,
            stride_am: int, stride_ah: int, stride_om: int, stride_oh: int, rope_dim: int,
            cos_sin: torch.Tensor | None, positions: torch.Tensor | None,
            finished: torch.Tensor | None) -> None:
    _, k, n = w.shape
    if w.stride(2) != 1:
        raise ValueError("per-head weights must be contiguous along their output dimension")
    block_n, block_k, num_warps, num_stages = _TILES[device_of(a).family][width_bucket(rows)]
    block_n, block_k = min(block_n, n), min(block_k, k)
    if n % block_n or k % block_k:
        raise ValueError(f"per-head weight [{k}, {n}] must tile by {block_k} x {block_n}")
    grid = (heads, n // block_n, triton.cdiv(rows, BLOCK_M))
    head_bmm_kernel[grid](
        a, w, out, finished, cos_sin, positions,
        rows, stride_am, stride_ah, w.stride(0), w.stride(1), stride_om, stride_oh,
        cos_sin.stride(0) if cos_sin is not None else 0,
        N=n, K=k, ROPE_DIM=rope_dim, BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=block_k,
        STOP=finished is not None,
        num_warps=num_warps, num_stages=num_stages,
    )


def q_absorb(q: torch.Tensor, w_uk: torch.Tensor, cos_sin: torch.Tensor, positions: torch.Tensor,
             q_mla: torch.Tensor, *, finished: torch.Tensor | None = None) -> None:
    """q_b's output per head (128 nope | 64 rope) -> mla_decode's query (512 latent | 64 roped).

    q: [rows, heads * 192] bf16; w_uk: [heads, 128, 512] bf16; cos_sin: [max_pos, 64] fp32 (cos |
    sin); positions: [rows] int32; q_mla: [rows, heads, 576] bf16.
    """
    heads, nope, latent = w_uk.shape
    rows = q.shape[0]
    head_dim = q.shape[1] // heads
    rope = head_dim - nope
    if q.stride(1) != 1 or q_mla.stride(2) != 1 or q_mla.shape[2] != latent + rope:
        raise ValueError("q and q_mla must be contiguous per head, q_mla [rows, heads, 512 + rope]")
    _launch(q, w_uk, q_mla, rows=rows, heads=heads, stride_am=q.stride(0), stride_ah=head_dim,
            stride_om=q_mla.stride(0), stride_oh=q_mla.stride(1), rope_dim=rope,
            cos_sin=cos_sin, positions=positions, finished=finished)


def v_up(attn: torch.Tensor, w_uv: torch.Tensor, out: torch.Tensor, *,
         finished: torch.Tensor | None = None) -> None:
    """mla_decode's latent output -> per-head values for o_proj: out[:, h*128:(h+1)*128] = attn[:, h] @ W_UV[h].

    attn: [rows, heads, 512] bf16; w_uv: [heads, 512, 128] bf16; out: [rows, heads * 128] bf16.
    """
    heads, _, v_dim = w_uv.shape
    if attn.stride(2) != 1 or out.stride(1) != 1:
        raise ValueError("attn and out must be contiguous in their last dimension")
    _launch(attn, w_uv, out, rows=attn.shape[0], heads=heads, stride_am=attn.stride(0),
            stride_ah=attn.stride(1), stride_om=out.stride(0), stride_oh=v_dim, rope_dim=0,
            cos_sin=None, positions=None, finished=finished)
