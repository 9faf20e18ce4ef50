"""Keys of the demo project: one decode layer of an MLA + MoE model (DeepSeek-V3 / GLM-5 shapes).

Each kind calls the project's own launcher (``decode_layer``) with data-less tensors shaped as in
production; regsurvey captures the ``kernel[grid](...)`` each launcher ends in. Axes:

* ``tp``: tensor parallelism, shards the 128 heads (32 or 16 per GPU), q_b's rows, o_proj's columns
  and the experts' intermediate dimension;
* ``width``: rows in one decode launch (GEMM M, attention queries); launchers tune tiles per width;
* ``cache``: the MLA KV-cache dtype (only kinds that touch the cache);
* ``stop``: compile the path where rows that already finished skip their work.

A kind takes only the axes that change what its launcher builds.
"""

from __future__ import annotations

import regsurvey as rs
from decode_layer import absorb, attention, moe, proj, router

matrix = rs.Matrix(
    targets=["gfx950", "sm90"],
    tp=[4, 8], width=[2, 4, 8], cache=["bf16", "e4m3"], stop=[False, True],
    labels={"width": "w"},
)

# Model figures (DeepSeek-V3, and the GLM-5 front projection from DEMO-MODEL.md).
HIDDEN = 7168
FRONT_HIDDEN = 6144  # the GLM-5-class front projection's input width
Q_LORA = 2048
KV_LORA = 512
ROPE = 64
QK_NOPE = 128
V_HEAD = 128
HEADS = 128
EXPERTS = 256
TOPK = 8
MOE_INTERMEDIATE = 2048
PAGE = 64  # tokens per KV-cache page
CACHE_PAGES = 4096  # pages in the pool
MAX_SEQ = 8192  # longest context the block table covers
BLOCK = proj.SCALE_BLOCK


def _finished(width: int, stop: bool):
    """The per-row stop mask the STOP path reads, or None to build the path without it."""
    return rs.tensor((width,), "int32") if stop else None


