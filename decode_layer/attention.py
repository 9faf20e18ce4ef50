"""MLA decode attention over a paged latent KV cache, and the cache write of each new token.

Absorbed MLA (DeepSeek-V3): every head's query is 512 latent dims (q_nope already multiplied by
W_UK) plus 64 RoPE dims; each cached token is one 576-wide row (512 normalised latent | 64 roped key)
shared by all heads, and the 512-dim latent doubles as the value. Attention is memory bound on the
cache, so a program takes a block of heads (one cache read serves them all) and the sequence is split
across programs (flash-decoding); a second kernel merges the splits by their log-sum-exp.

The cache is bf16, or fp8 e4m3 with one per-tensor scale: fp8 tiles are widened to bf16 in
registers and the scale is folded into the scores and the output instead of every element.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from .device import device_of, fp8_max, next_power_of_2, width_bucket

KV_LORA = 512
ROPE = 64
MAX_KV_SPLITS = 32

# (BLOCK_N, num_warps, num_stages) per family, width bucket and cache dtype (fp8: True), for a
# 16-head block. Wider launches get fewer KV splits (the grid already has width x head-block
# programs), so each program walks a longer stretch of the sequence and larger KV tiles amortise its
# softmax bookkeeping; fp8 tiles are half the bytes, so they go one size up. On NVIDIA a 32-head
# block doubles the warps: the 32 x 512 fp32 accumulator would not fit 128 threads' registers.
_TILES: dict[str, dict[tuple[int, bool], tuple[int, int, int]]] = {
    "amd": {
        (1, False): (16, 4, 1), (2, False): (16, 4, 1), (4, False): (32, 4, 1), (8, False): (32, 4, 2),
        (16, False): (32, 4, 2),
        (1, True): (32, 4, 1), (2, True): (32, 4, 1), (4, True): (32, 4, 2), (8, True): (64, 4, 2),
        (16, True): (64, 4, 2),
    },
    "nvidia": {
        (1, False): (32, 4, 2), (2, False): (32, 4, 2), (4, False): (32, 4, 3), (8, False): (64, 8, 2),
        (16, False): (64, 8, 2),
        (1, True): (32, 4, 2), (2, True): (32, 4, 2), (4, True): (32, 4, 3), (8, True): (64, 8, 3),
        (16, True): (64, 8, 3),
    },
    "cpu": {(b, f): (16, 4, 1) for b in (1, 2, 4, 8, 16) for f in (False, True)},
}


@triton.jit
def mla_decode_split_kernel(
    q_ptr, kv_ptr, block_table_ptr, seq_lens_ptr, finished_ptr, part_out_ptr, part_lse_ptr,
    qk_scale, kv_scale, num_heads,
    stride_qm, stride_qh, stride_kvp, stride_kvt, stride_btm,
    stride_pom, stride_poh, stride_pos, stride_plm, stride_plh,
    PAGE: tl.constexpr, D_LATENT: tl.constexpr, D_ROPE: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, NUM_SPLITS: tl.constexpr,
    FP8_KV: tl.constexpr, STOP: tl.constexpr,
):
    """One (row, head block, sequence split): online softmax over the split's cached tokens.

    q: [rows, heads, 576] bf16; kv: [pages, PAGE, 576] bf16 or fp8; block_table: [rows, max_pages]
    int32; seq_lens: [rows] int32. Writes the split's normalised output [BLOCK_H, 512] (fp32) and its
    log-sum-exp (base 2) into the partial buffers; an empty split writes lse = -inf.
    ``qk_scale`` is the softmax scale times log2(e): scores live in base 2 so exp2 is used.
    """
    row = tl.program_id(0)
    head_block = tl.program_id(1)
    split = tl.program_id(2)
    if STOP:
        if tl.load(finished_ptr + row) != 0:
            return
    heads = head_block * BLOCK_H + tl.arange(0, BLOCK_H)
    head_ok = heads < num_heads
    d = tl.arange(0, D_LATENT)
    dr = tl.arange(0, D_ROPE)
    lse_ptrs = part_lse_ptr + row * stride_plm + heads * stride_plh + split
    out_ptrs = (part_out_ptr + row * stride_pom + heads[:, None] * stride_poh + split * stride_pos
                + d[None, :])

    seq_len = tl.load(seq_lens_ptr + row)
    per_split = tl.cdiv(tl.cdiv(seq_len, NUM_SPLITS), BLOCK_N) * BLOCK_N
    start = split * per_split
    end = tl.minimum(start + per_split, seq_len)
    if start >= end:
        tl.store(lse_ptrs, tl.full((BLOCK_H,), float("-inf"), tl.float32), mask=head_ok)
        return

    q_rows = q_ptr + row * stride_qm + heads[:, None] * stride_qh
    q_nope = tl.load(q_rows + d[None, :], mask=head_ok[:, None], other=0.0)
    q_pe = tl.load(q_rows + D_LATENT + dr[None, :], mask=head_ok[:, None], other=0.0)
    if FP8_KV:
        score_scale = qk_scale * kv_scale
    else:
        score_scale = qk_scale

    m_i = tl.full((BLOCK_H,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_H,), tl.float32)
    acc = tl.zeros((BLOCK_H, D_LATENT), tl.float32)
    table = block_table_ptr + row * stride_btm
    for n0 in range(start, end, BLOCK_N):
        toks = n0 + tl.arange(0, BLOCK_N)
        tok_ok = toks < end
        page = tl.load(table + toks // PAGE, mask=tok_ok, other=0)
        kv_rows = kv_ptr + page.to(tl.int64) * stride_kvp + (toks % PAGE) * stride_kvt
        kv = tl.load(kv_rows[:, None] + d[None, :], mask=tok_ok[:, None], other=0.0)
        k_pe = tl.load(kv_rows[:, None] + D_LATENT + dr[None, :], mask=tok_ok[:, None], other=0.0)
        if FP8_KV:
            kv = kv.to(tl.bfloat16)
            k_pe = k_pe.to(tl.bfloat16)
        s = tl.dot(q_nope, tl.trans(kv))
        s = tl.dot(q_pe, tl.trans(k_pe), s)
        s = tl.where(tok_ok[None, :], s * score_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), kv)
        m_i = m_new

    if FP8_KV:
        acc = acc * kv_scale  # the value is the same fp8 latent: its scale comes out once here
    tl.store(out_ptrs, acc / l_i[:, None], mask=head_ok[:, None])
    tl.store(lse_ptrs, m_i + tl.log2(l_i), mask=head_ok)


@triton.jit
def mla_decode_combine_kernel(
    part_out_ptr, part_lse_ptr, out_ptr, finished_ptr,
    stride_pom, stride_poh, stride_pos, stride_plm, stride_plh, stride_om, stride_oh,
    D_LATENT: tl.constexpr, NUM_SPLITS: tl.constexpr, STOP: tl.constexpr,
):
    """Merge one (row, head)'s split outputs by their log-sum-exp into out [rows, heads, 512] bf16."""
    row = tl.program_id(0)
    head = tl.program_id(1)
    if STOP:
        if tl.load(finished_ptr + row) != 0:
            return
    splits = tl.arange(0, NUM_SPLITS)
    d = tl.arange(0, D_LATENT)
    lse = tl.load(part_lse_ptr + row * stride_plm + head * stride_plh + splits)
    live = lse > float("-inf")
    weight = tl.where(live, tl.exp2(lse - tl.max(lse, axis=0)), 0.0)
    # Empty splits never wrote their output: mask the load rather than multiply garbage by 0.
    parts = tl.load(part_out_ptr + row * stride_pom + head * stride_poh + splits[:, None] * stride_pos
                    + d[None, :], mask=live[:, None], other=0.0)
    merged = tl.sum(parts * weight[:, None], axis=0) / tl.sum(weight, axis=0)
    tl.store(out_ptr + row * stride_om + head * stride_oh + d, merged.to(out_ptr.dtype.element_ty))


