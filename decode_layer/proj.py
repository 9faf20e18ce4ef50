"""The layer's dense projections: fp8 (e4m3, 128x128 block-scaled) GEMMs for decode widths.

One kernel, three launchers, as the layer uses it:

* :func:`front_proj` -- input RMSNorm fused with the q_a | kv_a front projection
  (2,624 rows = q_lora 2048 + kv_lora 512 + rope 64, over the 6,144-wide hidden state);
* :func:`q_b_proj` -- q_a_layernorm fused with q_b (q_lora -> heads * (128 nope + 64 rope));
* :func:`o_proj` -- o_proj (heads * v_head_dim -> hidden) with the residual add.

Activations are quantised on the fly to fp8 in 1x128 groups (DeepSeek-V3's activation blocks), so
each K step is one fp8 x fp8 MMA scaled by the activation group scale and the weight block scale.
The fused RMSNorm does not need a separate pass: ``rmsnorm(x) @ W.T == rstd * ((x * g) @ W.T)`` per
row, so the sum of squares is gathered from the same x tiles the GEMM loads and ``rstd`` is applied
in the epilogue. Group quantisation is scale invariant per row, so quantising ``x * g`` instead of
the normalised row gives the same fp8 codes.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .device import Device, device_of, fp8_max, width_bucket
from .masks import none_left, unfinished

SCALE_BLOCK = 128  # weights carry one fp32 scale per 128x128 block; activations per 1x128 group
BLOCK_M = 16  # the smallest MMA M on every target: decode widths (2..8 rows) pad up to it

# (BLOCK_N, num_warps, num_stages) per family and width bucket, tuned per decode width the way
# production launchers ship per-M configs. Wider batches move more activation bytes per weight
# tile, so they get wider N tiles; NVIDIA keeps more TMA-free cp.async stages in flight.
_TILES: dict[str, dict[int, tuple[int, int, int]]] = {
    "amd": {1: (32, 4, 2), 2: (32, 4, 2), 4: (64, 4, 2), 8: (64, 8, 2), 16: (128, 8, 2)},
    "nvidia": {1: (32, 4, 3), 2: (32, 4, 3), 4: (64, 4, 3), 8: (64, 4, 4), 16: (128, 8, 3)},
    "cpu": {1: (32, 4, 1), 2: (32, 4, 1), 4: (32, 4, 1), 8: (32, 4, 1), 16: (32, 4, 1)},
}


@triton.jit
def fp8_linear_kernel(
    x_ptr, w_ptr, w_scale_ptr, out_ptr, norm_w_ptr, residual_ptr, finished_ptr,
    M, stride_xm, stride_wn, stride_wsn, stride_om, stride_rm,
    eps,
    N: tl.constexpr, K: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    NORM: tl.constexpr, RESIDUAL: tl.constexpr, STOP: tl.constexpr, FP8_MAX: tl.constexpr,
):
    """out[m, n] = (rstd[m] if NORM) * sum_k q(x[m, k] * g[k]) w[n, k] (+ residual[m, n] if RESIDUAL).

    x: [M, K] bf16; w: [N, K] fp8 with w_scale [cdiv(N, 128), K / 128] fp32; out: [M, N] bf16.
    The weight's shape (N, K) is a compile-time constant, as in DeepSeek-V3's reference fp8 GEMM: each
    weight gets its own build (known trip count, no K masking). BLOCK_K must equal the 128-wide scale
    block. With STOP, rows whose ``finished`` flag is set are
    neither loaded nor stored, and a tile whose rows are all finished skips the weight stream.
    """
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    if STOP:
        row_ok = unfinished(row_ok, finished_ptr, rows)
        if none_left(row_ok):
            return
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    ks = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rows[:, None].to(tl.int64) * stride_xm + ks[None, :]
    w_ptrs = w_ptr + cols[None, :].to(tl.int64) * stride_wn + ks[:, None]
    ws_ptrs = w_scale_ptr + (cols // BLOCK_K) * stride_wsn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    sumsq = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        # K is a multiple of BLOCK_K (checked by the launcher): no K masks.
        x = tl.load(x_ptrs, mask=row_ok[:, None], other=0.0).to(tl.float32)
        if NORM:
            sumsq += tl.sum(x * x, axis=1)
            g = tl.load(norm_w_ptr + k0 + ks).to(tl.float32)
            x = x * g[None, :]
        # Dynamic 1x128 activation quantisation: one scale per row and K step.
        a_scale = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-12) / FP8_MAX
        xq = (x / a_scale[:, None]).to(w_ptr.dtype.element_ty)
        w = tl.load(w_ptrs, mask=col_ok[None, :], other=0.0)
        w_scale = tl.load(ws_ptrs + k0 // BLOCK_K, mask=col_ok, other=0.0)
        acc += tl.dot(xq, w) * a_scale[:, None] * w_scale[None, :]
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    if NORM:
        rstd = 1.0 / tl.sqrt(sumsq / K + eps)
        acc = acc * rstd[:, None]
    out_mask = row_ok[:, None] & col_ok[None, :]
    if RESIDUAL:
        res = tl.load(residual_ptr + rows[:, None] * stride_rm + cols[None, :], mask=out_mask, other=0.0)
        acc += res.to(tl.float32)
    tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=out_mask)


def _check_operands(x: torch.Tensor, w: torch.Tensor, w_scale: torch.Tensor, out: torch.Tensor) -> None:
    m, k = x.shape
    n, k_w = w.shape
    if k_w != k or k % SCALE_BLOCK:
        raise ValueError(f"x is [{m}, {k}] and w is [{n}, {k_w}]: K must match and be a multiple of 128")
    if tuple(w_scale.shape) != (triton.cdiv(n, SCALE_BLOCK), k // SCALE_BLOCK):
        raise ValueError(f"w_scale must be [{triton.cdiv(n, SCALE_BLOCK)}, {k // SCALE_BLOCK}], "
                         f"got {list(w_scale.shape)}")
    if tuple(out.shape) != (m, n):
        raise ValueError(f"out must be [{m}, {n}], got {list(out.shape)}")
    if x.stride(1) != 1 or w.stride(1) != 1 or w_scale.stride(1) != 1 or out.stride(1) != 1:
        raise ValueError("x, w, w_scale and out must be contiguous along K / N")


def _launch(x: torch.Tensor, w: torch.Tensor, w_scale: torch.Tensor, out: torch.Tensor, *,
            norm_weight: torch.Tensor | None, residual: torch.Tensor | None, eps: float,
            finished: torch.Tensor | None) -> None:
    _check_operands(x, w, w_scale, out)
    m, k = x.shape
    n = w.shape[0]
    dev: Device = device_of(x)
    block_n, num_warps, num_stages = _TILES[dev.family][width_bucket(m)]
    grid = (triton.cdiv(n, block_n), triton.cdiv(m, BLOCK_M))
    fp8_linear_kernel[grid](
        x, w, w_scale, out, norm_weight, residual, finished,
        m, x.stride(0), w.stride(0), w_scale.stride(0), out.stride(0),
        residual.stride(0) if residual is not None else 0,
        eps,
        N=n, K=k, BLOCK_M=BLOCK_M, BLOCK_N=block_n, BLOCK_K=SCALE_BLOCK,
        NORM=norm_weight is not None, RESIDUAL=residual is not None, STOP=finished is not None,
        FP8_MAX=fp8_max(w.dtype),
        num_warps=num_warps, num_stages=num_stages,
    )


def front_proj(x: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, w_scale: torch.Tensor,
               out: torch.Tensor, *, eps: float = 1e-6, finished: torch.Tensor | None = None) -> None:
    """Input RMSNorm + the fused q_a | kv_a projection: ``out = rmsnorm(x, norm_weight) @ w.T``.

    x: [width, hidden] bf16; w: [q_lora + kv_lora + rope, hidden] fp8 e4m3 with w_scale
    [cdiv(rows, 128), hidden / 128] fp32; out: [width, rows] bf16 (q_lora | kv_lora | k_rope).
    finished: optional [width] int32, nonzero for rows that stopped (their rows are skipped).
    """
    _launch(x, w, w_scale, out, norm_weight=norm_weight, residual=None, eps=eps, finished=finished)


def q_b_proj(q_lora: torch.Tensor, norm_weight: torch.Tensor, w: torch.Tensor, w_scale: torch.Tensor,
             out: torch.Tensor, *, eps: float = 1e-6, finished: torch.Tensor | None = None) -> None:
    """q_a_layernorm + q_b: ``out = rmsnorm(q_lora, norm_weight) @ w.T``.

    q_lora: [width, q_lora_rank] bf16 (may be a strided view of front_proj's output); w:
    [heads * (qk_nope + rope), q_lora_rank] fp8 with its block scales; out: [width, heads * 192] bf16.
    """
    _launch(q_lora, w, w_scale, out, norm_weight=norm_weight, residual=None, eps=eps, finished=finished)


def o_proj(attn: torch.Tensor, w: torch.Tensor, w_scale: torch.Tensor, residual: torch.Tensor,
           out: torch.Tensor, *, finished: torch.Tensor | None = None) -> None:
    """o_proj with the residual add: ``out = residual + attn @ w.T`` (out may alias residual).

    attn: [width, heads * v_head_dim] bf16; w: [hidden, heads * v_head_dim] fp8 with block scales;
    residual, out: [width, hidden] bf16.
    """
    _launch(attn, w, w_scale, out, norm_weight=None, residual=residual, eps=0.0, finished=finished)
