"""torchao's blockwise fp8 inference kernels (``torchao.kernel.blockwise_quantization``: DeepSeek-V3's own
inference kernels as torchao ships them) surveyed at two linear layers of a DeepSeek-V3 decode step: the
query down-projection (7168 -> 1536) and an expert's down projection (2048 -> 7168), for 4 or 64 tokens.

A step quantizes the activations per 128-element block (``fp8_blockwise_act_quant``) and multiplies them
with a 128x128-block-scaled fp8 weight (``blockwise_fp8_gemm``). The GEMM is autotuned over 48 configs
(M tile 16 to 128, N tile 32 to 128, 3 to 6 stages): every one is a row, as each may be the one a GPU
picks. ``blockwise_fp8_gemm`` is a ``torch.library.custom_op``, which on meta tensors runs its shape-only
fake and launches nothing: the keys call the op's own implementation (``_init_fn``), as gemlite's do.

Not on gfx942: the library takes only the OCP fp8 formats (its quantizer asserts e4m3fn or e5m2), which
MI300X's Triton cannot compute with (it has the FNUZ ones).
"""

from torchao.kernel import blockwise_quantization as blockwise

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950", "sm90", "sm100"], layer=["q_a", "expert_down"], width=[4, 64])

SHAPES = {"q_a": (7168, 1536), "expert_down": (2048, 7168)}  # (K, N) of y = x @ W^T
BLOCK = 128


@matrix.kind(axes=["layer", "width"])
def fp8_linear(layer, width):
    """The activations quantized per block, then the block-scaled GEMM."""
    k, n = SHAPES[layer]
    fp8 = rs.tensor((1,), "e4m3").dtype
    xq, xs = blockwise.fp8_blockwise_act_quant(rs.tensor((width, k), "bf16"), BLOCK, fp8)
    gemm = blockwise._get_triton_impls().gemm
    gemm._init_fn(xq, xs, rs.tensor((n, k), fp8), rs.tensor((n // BLOCK, k // BLOCK), "fp32"), BLOCK)
