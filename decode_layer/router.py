"""The MoE router: an FP32-accurate logits GEMM on BF16 tensor cores, then grouped top-k selection.

Router GEMM. Tensor cores multiply BF16, not FP32, and the router's tolerance (about 1e-4 relative)
is too tight for BF16 weights. Each FP32 weight r is split into ``hi = bf16(r)`` and
``lo = bf16(r - hi)``; ``x @ r.T ~= x @ hi.T + x @ lo.T``, both products accumulated in FP32 in one
kernel that streams both matrices once. With only 256 expert rows there are few output tiles, so K is
split across programs and the partial tiles are combined by an atomic epilogue: every split adds its
tile into a zeroed FP32 workspace, then bumps a per-tile arrival counter; the split that arrives last
copies the tile out and re-zeroes workspace and counter, leaving both ready for the next launch.

Top-k. DeepSeek-V3 routing: sigmoid scores plus a per-expert correction bias choose the experts (the
bias steers load balance and is not part of the weights), experts are grouped (8 groups of 32), a
group's score is the sum of its two best biased scores, only the best 4 groups compete for the 8
experts, and the chosen experts' unbiased scores are renormalised and scaled by 2.5.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .device import device_of, next_power_of_2, width_bucket
from .masks import none_left, unfinished

ROUTER_BLOCK_M = 16  # the smallest MMA M: every decode width fits one row tile

# (BLOCK_N, BLOCK_K, num_warps, num_stages) per family and width bucket.
_TILES: dict[str, dict[int, tuple[int, int, int, int]]] = {
    "amd": {1: (32, 128, 4, 2), 2: (32, 128, 4, 2), 4: (64, 64, 4, 2), 8: (64, 128, 4, 2),
            16: (64, 128, 8, 2)},
    "nvidia": {1: (32, 128, 4, 3), 2: (32, 128, 4, 3), 4: (64, 64, 4, 4), 8: (64, 128, 4, 3),
               16: (64, 128, 4, 3)},
    "cpu": {b: (32, 64, 4, 1) for b in (1, 2, 4, 8, 16)},
}
MAX_SPLIT_K = 16


@triton.jit
def router_splitk_kernel(
    x_ptr, w_hi_ptr, w_lo_ptr, out_ptr, ws_ptr, counter_ptr, finished_ptr,
    M, N, K, stride_xm, stride_wn, stride_om, stride_wsm,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
    STOP: tl.constexpr,
):
    """out[M, N] (fp32) = x @ (w_hi + w_lo).T, K split SPLIT_K ways, combined by atomics.

    ws: [M, N] fp32 and counter: [cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)] int32 must be zero on entry
    and are zero again on exit. With STOP, finished rows are not loaded and not written, and a row
    tile whose rows are all finished returns before touching the workspace (all its splits agree).
    """
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(2)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    if STOP:
        row_ok = unfinished(row_ok, finished_ptr, rows)
        if none_left(row_ok):
            return
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    k_per_split = tl.cdiv(tl.cdiv(K, SPLIT_K), BLOCK_K) * BLOCK_K
    k_begin = pid_k * k_per_split
    k_end = tl.minimum(k_begin + k_per_split, K)
    ks = tl.arange(0, BLOCK_K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_begin, k_end, BLOCK_K):
        k_ok = (k0 + ks) < k_end
        x = tl.load(x_ptr + rows[:, None] * stride_xm + (k0 + ks)[None, :],
                    mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        w_off = cols[None, :] * stride_wn + (k0 + ks)[:, None]
        w_mask = col_ok[None, :] & k_ok[:, None]
        hi = tl.load(w_hi_ptr + w_off, mask=w_mask, other=0.0)
        lo = tl.load(w_lo_ptr + w_off, mask=w_mask, other=0.0)
        acc = tl.dot(x, hi, acc)
        acc = tl.dot(x, lo, acc)

    # Atomic split-K epilogue.
    tile_mask = row_ok[:, None] & col_ok[None, :]
    ws_ptrs = ws_ptr + rows[:, None] * stride_wsm + cols[None, :]
    tl.atomic_add(ws_ptrs, acc, mask=tile_mask, sem="relaxed")
    # Every thread's adds must be issued before one thread publishes the arrival (release).
    tl.debug_barrier()
    tile = counter_ptr + pid_m * tl.num_programs(0) + pid_n
    arrived = tl.atomic_add(tile, 1, sem="acq_rel")
    if arrived == SPLIT_K - 1:
        # Last split: the acquire above made the other splits' adds visible; read past the caches.
        total = tl.load(ws_ptrs, mask=tile_mask, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr + rows[:, None] * stride_om + cols[None, :], total, mask=tile_mask)
        tl.store(ws_ptrs, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32), mask=tile_mask)
        tl.atomic_xchg(tile, 0, sem="relaxed")


def split_fp32_weight(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """hi = bf16(w), lo = bf16(w - hi): the router weight as two BF16 matrices (done once at load)."""
    hi = w.to(torch.bfloat16)
    lo = (w - hi.to(torch.float32)).to(torch.bfloat16)
    return hi, lo


def router_workspace(rows: int, experts: int, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """The zeroed FP32 workspace and arrival counters :func:`router_logits` needs (allocate once).

    Sized for ``rows`` rows; the kernel leaves both zeroed, so they are reused launch after launch.
    """
    block_n = min(t[0] for fam in _TILES.values() for t in fam.values())
    tiles = triton.cdiv(rows, ROUTER_BLOCK_M) * triton.cdiv(experts, block_n)
    return (torch.zeros((rows, experts), dtype=torch.float32, device=device),
            torch.zeros((tiles,), dtype=torch.int32, device=device))


def router_logits(x: torch.Tensor, w_hi: torch.Tensor, w_lo: torch.Tensor, out: torch.Tensor,
                  workspace: torch.Tensor, counters: torch.Tensor, *,
                  finished: torch.Tensor | None = None, split_k: int | None = None) -> None:
    """FP32 router logits ``out = x @ (w_hi + w_lo).T`` (x [rows, hidden] bf16; w_* [experts, hidden]
    bf16; out [rows, experts] fp32), with workspace/counters from :func:`router_workspace`.

    Split-K is chosen so that the few output tiles fill the GPU (``split_k`` overrides it).
    """
    m, k = x.shape
    n = w_hi.shape[0]
    if w_lo.shape != w_hi.shape or w_hi.shape[1] != k or tuple(out.shape) != (m, n):
        raise ValueError(f"shapes do not match: x {list(x.shape)}, w {list(w_hi.shape)}, out {list(out.shape)}")
    if workspace.shape[0] < m or workspace.shape[1] != n:
        raise ValueError(f"workspace must be at least [{m}, {n}]")
    dev = device_of(x)
    block_n, block_k, num_warps, num_stages = _TILES[dev.family][width_bucket(m)]
    tiles_n = triton.cdiv(n, block_n)
    tiles_m = triton.cdiv(m, ROUTER_BLOCK_M)
    if counters.numel() < tiles_m * tiles_n:
        raise ValueError(f"counters must hold {tiles_m * tiles_n} tiles")
    if split_k is None:
        # About one program per CU, but keep at least four K tiles per split.
        fill = max(1, dev.compute_units // (tiles_m * tiles_n))
        split_k = min(MAX_SPLIT_K, fill, max(1, k // (4 * block_k)))
    router_splitk_kernel[(tiles_n, split_k, tiles_m)](
        x, w_hi, w_lo, out, workspace, counters, finished,
        m, n, k, x.stride(0), w_hi.stride(0), out.stride(0), workspace.stride(0),
        BLOCK_M=ROUTER_BLOCK_M, BLOCK_N=block_n, BLOCK_K=block_k, SPLIT_K=split_k,
        STOP=finished is not None,
        num_warps=num_warps, num_stages=num_stages,
    )


@triton.jit
def grouped_topk_kernel(
    logits_ptr, bias_ptr, ids_ptr, weights_ptr, finished_ptr,
    M, stride_lm, stride_im, stride_wm,
    ROWS: tl.constexpr, NUM_EXPERTS: tl.constexpr, N_GROUP: tl.constexpr, TOPK_GROUP: tl.constexpr,
    TOPK: tl.constexpr, ROUTED_SCALING: tl.constexpr, STOP: tl.constexpr,
):
    """DeepSeek-V3 grouped top-k for ROWS rows at once: ids [M, TOPK] int32, weights [M, TOPK] fp32.

    Finished rows (STOP) are skipped: nothing is written for them.
    """
    GROUP_SIZE: tl.constexpr = NUM_EXPERTS // N_GROUP
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < M
    if STOP:
        done = tl.load(finished_ptr + rows, mask=row_ok, other=1)
        row_ok = row_ok & (done == 0)
    experts = tl.arange(0, NUM_EXPERTS)
    logits = tl.load(logits_ptr + rows[:, None] * stride_lm + experts[None, :],
                     mask=row_ok[:, None], other=0.0)
    scores = tl.sigmoid(logits)
    biased = scores + tl.load(bias_ptr + experts)[None, :]

    # Group score: the sum of the two best biased scores in each group.
    grouped = tl.reshape(biased, (ROWS, N_GROUP, GROUP_SIZE))
    lane = tl.arange(0, GROUP_SIZE)
    best = tl.argmax(grouped, axis=2)
    second = tl.max(tl.where(lane[None, None, :] == best[:, :, None], float("-inf"), grouped), axis=2)
    group_score = tl.max(grouped, axis=2) + second

    group = tl.arange(0, N_GROUP)
    keep = tl.zeros((ROWS, N_GROUP), dtype=tl.int32)
    for _ in tl.static_range(TOPK_GROUP):
        g = tl.argmax(group_score, axis=1)
        hit = group[None, :] == g[:, None]
        keep = tl.where(hit, 1, keep)
        group_score = tl.where(hit, float("-inf"), group_score)
    keep_e = tl.reshape(tl.broadcast_to(keep[:, :, None], (ROWS, N_GROUP, GROUP_SIZE)), (ROWS, NUM_EXPERTS))
    candidates = tl.where(keep_e != 0, biased, float("-inf"))

    slot = tl.arange(0, TOPK)
    ids = tl.zeros((ROWS, TOPK), dtype=tl.int32)
    weights = tl.zeros((ROWS, TOPK), dtype=tl.float32)
    for t in tl.static_range(TOPK):
        e = tl.argmax(candidates, axis=1)
        hit = experts[None, :] == e[:, None]
        w = tl.sum(tl.where(hit, scores, 0.0), axis=1)  # the unbiased score weighs the expert
        ids = tl.where(slot[None, :] == t, e[:, None], ids)
        weights = tl.where(slot[None, :] == t, w[:, None], weights)
        candidates = tl.where(hit, float("-inf"), candidates)
    weights = weights / tl.sum(weights, axis=1)[:, None] * ROUTED_SCALING
    out_mask = row_ok[:, None]
    tl.store(ids_ptr + rows[:, None] * stride_im + slot[None, :], ids, mask=out_mask)
    tl.store(weights_ptr + rows[:, None] * stride_wm + slot[None, :], weights, mask=out_mask)


def grouped_topk(logits: torch.Tensor, bias: torch.Tensor, topk_ids: torch.Tensor,
                 topk_weights: torch.Tensor, *, n_group: int = 8, topk_group: int = 4,
                 routed_scaling: float = 2.5, finished: torch.Tensor | None = None) -> None:
    """Select ``topk_ids.shape[1]`` experts per row from fp32 router ``logits`` [rows, experts].

    bias: [experts] fp32 correction bias; topk_ids: [rows, k] int32; topk_weights: [rows, k] fp32.
    Decode widths are small, so one program takes up to 8 rows and the whole selection stays in
    registers.
    """
    m, experts = logits.shape
    topk = topk_ids.shape[1]
    if experts % n_group or experts & (experts - 1) or topk & (topk - 1):
        raise ValueError("experts and top-k must be powers of two, experts divisible by n_group")
    rows = min(next_power_of_2(m), 8)
    grouped_topk_kernel[(triton.cdiv(m, rows),)](
        logits, bias, topk_ids, topk_weights, finished,
        m, logits.stride(0), topk_ids.stride(0), topk_weights.stride(0),
        ROWS=rows, NUM_EXPERTS=experts, N_GROUP=n_group, TOPK_GROUP=topk_group, TOPK=topk,
        ROUTED_SCALING=routed_scaling, STOP=finished is not None,
        num_warps=4,
    )
