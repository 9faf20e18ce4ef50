"""Numeric checks of the demo decode-layer kernels against torch references, under Triton's interpreter.

The kernels run on CPU tensors with ``TRITON_INTERPRET=1``. That variable is read when ``@triton.jit``
decorates a function, and other test modules in the same pytest run compile kernels for real, so
this module never imports ``decode_layer`` itself: one subprocess (``python this_file``) sets the
variable, imports the kernels, runs every check and prints a JSON verdict per check; each test below
reads its verdict. Shapes are small (the launchers are shape-generic) but every path is taken.

Two interpreter facts (Triton 3.9) shape the checks:

* fp32 -> fp8 casts drop the carry when rounding overflows the mantissa (31.2 -> 16, not 32) and
  round ties up; fp32 -> bf16 casts truncate. So fp8 GEMM inputs are built "fp8-exact" (each 1x128
  group is fp8 codes times a power of two, with one element at the format's max), which makes the
  kernels' dynamic quantisation lossless, and the fp8 cache write skips the few elements whose
  correct rounding carries into the next binade. Tolerances allow bf16 truncation.
* bf16 ``tl.dot`` multiplies the raw uint16 bit patterns as integers (its ``create_dot`` widens
  only fp8 operands), so the subprocess widens bf16 operands to fp32 first
  (:func:`_widen_bf16_dot_operands`); fp8 storage and fp8 ``tl.dot`` work as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECKS: dict[str, Callable[[], None]] = {}


def check(fn: Callable[[], None]) -> Callable[[], None]:
    """Register a numeric check; it runs in the interpreter subprocess."""
    CHECKS[fn.__name__] = fn
    return fn


# ----------------------------------------------------------------------------------------------
# Helpers (run in the subprocess only: torch is imported lazily).

FP8 = "float8_e4m3fn"  # the CPU checks use the OCP format (gfx950 / NVIDIA)
DEVICE = "cpu"  # "cuda" when the checks run on a GPU (``python tests/demo/test_demo_kernels.py --device cuda``)


def _torch():
    import torch

    return torch


def _gen(seed: int):
    """A seeded generator on the device the checks run on (tensors default to that device)."""
    return _torch().Generator(device=DEVICE).manual_seed(seed)


def _close(actual, expected, *, tol: float = 2e-2, what: str = "") -> None:
    """max |actual - expected| <= tol * max |expected| (bf16 outputs, truncated by the interpreter)."""
    torch = _torch()
    a, e = actual.double(), expected.double()
    scale = e.abs().max().item() or 1.0
    err = (a - e).abs().max().item()
    if err > tol * scale:
        bad = ((a - e).abs() > tol * scale).nonzero()[:5].tolist()
        raise AssertionError(f"{what}: max |err| {err:.3g} vs magnitude {scale:.3g}; first bad {bad}")
    assert torch.isfinite(a).all(), f"{what}: non-finite values"


def _fp8_exact_activations(rows: int, k: int, gamma=None, seed: int = 0):
    """bf16 activations whose (x * gamma) 1x128 groups are fp8 codes times a power of two.

    Each group holds one +-448 element, so the kernels' dynamic scale (amax / 448) is that power of
    two and the quantisation is exact.
    """
    torch = _torch()
    g = _gen(seed)
    fp8 = getattr(torch, FP8)
    codes = (torch.randn(rows, k, generator=g) * 60).clamp(-448, 448).to(fp8).float()
    codes.view(rows, k // 128, 128)[:, :, 7] = 448.0 * torch.where(
        torch.rand(rows, k // 128, generator=g) < 0.5, -1.0, 1.0)
    powers = 2.0 ** torch.randint(-9, -3, (rows, k // 128, 1), generator=g).float()
    scaled = (codes.view(rows, k // 128, 128) * powers).view(rows, k)
    x = scaled if gamma is None else scaled / gamma.float()
    return x.to(torch.bfloat16)


def _fp8_weight(n: int, k: int, seed: int = 1):
    """fp8 weight [n, k] with 128x128 block scales, and its dequantised fp64 value."""
    torch = _torch()
    g = _gen(seed)
    w = (torch.randn(n, k, generator=g) * 100).clamp(-448, 448).to(getattr(torch, FP8))
    scale = torch.rand(-(-n // 128), k // 128, generator=g) * 1e-3 + 1e-4
    full = scale.repeat_interleave(128, 0)[:n].repeat_interleave(128, 1)
    return w, scale, w.double() * full.double()


def _finished(rows: int, done: list[int]):
    torch = _torch()
    f = torch.zeros(rows, dtype=torch.int32)
    f[done] = 1
    return f


# ----------------------------------------------------------------------------------------------
# proj: front_proj, q_b_proj, o_proj


def _rmsnorm(x, w, eps=1e-6):
    x = x.double()
    return x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w.double()


@check
def front_proj_rmsnorm_fp8():
    """RMSNorm fused into the fp8 GEMM; N not a multiple of the tile or of the 128 scale block."""
    torch = _torch()
    from decode_layer import proj

    m, k, n = 3, 384, 200
    gamma = 2.0 ** torch.randint(-1, 2, (k,), generator=_gen(2)).float()
    x = _fp8_exact_activations(m, k, gamma)
    w, w_scale, w_ref = _fp8_weight(n, k)
    out = torch.empty(m, n, dtype=torch.bfloat16)
    proj.front_proj(x, gamma.to(torch.bfloat16), w, w_scale, out)
    _close(out, _rmsnorm(x, gamma) @ w_ref.T, what="front_proj")


@check
def q_b_strided_input_with_stop():
    """q_b on a strided view (a slice of front_proj's output); finished rows are left untouched."""
    torch = _torch()
    from decode_layer import proj

    m, k, n = 4, 256, 384
    gamma = torch.ones(k)
    front = torch.zeros(m, k + 64, dtype=torch.bfloat16)
    front[:, :k] = _fp8_exact_activations(m, k, seed=3)
    q_lora = front[:, :k]
    w, w_scale, w_ref = _fp8_weight(n, k, seed=4)
    out = torch.full((m, n), 7.0, dtype=torch.bfloat16)
    proj.q_b_proj(q_lora, gamma.to(torch.bfloat16), w, w_scale, out, finished=_finished(m, [1, 2]))
    ref = _rmsnorm(q_lora, gamma) @ w_ref.T
    live = [0, 3]
    _close(out[live], ref[live], what="q_b live rows")
    assert (out[[1, 2]] == 7.0).all(), "q_b wrote finished rows"


@check
def o_proj_residual_in_place():
    """o_proj adds the residual and writes in place; all-finished launches write nothing."""
    torch = _torch()
    from decode_layer import proj

    m, k, n = 2, 256, 256
    attn = _fp8_exact_activations(m, k, seed=5)
    w, w_scale, w_ref = _fp8_weight(n, k, seed=6)
    hidden = torch.randn(m, n, generator=_gen(7)).to(torch.bfloat16)
    ref = hidden.double() + attn.double() @ w_ref.T
    proj.o_proj(attn, w, w_scale, hidden, hidden)
    _close(hidden, ref, what="o_proj")
    before = hidden.clone()
    proj.o_proj(attn, w, w_scale, hidden, hidden, finished=_finished(m, [0, 1]))
    assert torch.equal(hidden, before), "o_proj touched rows that had all finished"


# ----------------------------------------------------------------------------------------------
# attention: kv_write, mla_decode


def _rope_ref(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return _torch().cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def _cos_sin(max_pos: int, dim: int = 64):
    torch = _torch()
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    ang = torch.arange(max_pos).float()[:, None] * inv[None, :]
    return torch.cat([ang.cos(), ang.sin()], dim=1)


def _kv_write_case(cache_dtype, kv_scale: float, finished):
    torch = _torch()
    from decode_layer import attention

    rows, page, pages = 4, 16, 6
    g = _gen(8)
    front = torch.randn(rows, 2048 + 576, generator=g).to(torch.bfloat16)
    kv_a = front[:, 2048:]  # the kv part of front_proj's output, a strided view
    norm_w = (torch.rand(512, generator=g) + 0.5).to(torch.bfloat16)
    cos_sin = _cos_sin(64)
    positions = torch.tensor([3, 17, 40, 5], dtype=torch.int32)
    slots = torch.tensor([0 * page + 3, 4 * page + 15, -1, 2 * page + 0], dtype=torch.int32)
    cache = torch.zeros(pages, page, 576, dtype=cache_dtype)
    attention.kv_write(kv_a, norm_w, cos_sin, positions, slots, cache, kv_scale=kv_scale,
                       finished=finished)
    lat = _rmsnorm(kv_a[:, :512].float(), norm_w.float()).float()
    pe = kv_a[:, 512:].float()
    cos, sin = cos_sin[positions.long(), :32], cos_sin[positions.long(), 32:]
    expected = torch.cat([lat, _rope_ref(pe, cos, sin)], dim=1)
    return cache, slots, expected, page


@check
def kv_write_bf16_with_stop_and_padding():
    """Latent RMSNorm + NeoX RoPE into a bf16 page; a -1 slot and a finished row write nothing."""
    torch = _torch()
    cache, slots, expected, page = _kv_write_case(torch.bfloat16, 1.0, _finished(4, [3]))
    for r in (0, 1):
        s = int(slots[r])
        _close(cache[s // page, s % page].float(), expected[r], what=f"kv_write row {r}")
    s3 = int(slots[3])
    assert (cache[s3 // page, s3 % page] == 0).all(), "finished row was written"
    assert int((cache.float().abs().sum(-1) > 0).sum()) == 2, "writes outside the two live slots"


@check
def kv_write_fp8_scaled():
    """fp8 cache write: value / kv_scale, saturated, cast to e4m3 (interpreter carry bug excluded)."""
    torch = _torch()
    fp8 = getattr(torch, FP8)
    kv_scale = 0.02
    cache, slots, expected, page = _kv_write_case(fp8, kv_scale, None)
    for r in (0, 1, 3):
        s = int(slots[r])
        got = cache[s // page, s % page].float()
        want_in = (expected[r] / kv_scale).clamp(-448, 448)
        want = want_in.to(fp8).float()
        # The kernel normalises in fp32 and multiplies by 1 / kv_scale, the reference works in fp64:
        # a value that sits on a rounding boundary may land one fp8 step (3 mantissa bits) away.
        binade = torch.floor(torch.log2(want_in.abs().clamp(min=2.0 ** -6)))
        step = 2.0 ** (binade - 3)
        ok = torch.ones_like(want, dtype=torch.bool)
        if DEVICE == "cpu":
            # The interpreter's cast drops the carry when rounding overflows the mantissa (a GPU
            # does not): skip the elements whose correct rounding carries into the next binade.
            ok = want.abs() < 2.0 ** (binade + 1)
        assert ok.float().mean() > 0.9, "too few comparable elements"
        diff = (got - want).abs()
        assert (diff[ok] <= step[ok]).all(), f"fp8 kv_write row {r}: off by more than one fp8 step"
        assert (diff[ok] == 0).float().mean() > 0.98, f"fp8 kv_write row {r}: too many one-step misses"


def _mla_reference(q, kv_deq, block_table, seq_lens, sm_scale):
    torch = _torch()
    rows, heads, _ = q.shape
    page = kv_deq.shape[1]
    out = torch.zeros(rows, heads, 512, dtype=torch.float64)
    for r in range(rows):
        n = int(seq_lens[r])
        toks = torch.arange(n)
        kv = kv_deq[block_table[r, toks // page].long(), toks % page].double()  # [n, 576]
        s = (q[r].double() @ kv.T) * sm_scale
        out[r] = torch.softmax(s, dim=-1) @ kv[:, :512]
    return out


def _mla_case(cache_dtype, kv_scale, heads, num_splits, finished):
    torch = _torch()
    from decode_layer import attention

    g = _gen(11)
    rows, page, pages = 3, 16, 24
    q = (torch.randn(rows, heads, 576, generator=g) * 0.5).to(torch.bfloat16)
    raw = torch.randn(pages, page, 576, generator=g)
    if cache_dtype == torch.bfloat16:
        cache = raw.to(torch.bfloat16)
        kv_deq = cache.float()
    else:
        cache = (raw / kv_scale).clamp(-448, 448).to(cache_dtype)
        kv_deq = cache.float() * kv_scale
    # Pages scattered through the pool; sequence 1 is shorter than one split (empty splits).
    block_table = torch.randperm(pages, generator=g)[: rows * 8].view(rows, 8).to(torch.int32)
    seq_lens = torch.tensor([101, 9, 128], dtype=torch.int32)
    out = torch.zeros(rows, heads, 512, dtype=torch.bfloat16)
    sm_scale = 192 ** -0.5
    attention.mla_decode(q, cache, block_table, seq_lens, out, sm_scale=sm_scale, max_seq_len=128,
                         kv_scale=kv_scale, finished=finished, num_splits=num_splits)
    return out, _mla_reference(q, kv_deq, block_table, seq_lens, sm_scale)


@check
def mla_decode_bf16_splits():
    """bf16 cache, 4 KV splits (some empty), 20 heads in a 32-head block (head masking)."""
    torch = _torch()
    out, ref = _mla_case(torch.bfloat16, 1.0, heads=20, num_splits=4, finished=None)
    _close(out, ref, what="mla_decode bf16")


@check
def mla_decode_fp8_stop():
    """fp8 e4m3 cache with a scale, 16 heads, heuristic splits; a finished row is skipped."""
    torch = _torch()
    out, ref = _mla_case(getattr(torch, FP8), 0.05, heads=16, num_splits=None,
                         finished=_finished(3, [1]))
    _close(out[[0, 2]], ref[[0, 2]], what="mla_decode fp8")
    assert (out[1] == 0).all(), "finished row was written"


# ----------------------------------------------------------------------------------------------
# absorb: q_absorb, v_up


@check
def q_absorb_and_rope():
    """Per-head q_nope @ W_UK with the rope half rotated; a finished row is skipped."""
    torch = _torch()
    from decode_layer import absorb

    rows, heads = 3, 4
    g = _gen(9)
    q = torch.randn(rows, heads * 192, generator=g).to(torch.bfloat16)
    w_uk = (torch.randn(heads, 128, 512, generator=g) * 0.1).to(torch.bfloat16)
    cos_sin = _cos_sin(64)
    positions = torch.tensor([1, 30, 63], dtype=torch.int32)
    q_mla = torch.zeros(rows, heads, 576, dtype=torch.bfloat16)
    absorb.q_absorb(q, w_uk, cos_sin, positions, q_mla, finished=_finished(rows, [2]))
    qh = q.view(rows, heads, 192).double()
    lat = torch.einsum("rhk,hkn->rhn", qh[..., :128], w_uk.double())
    cos = cos_sin[positions.long(), :32].double()[:, None, :]
    sin = cos_sin[positions.long(), 32:].double()[:, None, :]
    ref = torch.cat([lat, _rope_ref(qh[..., 128:], cos, sin)], dim=-1)
    _close(q_mla[:2], ref[:2], what="q_absorb")
    assert (q_mla[2] == 0).all()


@check
def v_up_per_head():
    """Per-head attn_latent @ W_UV into o_proj's [rows, heads * 128] input."""
    torch = _torch()
    from decode_layer import absorb

    rows, heads = 5, 3
    g = _gen(10)
    attn = torch.randn(rows, heads, 512, generator=g).to(torch.bfloat16)
    w_uv = (torch.randn(heads, 512, 128, generator=g) * 0.05).to(torch.bfloat16)
    out = torch.empty(rows, heads * 128, dtype=torch.bfloat16)
    absorb.v_up(attn, w_uv, out)
    ref = torch.einsum("rhk,hkn->rhn", attn.double(), w_uv.double()).reshape(rows, heads * 128)
    _close(out, ref, what="v_up")


# ----------------------------------------------------------------------------------------------
# router: split-K FP32 router, grouped top-k


@check
def router_hi_lo_split_k_atomic_epilogue():
    """hi + lo reaches FP32 accuracy; the last split copies out and leaves workspace/counters zero."""
    torch = _torch()
    from decode_layer import router

    g = _gen(21)
    m, k, n = 3, 1024, 64
    x = torch.randn(m, k, generator=g).to(torch.bfloat16)
    w = torch.randn(n, k, generator=g) * 0.02
    hi, lo = router.split_fp32_weight(w)
    ws, counters = router.router_workspace(m, n, DEVICE)
    out = torch.zeros(m, n)
    ref = x.double() @ w.double().T
    for split_k in (4, 3, None):  # 3 does not divide the K tiles evenly; None is the heuristic
        out.zero_()
        router.router_logits(x, hi, lo, out, ws, counters, split_k=split_k)
        rel = ((out.double() - ref).abs().max() / ref.abs().max()).item()
        assert rel < 1e-4, f"split_k={split_k}: relative error {rel:.2e}"
        assert (ws == 0).all() and (counters == 0).all(), "workspace/counters not re-zeroed"
    hi_only = ((x.double() @ hi.double().T - ref).abs().max() / ref.abs().max()).item()
    assert hi_only > 1e-4, "test data too easy: bf16 hi alone already passes"
    out.fill_(-1.0)
    router.router_logits(x, hi, lo, out, ws, counters, split_k=4, finished=_finished(m, [1]))
    assert (out[1] == -1.0).all() and (ws == 0).all() and (counters == 0).all()
    assert ((out[[0, 2]].double() - ref[[0, 2]]).abs().max() / ref.abs().max()).item() < 1e-4


def _grouped_topk_ref(logits, bias, n_group, topk_group, topk, scale):
    torch = _torch()
    scores = torch.sigmoid(logits.double())
    biased = scores + bias.double()
    rows, e = biased.shape
    grouped = biased.view(rows, n_group, e // n_group)
    group_score = grouped.topk(2, dim=-1).values.sum(-1)
    keep = torch.zeros_like(group_score, dtype=torch.bool)
    keep.scatter_(1, group_score.topk(topk_group, dim=-1).indices, True)
    masked = biased.masked_fill(~keep.repeat_interleave(e // n_group, 1), float("-inf"))
    ids = masked.topk(topk, dim=-1).indices
    w = scores.gather(1, ids)
    return ids, w / w.sum(-1, keepdim=True) * scale


@check
def topk_grouped_selection():
    """DeepSeek-V3 grouped top-8 (8 groups, best 4) for 5 rows in one 8-row program, with stop."""
    torch = _torch()
    from decode_layer import router

    g = _gen(31)
    rows, experts = 5, 256
    logits = torch.randn(rows, experts, generator=g) * 2
    bias = torch.randn(experts, generator=g) * 0.3
    ids = torch.full((rows, 8), -7, dtype=torch.int32)
    weights = torch.zeros(rows, 8)
    router.grouped_topk(logits, bias, ids, weights, finished=_finished(rows, [4]))
    ref_ids, ref_w = _grouped_topk_ref(logits, bias, 8, 4, 8, 2.5)
    for r in range(4):
        got = dict(zip(ids[r].tolist(), weights[r].tolist()))
        want = dict(zip(ref_ids[r].tolist(), ref_w[r].tolist()))
        assert set(got) == set(want), f"row {r}: experts {sorted(got)} != {sorted(want)}"
        assert all(abs(got[e] - want[e]) < 1e-5 for e in want), f"row {r}: weights differ"
        groups = {e // 32 for e in got}
        assert len(groups) <= 4, f"row {r}: experts from {len(groups)} groups"
    assert (ids[4] == -7).all(), "finished row was written"


# ----------------------------------------------------------------------------------------------
# moe: align, up/gate, down


@check
def moe_align_layout():
    """Slots sorted by expert, each expert's run padded to BLOCK_M, block owners and total."""
    torch = _torch()
    from decode_layer import moe

    g = _gen(41)
    rows, topk, experts = 5, 4, 8
    ids = torch.stack([torch.randperm(experts, generator=g)[:topk] for _ in range(rows)]).to(torch.int32)
    routing = moe.moe_align(ids, experts, block_m=4)
    flat = ids.flatten()
    counts = torch.bincount(flat.long(), minlength=experts)
    padded = ((counts + 3) // 4) * 4
    assert int(routing.padded_slots) == int(padded.sum())
    pos = 0
    for e in range(experts):
        run = routing.sorted_slots[pos: pos + int(padded[e])]
        expect = (flat == e).nonzero().flatten().to(torch.int32)
        assert torch.equal(run[: int(counts[e])], expect), f"expert {e}: slots {run.tolist()}"
        assert (run[int(counts[e]):] == flat.numel()).all(), f"expert {e}: padding"
        blocks = routing.block_experts[pos // 4: (pos + int(padded[e])) // 4]
        assert (blocks == e).all(), f"expert {e}: block owners {blocks.tolist()}"
        pos += int(padded[e])
    assert (routing.block_experts[pos // 4:] == -1).all()


def _moe_case(finished):
    torch = _torch()
    from decode_layer import moe

    g = _gen(51)
    tokens, topk, experts, hidden, inter = 3, 4, 8, 256, 128
    ids = torch.stack([torch.randperm(experts, generator=g)[:topk] for _ in range(tokens)]).to(torch.int32)
    ids[1, 0] = ids[0, 0]  # two tokens share an expert: one block holds both
    topk_w = torch.rand(tokens, topk, generator=g)
    routing = moe.moe_align(ids, experts, block_m=16)
    x = _fp8_exact_activations(tokens, hidden, seed=52)
    w13 = torch.empty(experts, 2 * inter, hidden, dtype=getattr(torch, FP8))
    s13 = torch.empty(experts, 2 * inter // 128, hidden // 128)
    w13_ref = torch.empty(experts, 2 * inter, hidden, dtype=torch.float64)
    for e in range(experts):
        w13[e], s13[e], w13_ref[e] = _fp8_weight(2 * inter, hidden, seed=100 + e)
    h = torch.zeros(tokens * topk, inter, dtype=torch.bfloat16)
    moe.moe_up_gate(x, w13, s13, routing, h, finished=finished)
    ref_h = torch.zeros(tokens * topk, inter, dtype=torch.float64)
    for s in range(tokens * topk):
        e = int(ids.flatten()[s])
        gate_up = x[s // topk].double() @ w13_ref[e].T
        gate, up = gate_up[:inter], gate_up[inter:]
        ref_h[s] = gate * torch.sigmoid(gate) * up
    return routing, ids, topk_w, h, ref_h


@check
def moe_up_gate_silu():
    """fp8 up/gate + SiLU*mul over expert-sorted slots (one block shared by two tokens)."""
    _, _, _, h, ref_h = _moe_case(None)
    _close(h, ref_h, what="moe_up_gate")


@check
def moe_up_gate_stop():
    """With STOP, the finished token's slots are neither computed nor written."""
    _, ids, _, h, ref_h = _moe_case(_finished(3, [2]))
    topk = ids.shape[1]
    assert (h[2 * topk:] == 0).all(), "the finished token's slots were written"
    _close(h[: 2 * topk], ref_h[: 2 * topk], what="moe_up_gate live slots")


@check
def moe_down_routing_weights_with_stop():
    """fp8 down GEMM scaled by routing weights; a finished token's slots are skipped."""
    torch = _torch()
    from decode_layer import moe

    routing, ids, topk_w, _, _ = _moe_case(None)
    tokens, topk = ids.shape
    experts, hidden, inter = 8, 256, 128
    h = _fp8_exact_activations(tokens * topk, inter, seed=61)
    w2 = torch.empty(experts, hidden, inter, dtype=getattr(torch, FP8))
    s2 = torch.empty(experts, hidden // 128, inter // 128)
    w2_ref = torch.empty(experts, hidden, inter, dtype=torch.float64)
    for e in range(experts):
        w2[e], s2[e], w2_ref[e] = _fp8_weight(hidden, inter, seed=200 + e)
    out = torch.zeros(tokens * topk, hidden, dtype=torch.bfloat16)
    moe.moe_down(h, w2, s2, routing, topk_w, out, finished=_finished(tokens, [1]))
    for s in range(tokens * topk):
        if s // topk == 1:
            assert (out[s] == 0).all(), f"slot {s} of the finished token was written"
            continue
        e = int(ids.flatten()[s])
        ref = topk_w.flatten()[s].double() * (h[s].double() @ w2_ref[e].T)
        _close(out[s], ref, what=f"moe_down slot {s}")


# ----------------------------------------------------------------------------------------------
# The subprocess entry point and the pytest side.


def _run_checks(names: list[str]) -> dict[str, dict]:
    results = {}
    for name in names:
        t0 = time.perf_counter()
        try:
            CHECKS[name]()
            results[name] = {"ok": True, "seconds": time.perf_counter() - t0}
        except Exception:  # reported per check, not as a crash of the whole run
            import traceback

            results[name] = {"ok": False, "error": traceback.format_exc(limit=6),
                             "seconds": time.perf_counter() - t0}
    return results


def _widen_bf16_dot_operands() -> None:
    """Make the interpreter's tl.dot read bf16 operands as numbers (see the module docstring)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    original = interpreter.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        def widen(h):
            if h.dtype == tl.bfloat16:
                data = interpreter._convert_float(h.data, tl.bfloat16, tl.float32, None).view(np.float32)
                return interpreter.TensorHandle(data.reshape(h.data.shape), tl.float32)
            return h
        return original(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    interpreter.InterpreterBuilder.create_dot = create_dot


def main(argv: list[str]) -> int:
    """``python tests/demo/test_demo_kernels.py [--device cuda] [CHECK ...]``: run checks, print verdicts.

    On the CPU (default) the kernels run under TRITON_INTERPRET=1; with ``--device cuda`` they are
    compiled and run on the GPU, against the same references. Exit status 1 if any check failed.
    """
    global DEVICE
    if argv[:1] == ["--device"]:
        DEVICE, argv = argv[1], argv[2:]
    sys.path.insert(0, str(ROOT))
    if DEVICE == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before decode_layer's @triton.jit run
        _widen_bf16_dot_operands()
    else:
        _torch().set_default_device(DEVICE)
    results = _run_checks(argv or list(CHECKS))
    print("RESULTS " + json.dumps(results))
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


@pytest.fixture(scope="module")
def interpreter_results() -> dict[str, dict]:
    """Run every check once, in one interpreter subprocess (imports are paid once)."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, __file__], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")]
    if not lines:
        pytest.fail(f"interpreter subprocess failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULTS "):])


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_kernel_matches_torch(name: str, interpreter_results: dict[str, dict]) -> None:
    """Each kernel path agrees with its torch reference under TRITON_INTERPRET=1."""
    result = interpreter_results[name]
    assert result["ok"], result.get("error")