def _fp8_weight(rows: int, cols: int):
    """An fp8 e4m3 weight with its 128x128 block scales."""
    return rs.tensor((rows, cols), "e4m3"), rs.tensor((-(-rows // BLOCK), cols // BLOCK), "fp32")


@matrix.kind(axes=["width", "stop"])
def front_proj(width, stop):
    """Input RMSNorm + q_a | kv_a | k_rope projection, 2,624 x 6,144 fp8."""
    rows = Q_LORA + KV_LORA + ROPE
    w, w_scale = _fp8_weight(rows, FRONT_HIDDEN)
    proj.front_proj(rs.tensor((width, FRONT_HIDDEN), "bf16"), rs.tensor((FRONT_HIDDEN,), "bf16"),
                    w, w_scale, rs.tensor((width, rows), "bf16"), finished=_finished(width, stop))


@matrix.kind(axes=["tp", "width", "stop"])
def q_b(tp, width, stop):
    """q_a_layernorm + q_b: q_lora (a view of front_proj's output) -> heads/tp * 192."""
    heads = HEADS // tp
    front_rows = Q_LORA + KV_LORA + ROPE
    q_lora = rs.tensor((width, Q_LORA), "bf16", stride=(front_rows, 1))
    w, w_scale = _fp8_weight(heads * (QK_NOPE + ROPE), Q_LORA)
    proj.q_b_proj(q_lora, rs.tensor((Q_LORA,), "bf16"), w, w_scale,
                  rs.tensor((width, heads * (QK_NOPE + ROPE)), "bf16"), finished=_finished(width, stop))


@matrix.kind(axes=["width", "stop"])
def q_absorb(width, stop):
    """q_nope @ W_UK per head (128 -> 512) and the query's RoPE: q_b's output -> mla_decode's query."""
    heads = HEADS // 8  # the head count only sizes the grid
    absorb.q_absorb(rs.tensor((width, heads * (QK_NOPE + ROPE)), "bf16"),
                    rs.tensor((heads, QK_NOPE, KV_LORA), "bf16"), rs.tensor((MAX_SEQ, ROPE), "fp32"),
                    rs.tensor((width,), "int32"), rs.tensor((width, heads, KV_LORA + ROPE), "bf16"),
                    finished=_finished(width, stop))


@matrix.kind(axes=["cache", "stop"])
def kv_write(cache, stop):
    """kv_a_layernorm + RoPE + store of the new tokens' latent KV into the paged cache.

    One program per row: the width only sizes the grid, so the kind has no width axis.
    """
    width = 8
    front_rows = Q_LORA + KV_LORA + ROPE
    kv_a = rs.tensor((width, KV_LORA + ROPE), "bf16", stride=(front_rows, 1), offset=Q_LORA)
    attention.kv_write(kv_a, rs.tensor((KV_LORA,), "bf16"), rs.tensor((MAX_SEQ, ROPE), "fp32"),
                       rs.tensor((width,), "int32"), rs.tensor((width,), "int32"),
                       rs.tensor((CACHE_PAGES, PAGE, KV_LORA + ROPE), cache),
                       kv_scale=1.0 if cache == "bf16" else 0.05, finished=_finished(width, stop))


@matrix.kind(axes=["tp", "width", "cache", "stop"])
def mla_decode(tp, width, cache, stop):
    """Absorbed-MLA decode attention (split + merge kernels) over the paged latent cache."""
    heads = HEADS // tp
    attention.mla_decode(
        rs.tensor((width, heads, KV_LORA + ROPE), "bf16"),
        rs.tensor((CACHE_PAGES, PAGE, KV_LORA + ROPE), cache),
        rs.tensor((width, MAX_SEQ // PAGE), "int32"), rs.tensor((width,), "int32"),
        rs.tensor((width, heads, KV_LORA), "bf16"),
        sm_scale=(QK_NOPE + ROPE) ** -0.5, max_seq_len=MAX_SEQ,
        kv_scale=1.0 if cache == "bf16" else 0.05, finished=_finished(width, stop))


@matrix.kind(axes=["width", "stop"])
def v_up(width, stop):
    """attention's latent output @ W_UV per head (512 -> 128): mla_decode's output -> o_proj's input."""
    heads = HEADS // 8
    absorb.v_up(rs.tensor((width, heads, KV_LORA), "bf16"), rs.tensor((heads, KV_LORA, V_HEAD), "bf16"),
                rs.tensor((width, heads * V_HEAD), "bf16"), finished=_finished(width, stop))


@matrix.kind(axes=["tp", "width", "stop"])
def o_proj(tp, width, stop):
    """o_proj (heads/tp * 128 -> hidden) with the residual added in place."""
    heads = HEADS // tp
    w, w_scale = _fp8_weight(HIDDEN, heads * V_HEAD)
    hidden = rs.tensor((width, HIDDEN), "bf16")
    proj.o_proj(rs.tensor((width, heads * V_HEAD), "bf16"), w, w_scale, hidden, hidden,
                finished=_finished(width, stop))


@matrix.kind(axes=["width", "stop"], name="router")
def router_logits(width, stop):
    """FP32 router logits from BF16 hi + lo weights (256 x hidden), split-K with an atomic epilogue."""
    workspace, counters = router.router_workspace(16, EXPERTS, rs.device())
    router.router_logits(rs.tensor((width, HIDDEN), "bf16"), rs.tensor((EXPERTS, HIDDEN), "bf16"),
                         rs.tensor((EXPERTS, HIDDEN), "bf16"), rs.tensor((width, EXPERTS), "fp32"),
                         workspace, counters, finished=_finished(width, stop))


@matrix.kind(axes=["width", "stop"])
def topk(width, stop):
    """DeepSeek-V3 grouped top-8 of 256 experts (8 groups, best 4, sigmoid + bias, scale 2.5)."""
    router.grouped_topk(rs.tensor((width, EXPERTS), "fp32"), rs.tensor((EXPERTS,), "fp32"),
                        rs.tensor((width, TOPK), "int32"), rs.tensor((width, TOPK), "fp32"),
                        n_group=8, topk_group=4, routed_scaling=2.5, finished=_finished(width, stop))


@matrix.kind(axes=["width"])
def moe_align(width):
    """Sort the width x 8 (token, expert) slots by expert, padded to the MoE GEMMs' row block."""
    moe.moe_align(rs.tensor((width, TOPK), "int32"), EXPERTS)


def _routing(width: int):
    """The expert-sorted layout moe_align produces for ``width`` tokens.

    Built from rs.tensor so that, when the GPU fidelity check runs this body for real, the buffers
    are zero-filled (every slot and expert index in bounds) rather than uninitialised.
    """
    slots = width * TOPK
    blocks = moe.next_power_of_2(slots)
    return moe.MoeRouting(rs.tensor((blocks * moe.MOE_BLOCK_M,), "int32"), rs.tensor((blocks,), "int32"),
                          rs.tensor((1,), "int32"), slots, moe.MOE_BLOCK_M)


@matrix.kind(axes=["tp", "width", "stop"])
def moe_up_gate(tp, width, stop):
    """fp8 up/gate GEMM + SiLU*mul over the selected experts (intermediate 2048 / tp)."""
    inter = MOE_INTERMEDIATE // tp
    moe.moe_up_gate(rs.tensor((width, HIDDEN), "bf16"), rs.tensor((EXPERTS, 2 * inter, HIDDEN), "e4m3"),
                    rs.tensor((EXPERTS, 2 * inter // BLOCK, HIDDEN // BLOCK), "fp32"), _routing(width),
                    rs.tensor((width * TOPK, inter), "bf16"), finished=_finished(width, stop))


@matrix.kind(axes=["tp", "width", "stop"])
def moe_down(tp, width, stop):
    """fp8 down GEMM (intermediate 2048 / tp -> hidden) scaled by the routing weights."""
    inter = MOE_INTERMEDIATE // tp
    moe.moe_down(rs.tensor((width * TOPK, inter), "bf16"), rs.tensor((EXPERTS, HIDDEN, inter), "e4m3"),
                 rs.tensor((EXPERTS, HIDDEN // BLOCK, inter // BLOCK), "fp32"), _routing(width),
                 rs.tensor((width, TOPK), "fp32"), rs.tensor((width * TOPK, HIDDEN), "bf16"),
                 finished=_finished(width, stop))
