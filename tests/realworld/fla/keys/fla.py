"""flash-linear-attention (fla-core) surveyed through its public ops: the gated delta rule that
Qwen3-Next's linear-attention layers call (``chunk_gated_delta_rule`` for prefill,
``fused_recurrent_gated_delta_rule`` for decode), at Qwen3-Next-80B's head layout (16 query/key heads,
32 value heads, head dim 128).

fla reads the device when it is imported (``fla.utils``: ``IS_AMD``, ``IS_NVIDIA_HOPPER``, the shared
memory per block) and builds its kernels' config lists from those: it is imported here, as a user
imports it, and regsurvey imports this file once per target, while that target is the device.

Its small helper kernels (the L2 norm of q and k, the gate's chunked cumsum) are pinned to one config
each (num_warps 4); every config of the four main kernels that the autotuner keeps is surveyed.
"""

from fla.modules.norm.l2norm import l2norm_fwd_kernel
from fla.ops.gated_delta_rule import chunk_gated_delta_rule, fused_recurrent_gated_delta_rule
from fla.ops.utils.cumsum import chunk_local_cumsum_scalar_kernel

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], tokens=[4096], batch=[1, 32], dtype=["bf16"],
                   labels={"tokens": "t", "batch": "b"})
QK_HEADS, V_HEADS, HEAD_DIM = 16, 32, 128


def _pin_helpers():
    rs.pin_config(l2norm_fwd_kernel, 12)  # num_warps 4, BT 32
    rs.pin_config(chunk_local_cumsum_scalar_kernel.fn, 2)  # num_warps 4 (under its @triton.heuristics)


@matrix.kind(axes=["tokens", "dtype"])
def gated_delta_rule_prefill(tokens, dtype):
    _pin_helpers()
    q = rs.tensor((1, tokens, QK_HEADS, HEAD_DIM), dtype)
    k = rs.tensor((1, tokens, QK_HEADS, HEAD_DIM), dtype)
    v = rs.tensor((1, tokens, V_HEADS, HEAD_DIM), dtype)
    g = rs.tensor((1, tokens, V_HEADS), "fp32")
    beta = rs.tensor((1, tokens, V_HEADS), dtype)
    chunk_gated_delta_rule(q, k, v, g, beta, initial_state=rs.tensor((1, V_HEADS, HEAD_DIM, HEAD_DIM), "fp32"),
                           output_final_state=True, use_qk_l2norm_in_kernel=True)


@matrix.kind(axes=["batch", "dtype"])
def gated_delta_rule_decode(batch, dtype):
    q = rs.tensor((batch, 1, QK_HEADS, HEAD_DIM), dtype)
    k = rs.tensor((batch, 1, QK_HEADS, HEAD_DIM), dtype)
    v = rs.tensor((batch, 1, V_HEADS, HEAD_DIM), dtype)
    g = rs.tensor((batch, 1, V_HEADS), "fp32")
    beta = rs.tensor((batch, 1, V_HEADS), dtype)
    state = rs.tensor((batch, V_HEADS, HEAD_DIM, HEAD_DIM), "fp32")
    fused_recurrent_gated_delta_rule(q, k, v, g=g, beta=beta, initial_state=state, output_final_state=True,
                                     use_qk_l2norm_in_kernel=True)