def _num_splits(programs: int, compute_units: int, max_seq_len: int, block_n: int) -> int:
    # Enough splits for about two programs per CU, a power of two (the merge's arange), and no more
    # than the longest sequence can fill with tiles.
    want = max(1, (2 * compute_units) // max(programs, 1))
    splits = 1 << (want.bit_length() - 1)
    return max(1, min(splits, MAX_KV_SPLITS, next_power_of_2(triton.cdiv(max_seq_len, block_n))))


def mla_decode(q: torch.Tensor, kv_cache: torch.Tensor, block_table: torch.Tensor,
               seq_lens: torch.Tensor, out: torch.Tensor, *, sm_scale: float, max_seq_len: int,
               kv_scale: float = 1.0, finished: torch.Tensor | None = None,
               num_splits: int | None = None) -> None:
    """Absorbed-MLA decode attention: ``out[r, h] = softmax(q[r, h] . K_r^T * sm_scale) . V_r``.

    q: [rows, heads, 576] bf16 (512 latent | 64 rope); kv_cache: [pages, page_size, 576] bf16 or fp8
    e4m3 (then ``kv_scale`` dequantises it); block_table: [rows, max_pages] int32; seq_lens: [rows]
    int32; out: [rows, heads, 512] bf16. ``max_seq_len`` (host-side metadata, never read from the
    device) bounds the number of sequence splits; ``num_splits`` overrides the heuristic.
    """
    rows, heads, width = q.shape
    if width != KV_LORA + ROPE or kv_cache.shape[-1] != KV_LORA + ROPE:
        raise ValueError(f"q and kv_cache rows must be {KV_LORA + ROPE} wide")
    if q.stride(2) != 1 or kv_cache.stride(2) != 1 or out.stride(2) != 1:
        raise ValueError("q, kv_cache and out must be contiguous in their last dimension")
    fp8 = kv_cache.dtype.itemsize == 1
    dev = device_of(q)
    block_n, num_warps, num_stages = _TILES[dev.family][(width_bucket(rows), fp8)]
    # One cache read serves every head of the block, so take as many heads as the MMA handles well.
    block_h = min(max(next_power_of_2(heads), 16), 32)
    head_blocks = triton.cdiv(heads, block_h)
    if dev.family == "nvidia":
        num_warps *= block_h // 16
    if num_splits is None:
        num_splits = _num_splits(rows * head_blocks, dev.compute_units, max_seq_len, block_n)
    part_out = torch.empty((rows, heads, num_splits, KV_LORA), dtype=torch.float32, device=q.device)
    part_lse = torch.empty((rows, heads, num_splits), dtype=torch.float32, device=q.device)
    page = kv_cache.shape[1]
    mla_decode_split_kernel[(rows, head_blocks, num_splits)](
        q, kv_cache, block_table, seq_lens, finished, part_out, part_lse,
        sm_scale * math.log2(math.e), kv_scale, heads,
        q.stride(0), q.stride(1), kv_cache.stride(0), kv_cache.stride(1), block_table.stride(0),
        part_out.stride(0), part_out.stride(1), part_out.stride(2), part_lse.stride(0), part_lse.stride(1),
        PAGE=page, D_LATENT=KV_LORA, D_ROPE=ROPE, BLOCK_H=block_h, BLOCK_N=block_n,
        NUM_SPLITS=num_splits, FP8_KV=fp8, STOP=finished is not None,
        num_warps=num_warps, num_stages=num_stages,
    )
    mla_decode_combine_kernel[(rows, heads)](
        part_out, part_lse, out, finished,
        part_out.stride(0), part_out.stride(1), part_out.stride(2), part_lse.stride(0), part_lse.stride(1),
        out.stride(0), out.stride(1),
        D_LATENT=KV_LORA, NUM_SPLITS=num_splits, STOP=finished is not None,
        num_warps=4,
    )


@triton.jit
def kv_write_kernel(
    kv_a_ptr, norm_w_ptr, cos_sin_ptr, positions_ptr, slots_ptr, finished_ptr, cache_ptr,
    inv_kv_scale, eps,
    stride_kva, stride_cs, stride_cp, stride_ct,
    PAGE: tl.constexpr, D_LATENT: tl.constexpr, D_ROPE: tl.constexpr,
    FP8_KV: tl.constexpr, FP8_MAX: tl.constexpr, STOP: tl.constexpr,
):
    """One new token: kv_a_layernorm on its 512 latent dims, NeoX RoPE on its 64 rope dims, and the
    576-wide row written at its cache slot (quantised by 1 / kv_scale and saturated when fp8).

    A negative slot marks a padded row (nothing to write), as in paged-attention slot mappings.
    """
    row = tl.program_id(0)
    if STOP:
        if tl.load(finished_ptr + row) != 0:
            return
    slot = tl.load(slots_ptr + row)
    if slot < 0:
        return
    d = tl.arange(0, D_LATENT)
    half = tl.arange(0, D_ROPE // 2)
    src = kv_a_ptr + row * stride_kva
    lat = tl.load(src + d).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(lat * lat, axis=0) / D_LATENT + eps)
    lat = lat * rstd * tl.load(norm_w_ptr + d).to(tl.float32)
    x1 = tl.load(src + D_LATENT + half).to(tl.float32)
    x2 = tl.load(src + D_LATENT + D_ROPE // 2 + half).to(tl.float32)
    pos = tl.load(positions_ptr + row)
    cos = tl.load(cos_sin_ptr + pos * stride_cs + half)
    sin = tl.load(cos_sin_ptr + pos * stride_cs + D_ROPE // 2 + half)
    r1 = x1 * cos - x2 * sin
    r2 = x2 * cos + x1 * sin
    dst = cache_ptr + (slot // PAGE).to(tl.int64) * stride_cp + (slot % PAGE) * stride_ct
    if FP8_KV:
        lat = tl.clamp(lat * inv_kv_scale, -FP8_MAX, FP8_MAX)
        r1 = tl.clamp(r1 * inv_kv_scale, -FP8_MAX, FP8_MAX)
        r2 = tl.clamp(r2 * inv_kv_scale, -FP8_MAX, FP8_MAX)
    ty = cache_ptr.dtype.element_ty
    tl.store(dst + d, lat.to(ty))
    tl.store(dst + D_LATENT + half, r1.to(ty))
    tl.store(dst + D_LATENT + D_ROPE // 2 + half, r2.to(ty))


def kv_write(kv_a: torch.Tensor, norm_weight: torch.Tensor, cos_sin: torch.Tensor,
             positions: torch.Tensor, slot_mapping: torch.Tensor, kv_cache: torch.Tensor, *,
             kv_scale: float = 1.0, eps: float = 1e-6, finished: torch.Tensor | None = None) -> None:
    """Normalise, rope and store each row's new latent KV at ``slot_mapping[row]`` in the paged cache.

    kv_a: [rows, 576] bf16 (kv_lora | k_rope, typically a view of front_proj's output); norm_weight:
    [512]; cos_sin: [max_pos, 64] fp32 (cos | sin); positions, slot_mapping: [rows] int32 (slot =
    page * page_size + offset, negative = skip); kv_cache: [pages, page_size, 576] bf16 or fp8.
    """
    rows, width = kv_a.shape
    if width != KV_LORA + ROPE or kv_a.stride(1) != 1:
        raise ValueError(f"kv_a must be [rows, {KV_LORA + ROPE}] and contiguous along its rows")
    fp8 = kv_cache.dtype.itemsize == 1
    kv_write_kernel[(rows,)](
        kv_a, norm_weight, cos_sin, positions, slot_mapping, finished, kv_cache,
        1.0 / kv_scale, eps,
        kv_a.stride(0), cos_sin.stride(0), kv_cache.stride(0), kv_cache.stride(1),
        PAGE=kv_cache.shape[1], D_LATENT=KV_LORA, D_ROPE=ROPE,
        FP8_KV=fp8, FP8_MAX=fp8_max(kv_cache.dtype) if fp8 else 0.0, STOP=finished is not None,
        num_warps=2,
    )
