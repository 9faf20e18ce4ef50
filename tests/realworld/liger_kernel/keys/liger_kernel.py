"""Liger-Kernel surveyed through the autograd Functions its modules call (``LigerRMSNorm``,
``LigerLayerNorm``, ``liger_rotary_pos_emb``, ``LigerSiLUMulFunction`` in ``LigerSwiGLUMLP``,
``LigerSoftmax``): forward passes at the widths of Llama-3 8B and 70B.

Left out: ``LigerCrossEntropyFunction`` and the fused linear cross entropy, whose launchers count the
non-ignored targets on the host (``target_mask.sum().item()``) before they launch, which a meta tensor
cannot answer; ``LigerFusedMoEFunction``, which sizes its tiles from ``.item()`` the same way.
"""

from liger_kernel.ops.layer_norm import LigerLayerNormFunction
from liger_kernel.ops.rms_norm import LigerRMSNormFunction
from liger_kernel.ops.rope import LigerRopeFunction
from liger_kernel.ops.softmax import LigerSoftmaxFunction
from liger_kernel.ops.swiglu import LigerSiLUMulFunction

import regsurvey as rs

TOKENS = 4096  # one 4k-token sequence: the row count only sizes the grid of these row-per-program kernels

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], model=["8b", "70b"], dtype=["bf16"])
HIDDEN = {"8b": 4096, "70b": 8192}
INTERMEDIATE = {"8b": 14336, "70b": 28672}
HEADS = {"8b": (32, 8), "70b": (64, 8)}  # query heads, KV heads; head_dim 128


@matrix.kind(axes=["model", "dtype"])
def rms_norm(model, dtype):
    hidden = HIDDEN[model]
    LigerRMSNormFunction.apply(rs.tensor((TOKENS, hidden), dtype), rs.tensor((hidden,), dtype), 1e-5)


@matrix.kind(axes=["model", "dtype"])
def layer_norm(model, dtype):
    hidden = HIDDEN[model]
    LigerLayerNormFunction.apply(rs.tensor((TOKENS, hidden), dtype), rs.tensor((hidden,), dtype),
                                 rs.tensor((hidden,), dtype), 1e-5)


@matrix.kind(axes=["model", "dtype"])
def rope(model, dtype):
    q_heads, kv_heads = HEADS[model]
    q = rs.tensor((1, q_heads, TOKENS, 128), dtype)
    k = rs.tensor((1, kv_heads, TOKENS, 128), dtype)
    cos, sin = rs.tensor((1, TOKENS, 128), dtype), rs.tensor((1, TOKENS, 128), dtype)
    LigerRopeFunction.apply(q, k, cos, sin)


@matrix.kind(axes=["model", "dtype"])
def swiglu(model, dtype):
    width = INTERMEDIATE[model]
    LigerSiLUMulFunction.apply(rs.tensor((TOKENS, width), dtype), rs.tensor((TOKENS, width), dtype))


@matrix.kind(axes=["dtype"])
def softmax(dtype):
    # Attention-score rows of a 4k context, and 32k-vocabulary rows (its launcher stops at 64k columns).
    LigerSoftmaxFunction.apply(rs.tensor((TOKENS, 4096), dtype))
    LigerSoftmaxFunction.apply(rs.tensor((16, 32000), dtype))
