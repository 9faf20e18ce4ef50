"""triton_kernels (OpenAI's MoE kernels, packaged as ``tokenspeed-triton-kernels``) surveyed through its public
``matmul``, ``topk`` and ragged-metadata launchers: the MoE block of one decode step of gpt-oss, as a serving
engine runs it (vLLM's and SGLang's "triton" MoE backend).

One step routes ``width`` tokens to 4 of the experts (``topk``, then the bitmatrix and ragged metadata
kernels), gathers each token's rows into the expert-grouped gate/up projection with the SwiGLU fused
(alpha 1.702, clamp 7.0), and scatters the down projection back, scaled by the routing weights. Weights
are mxfp4 (e2m1 values, e8m0 scales per 32) in the layout each target's kernels read: Hopper's and
Blackwell's swizzles on NVIDIA, CDNA4's scale swizzle on gfx950, plain strided elsewhere. The engines fix
some choices per platform, and so do these keys: Blackwell runs the persistent TMA kernel, Hopper never
splits K, AMD reads 256-deep K tiles (the CDNA4 scale swizzle needs them). ``bf16`` keeps the weights in
bf16 (no swizzle), as the kernels run on a platform without mxfp4 support.

The library picks its tiles, split-K and persistence from the device's SM count and the shapes; each
kernel is compiled under a name that spells them (``_p_matmul_NNN_bf16xbf16xmxfp4_..._swiglu``).
"""

import contextlib

from triton.language.target_info import cuda_capability_geq, is_hip
from triton_kernels.matmul import FnSpecs, FusedActivation, PrecisionConfig, matmul, scoped_opt_flags_constraints
from triton_kernels.swiglu import swiglu_fn
from triton_kernels.tensor import FP4, convert_layout, make_ragged_tensor_metadata, wrap_torch_tensor
from triton_kernels.tensor_details import layout
from triton_kernels.topk import topk

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], model=["20b", "120b"], width=[4, 64],
                   weights=["mxfp4", "bf16"])

HIDDEN = 2880
INTERMEDIATE = 2880  # per expert; gate and up are one (2 x 2880)-column weight
EXPERTS = {"20b": 32, "120b": 128}
TOPK = 4
MX_BLOCK = 32


def _platform_constraints() -> dict:
    """What the engines fix per platform before their first MoE call."""
    if is_hip():
        return {"block_k": 256}
    if cuda_capability_geq(10, 0):
        return {"is_persistent": True, "epilogue_subtile": 1}
    if cuda_capability_geq(9, 0):
        return {"split_k": 1}
    return {}


def _weight(weights: str, experts: int, rows: int, cols: int):
    """An expert weight (experts, cols -> rows), as the engine hands it to ``matmul``, and its scales."""
    if weights == "bf16":
        return rs.tensor((experts, rows, cols), "bf16").transpose(-2, -1), None
    # Stored (experts, rows, cols / 2) packed e2m1 and (experts, rows, cols / 32) e8m0; the quantized
    # axis (K) goes to -2, then each target's layout.
    values = rs.tensor((experts, rows, cols // 2), "uint8").transpose(-2, -1)
    scales = rs.tensor((experts, rows, cols // MX_BLOCK), "uint8").transpose(-2, -1)
    value_layout = layout.make_default_matmul_mxfp4_w_layout(mx_axis=-2)
    scale_layout = layout.make_default_matmul_mxfp4_w_scale_layout(mx_axis=-2, num_warps=8)
    return (convert_layout(wrap_torch_tensor(values, dtype=FP4), value_layout),
            convert_layout(wrap_torch_tensor(scales), scale_layout))


def _precision(scales) -> PrecisionConfig:
    if scales is None:
        return PrecisionConfig()
    return PrecisionConfig(b_mx_scale=scales, b_microblock_size=MX_BLOCK)


@matrix.kind(axes=["model", "width", "weights"])
def moe(model, width, weights):
    """Routing, then the gate/up projection with SwiGLU (gathered) and the down projection (scattered)."""
    experts = EXPERTS[model]
    sparse = topk(rs.tensor((width, experts), "bf16"), TOPK, apply_softmax=True)
    sorted_rows = sparse.mask_metadata.col_sorted_indx
    gather, scatter = sorted_rows // TOPK, sorted_rows
    gate_scales = sparse.vals.reshape(-1)[scatter]
    ragged = make_ragged_tensor_metadata(sparse.mask_metadata.col_sum, width * TOPK)

    swiglu = FusedActivation(FnSpecs("swiglu", swiglu_fn, ("alpha", "limit"), reduction_n=2), (1.702, 7.0))
    w13, s13 = _weight(weights, experts, 2 * INTERMEDIATE, HIDDEN)
    w2, s2 = _weight(weights, experts, HIDDEN, INTERMEDIATE)
    constraints = _platform_constraints() if weights == "mxfp4" else {}
    with scoped_opt_flags_constraints(constraints) if constraints else contextlib.nullcontext():
        hidden = matmul(rs.tensor((width, HIDDEN), "bf16"), w13, rs.tensor((experts, 2 * INTERMEDIATE), "fp32"),
                        a_ragged_metadata=ragged, gather_indx=gather, precision_config=_precision(s13),
                        fused_activation=swiglu)
        matmul(hidden, w2, rs.tensor((experts, HIDDEN), "fp32"), a_ragged_metadata=ragged, scatter_indx=scatter,
               precision_config=_precision(s2), gammas=gate_scales)
