"""Routed experts: expert alignment, then fp8 block-scaled up/gate (+SiLU*mul) and down GEMMs.

The layout is the fused-MoE one production engines use: the (token, k) slots are sorted by expert
and each expert's run is padded to BLOCK_M rows, so one program multiplies one expert's weight tile
by up to BLOCK_M gathered token rows. :func:`moe_align` builds that layout on the GPU from the top-k
ids (one program: decode has at most a few dozen slots). Weights are fp8 e4m3 with one FP32 scale
per 128x128 block; activations are quantised on the fly per 1x128 group, so every K step is an fp8
MMA scaled by both.

* up/gate: ``h[slot] = silu(x[token] @ W_gate[e].T) * (x[token] @ W_up[e].T)``, W13 = gate | up rows;
* down: ``y[slot] = routing_weight[slot] * (h[slot] @ W_down[e].T)``; the caller sums a token's
  slots (and adds the shared expert) as it combines the layer's output.

With STOP, slots whose token already finished are masked out of the loads and stores, and a block
whose slots all finished returns before streaming its expert's weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from .device import device_of, fp8_max, next_power_of_2, width_bucket
from .masks import none_left, unfinished

MOE_BLOCK_M = 16  # slots per expert block: decode routes few tokens to each expert
SCALE_BLOCK = 128

# (BLOCK_N, num_warps, num_stages) per family and width bucket, for each GEMM.
_UP_GATE_TILES: dict[str, dict[int, tuple[int, int, int]]] = {
    "amd": {1: (32, 4, 2), 2: (32, 4, 2), 4: (64, 4, 2), 8: (128, 8, 2), 16: (128, 8, 2)},
    "nvidia": {1: (32, 4, 3), 2: (32, 4, 3), 4: (64, 4, 4), 8: (128, 4, 3), 16: (128, 8, 3)},
    "cpu": {b: (32, 4, 1) for b in (1, 2, 4, 8, 16)},
}
_DOWN_TILES: dict[str, dict[int, tuple[int, int, int]]] = {
    "amd": {1: (64, 4, 2), 2: (64, 4, 2), 4: (128, 4, 2), 8: (128, 8, 2), 16: (128, 8, 2)},
    "nvidia": {1: (64, 4, 3), 2: (64, 4, 3), 4: (128, 4, 3), 8: (128, 4, 4), 16: (128, 8, 3)},
    "cpu": {b: (32, 4, 1) for b in (1, 2, 4, 8, 16)},
}


@dataclass(frozen=True)
class MoeRouting:
    """The expert-sorted slot layout one decode step's MoE GEMMs share (see :func:`moe_align`).

    sorted_slots: [max_blocks * BLOCK_M] int32, slot ids grouped by expert, padding = num_slots;
    block_experts: [max_blocks] int32, the expert of each block (-1 past the end);
    padded_slots: [1] int32, the number of sorted_slots entries in use (a multiple of BLOCK_M).
    """

    sorted_slots: torch.Tensor
    block_experts: torch.Tensor
    padded_slots: torch.Tensor
    num_slots: int  # rows * top-k
    block_m: int

    @staticmethod
    def empty(num_slots: int, device: torch.device | str, block_m: int = MOE_BLOCK_M) -> MoeRouting:
        """Uninitialised buffers for ``num_slots`` slots (every slot could open its own block)."""
        max_blocks = next_power_of_2(num_slots)
        return MoeRouting(
            torch.empty((max_blocks * block_m,), dtype=torch.int32, device=device),
            torch.empty((max_blocks,), dtype=torch.int32, device=device),
            torch.empty((1,), dtype=torch.int32, device=device),
            num_slots, block_m,
        )


@triton.jit
def moe_align_kernel(
    topk_ids_ptr, sorted_ptr, block_experts_ptr, padded_ptr, num_slots,
    SLOTS: tl.constexpr, NUM_EXPERTS: tl.constexpr, BLOCK_M: tl.constexpr,
):
    """Sort the slots by expert and pad each expert's run to BLOCK_M, in one program.

    SLOTS (a power of two >= num_slots) also bounds the blocks: every slot opens at most one.
    """
    s = tl.arange(0, SLOTS)
    ok = s < num_slots
    ids = tl.load(topk_ids_ptr + s, mask=ok, other=NUM_EXPERTS)  # padding matches no expert
    e = tl.arange(0, NUM_EXPERTS)
    onehot = ids[:, None] == e[None, :]
    counts = tl.sum(onehot.to(tl.int32), axis=0)
    blocks = (counts + BLOCK_M - 1) // BLOCK_M
    blocks_through = tl.cumsum(blocks, axis=0)
    first_block = blocks_through - blocks
    # A slot's place: its expert's first row plus how many earlier slots chose the same expert.
    earlier = (ids[:, None] == ids[None, :]) & (s[None, :] < s[:, None])
    rank = tl.sum(earlier.to(tl.int32), axis=1)
    start = tl.sum(tl.where(onehot, first_block[None, :], 0), axis=1) * BLOCK_M

    padded = tl.arange(0, SLOTS * BLOCK_M)
    tl.store(sorted_ptr + padded, tl.full((SLOTS * BLOCK_M,), 0, tl.int32) + num_slots)
    tl.debug_barrier()  # the padding fill must land before the scatter overwrites it
    tl.store(sorted_ptr + start + rank, s, mask=ok)

    b = tl.arange(0, SLOTS)
    total = tl.sum(blocks, axis=0)
    owner = tl.sum((blocks_through[None, :] <= b[:, None]).to(tl.int32), axis=1)
    tl.store(block_experts_ptr + b, tl.where(b < total, owner, -1))
    tl.store(padded_ptr, total * BLOCK_M)


def moe_align(topk_ids: torch.Tensor, num_experts: int, block_m: int = MOE_BLOCK_M) -> MoeRouting:
    """Build the expert-sorted layout for ``topk_ids`` [rows, top-k] int32 (allocates its outputs)."""
    num_slots = topk_ids.numel()
    if not topk_ids.is_contiguous():
        raise ValueError("topk_ids must be contiguous")
    routing = MoeRouting.empty(num_slots, topk_ids.device, block_m)
    moe_align_kernel[(1,)](
        topk_ids, routing.sorted_slots, routing.block_experts, routing.padded_slots, num_slots,
        SLOTS=next_power_of_2(num_slots), NUM_EXPERTS=num_experts, BLOCK_M=block_m,
        num_warps=4,
    )
    return routing


@triton.jit
def moe_up_gate_kernel(
    x_ptr, w_ptr, w_scale_ptr, out_ptr, sorted_ptr, block_experts_ptr, padded_ptr, finished_ptr,
    num_slots, stride_xm, stride_we, stride_wn, stride_wse, stride_wsn, stride_om,
    N: tl.constexpr, K: tl.constexpr, TOPK: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    FP8_MAX: tl.constexpr, STOP: tl.constexpr,
):
    """One expert block x BLOCK_N intermediate columns of ``silu(x W_gate^T) * (x W_up^T)``.

    x: [tokens, K] bf16; w: [experts, 2N, K] fp8 (gate rows, then up rows) with w_scale
    [experts, 2N / 128, K / 128] fp32; out: [num_slots, N] bf16.
    """
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    if pid_m * BLOCK_M >= tl.load(padded_ptr):
        return
    slots = tl.load(sorted_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
    slot_ok = slots < num_slots
    tokens = slots // TOPK
    if STOP:
        slot_ok = unfinished(slot_ok, finished_ptr, tokens)
        if none_left(slot_ok):
            return
    expert = tl.load(block_experts_ptr + pid_m).to(tl.int64)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + tokens[:, None].to(tl.int64) * stride_xm + ks[None, :]
    w_expert = w_ptr + expert * stride_we
    gate_ptrs = w_expert + cols[None, :] * stride_wn + ks[:, None]
    up_ptrs = gate_ptrs + N * stride_wn
    scale_expert = w_scale_ptr + expert * stride_wse
    gate_scale_ptrs = scale_expert + (cols // BLOCK_K) * stride_wsn
    up_scale_ptrs = scale_expert + ((cols + N) // BLOCK_K) * stride_wsn

    acc_gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K // BLOCK_K):
        x = tl.load(x_ptrs, mask=slot_ok[:, None], other=0.0).to(tl.float32)
        a_scale = tl.maximum(tl.max(tl.abs(x), axis=1), 1e-12) / FP8_MAX
        xq = (x / a_scale[:, None]).to(w_ptr.dtype.element_ty)
        w_gate = tl.load(gate_ptrs)
        w_up = tl.load(up_ptrs)
        s_gate = tl.load(gate_scale_ptrs + k)
        s_up = tl.load(up_scale_ptrs + k)
        acc_gate += tl.dot(xq, w_gate) * a_scale[:, None] * s_gate[None, :]
        acc_up += tl.dot(xq, w_up) * a_scale[:, None] * s_up[None, :]
        x_ptrs += BLOCK_K
        gate_ptrs += BLOCK_K
        up_ptrs += BLOCK_K

    h = acc_gate / (1.0 + tl.exp(-acc_gate)) * acc_up
    tl.store(out_ptr + slots[:, None] * stride_om + cols[None, :], h.to(out_ptr.dtype.element_ty),
             mask=slot_ok[:, None])


@triton.jit
def moe_down_kernel(
    h_ptr, w_ptr, w_scale_ptr, out_ptr, topk_weights_ptr, sorted_ptr, block_experts_ptr, padded_ptr,
    finished_ptr,
    num_slots, stride_hm, stride_we, stride_wn, stride_wse, stride_wsn, stride_om,
    N: tl.constexpr, K: tl.constexpr, TOPK: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    FP8_MAX: tl.constexpr, STOP: tl.constexpr,
):
    """One expert block x BLOCK_N hidden columns of ``routing_weight * (h W_down^T)``.

    h: [num_slots, K] bf16; w: [experts, N, K] fp8 with w_scale [experts, N / 128, K / 128] fp32;
    topk_weights: [num_slots] fp32 (flattened [tokens, top-k]); out: [num_slots, N] bf16.
    """
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    if pid_m * BLOCK_M >= tl.load(padded_ptr):
        return
    slots = tl.load(sorted_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
    slot_ok = slots < num_slots
    if STOP:
        slot_ok = unfinished(slot_ok, finished_ptr, slots // TOPK)
        if none_left(slot_ok):
            return
    expert = tl.load(block_experts_ptr + pid_m).to(tl.int64)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    h_ptrs = h_ptr + slots[:, None].to(tl.int64) * stride_hm + ks[None, :]
    w_ptrs = w_ptr + expert * stride_we + cols[None, :] * stride_wn + ks[:, None]
    scale_ptrs = w_scale_ptr + expert * stride_wse + (cols // BLOCK_K) * stride_wsn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K // BLOCK_K):
        h = tl.load(h_ptrs, mask=slot_ok[:, None], other=0.0).to(tl.float32)
        a_scale = tl.maximum(tl.max(tl.abs(h), axis=1), 1e-12) / FP8_MAX
        hq = (h / a_scale[:, None]).to(w_ptr.dtype.element_ty)
        w = tl.load(w_ptrs)
        s = tl.load(scale_ptrs + k)
        acc += tl.dot(hq, w) * a_scale[:, None] * s[None, :]
        h_ptrs += BLOCK_K
        w_ptrs += BLOCK_K

    routing_weight = tl.load(topk_weights_ptr + slots, mask=slot_ok, other=0.0)
    acc = acc * routing_weight[:, None]
    tl.store(out_ptr + slots[:, None] * stride_om + cols[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=slot_ok[:, None])


def _check_expert_weights(w: torch.Tensor, w_scale: torch.Tensor) -> None:
    e, n, k = w.shape
    if n % SCALE_BLOCK or k % SCALE_BLOCK:
        raise ValueError(f"expert weights [{e}, {n}, {k}]: both dims must be multiples of 128")
    if tuple(w_scale.shape) != (e, n // SCALE_BLOCK, k // SCALE_BLOCK):
        raise ValueError(f"w_scale must be [{e}, {n // SCALE_BLOCK}, {k // SCALE_BLOCK}]")
    if w.stride(2) != 1 or w_scale.stride(2) != 1:
        raise ValueError("expert weights and scales must be contiguous along K")


def moe_up_gate(x: torch.Tensor, w13: torch.Tensor, w13_scale: torch.Tensor, routing: MoeRouting,
                out: torch.Tensor, *, finished: torch.Tensor | None = None) -> None:
    """Routed experts' up/gate GEMM with SiLU*mul: out[slot] = silu(x W_gate^T) * (x W_up^T).

    x: [tokens, hidden] bf16; w13: [experts, 2 * intermediate, hidden] fp8 (gate | up) with
    w13_scale [experts, 2 * intermediate / 128, hidden / 128] fp32; out: [tokens * top-k, intermediate].
    """
    _check_expert_weights(w13, w13_scale)
    tokens, k = x.shape
    n = w13.shape[1] // 2
    topk = routing.num_slots // tokens
    if n % SCALE_BLOCK or tuple(out.shape) != (routing.num_slots, n) or w13.shape[2] != k:
        raise ValueError("x, w13 and out do not match")
    block_n, num_warps, num_stages = _UP_GATE_TILES[device_of(x).family][width_bucket(tokens)]
    block_n = min(block_n, n)
    grid = (triton.cdiv(n, block_n), routing.block_experts.numel())
    moe_up_gate_kernel[grid](
        x, w13, w13_scale, out, routing.sorted_slots, routing.block_experts, routing.padded_slots,
        finished,
        routing.num_slots, x.stride(0), w13.stride(0), w13.stride(1), w13_scale.stride(0),
        w13_scale.stride(1), out.stride(0),
        N=n, K=k, TOPK=topk, BLOCK_M=routing.block_m, BLOCK_N=block_n, BLOCK_K=SCALE_BLOCK,
        FP8_MAX=fp8_max(w13.dtype), STOP=finished is not None,
        num_warps=num_warps, num_stages=num_stages,
    )


def moe_down(h: torch.Tensor, w2: torch.Tensor, w2_scale: torch.Tensor, routing: MoeRouting,
             topk_weights: torch.Tensor, out: torch.Tensor, *,
             finished: torch.Tensor | None = None) -> None:
    """Routed experts' down GEMM scaled by the routing weights: out[slot] = w[slot] * (h[slot] W_down^T).

    h: [tokens * top-k, intermediate] bf16; w2: [experts, hidden, intermediate] fp8 with w2_scale
    [experts, hidden / 128, intermediate / 128] fp32; topk_weights: [tokens, top-k] fp32 (contiguous);
    out: [tokens * top-k, hidden] bf16.
    """
    _check_expert_weights(w2, w2_scale)
    num_slots, k = h.shape
    n = w2.shape[1]
    tokens, topk = topk_weights.shape
    if num_slots != routing.num_slots or tokens * topk != num_slots or w2.shape[2] != k:
        raise ValueError("h, w2, topk_weights and routing do not match")
    if not topk_weights.is_contiguous() or tuple(out.shape) != (num_slots, n):
        raise ValueError("topk_weights must be contiguous and out [tokens * top-k, hidden]")
    block_n, num_warps, num_stages = _DOWN_TILES[device_of(h).family][width_bucket(tokens)]
    grid = (triton.cdiv(n, block_n), routing.block_experts.numel())
    moe_down_kernel[grid](
        h, w2, w2_scale, out, topk_weights, routing.sorted_slots, routing.block_experts,
        routing.padded_slots, finished,
        num_slots, h.stride(0), w2.stride(0), w2.stride(1), w2_scale.stride(0), w2_scale.stride(1),
        out.stride(0),
        N=n, K=k, TOPK=topk, BLOCK_M=routing.block_m, BLOCK_N=block_n, BLOCK_K=SCALE_BLOCK,
        FP8_MAX=fp8_max(w2.dtype), STOP=finished is not None,
        num_warps=num_warps, num_stages=num_stages,
    )
