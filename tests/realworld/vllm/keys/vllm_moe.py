"""vLLM 0.33.0's fused MoE (``vllm.model_executor.layers.fused_moe``), its Triton path: the MoE block of one
decode step of DeepSeek-V3 (256 experts, 8 per token, hidden 7168, expert intermediate 2048, fp8 weights
in 128x128 blocks with per-token-group fp8 activations) and of Qwen3-235B-A22B (128 experts, 8 per
token, hidden 4096, expert intermediate 1536, bf16), at TP4 and TP8 (the experts' intermediate dimension
is split: DeepSeek-V3 N = 512 or 256, Qwen3 N = 384 or 192) for 4 and 64 tokens.

The kind body calls ``fused_experts_impl``, the Python implementation of vLLM's ``fused_experts`` op: the
public ``fused_experts`` goes through ``torch.ops.vllm.fused_experts``, which on meta tensors runs the op's
fake (shape-only) implementation and launches nothing. ``fused_experts_impl`` looks up vLLM's tuned
config (``try_get_optimal_moe_config`` -> ``get_moe_configs`` -> ``get_config_file_name``: a JSON file
named by E, N, the device name and the quantization, shipped in ``fused_moe/configs/``; the default
config when none matches), then launches ``fused_moe_kernel`` for the gate/up projection, applies the
activation, and launches it again for the down projection. The body prints the config file name vLLM
looks for and whether vLLM ships it (``said:`` under the key).

4 tokens take the naive block assignment (``num_tokens * top_k * 4 <= E``: no alignment); 64 tokens are
aligned to the config's M tile first (``moe_align_block_size``). The compiled ops around the GEMMs are
shape-only stand-ins here (``vllm_compiled_ops``: vLLM's CUDA extension needs a driver to load).
"""

import os

import vllm_compiled_ops  # noqa: F401  (defines vLLM's missing compiled ops: before vLLM's modules)
from vllm.model_executor.layers.fused_moe import fused_moe
from vllm.platforms import current_platform

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], model=["dsv3", "qwen3"], tp=[4, 8], width=[4, 64],
                   labels={"width": "w"})

# experts, experts per token, hidden, expert intermediate (before TP), fp8 weight blocks (None: bf16)
MODELS = {
    "dsv3": (256, 8, 7168, 2048, [128, 128]),
    "qwen3": (128, 8, 4096, 1536, None),
}


def _weight(experts: int, rows: int, cols: int, block_shape):
    """An expert weight (experts, rows, cols), as vLLM keeps it, and its block scales (None for bf16)."""
    if block_shape is None:
        return rs.tensor((experts, rows, cols), "bf16"), None
    # The checkpoint's e4m3fn weights are converted to the platform's fp8 when loaded.
    scales = rs.tensor((experts, rows // block_shape[0], cols // block_shape[1]), "fp32")
    return rs.tensor((experts, rows, cols), current_platform.fp8_dtype()), scales


@matrix.kind(axes=["model", "tp", "width"])
def moe(model, tp, width):
    """Routed experts of one decode step: gate/up GEMM, SiLU-and-mul, down GEMM (``fused_experts_impl``)."""
    experts, top_k, hidden, intermediate, block_shape = MODELS[model]
    n = intermediate // tp
    fp8 = block_shape is not None
    config_file = fused_moe.get_config_file_name(experts, n, "fp8_w8a8" if fp8 else None, block_shape)
    shipped = os.path.exists(os.path.join(os.path.dirname(fused_moe.__file__), "configs", config_file))
    print(f"MoE config {config_file}: {'shipped with vLLM' if shipped else 'not shipped (default config)'}")

    w1, w1_scale = _weight(experts, 2 * n, hidden, block_shape)
    w2, w2_scale = _weight(experts, hidden, n, block_shape)
    fused_moe.fused_experts_impl(
        rs.tensor((width, hidden), "bf16"), w1, w2,
        rs.tensor((width, top_k), "fp32"), rs.tensor((width, top_k), "int32"),
        activation="silu", use_fp8_w8a8=fp8, w1_scale=w1_scale, w2_scale=w2_scale, block_shape=block_shape)

