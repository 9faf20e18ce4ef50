"""conch (Stack AV's ``conch-triton-kernels``) surveyed through its public ops (``conch.ops``): the
kernels of one decode step of a vLLM-served Llama-3 (8B on one GPU; 70B at TP8), with the KV cache in
bf16 or in fp8 e4m3 with per-tensor scales (stored as uint8, as vLLM stores it).

conch reads the platform once (``conch.current_platform``: ``torch.version.hip``/``cuda``, the device
name) and picks AMD's fnuz fp8 for the KV cache and its own eviction hints from it; each target's worker
imports the library afresh, as each GPU would.

Left out: the vision ops (``nms`` autotunes on the box count, ``bev_pool`` counts intervals on the
host) and the bitsandbytes ops, which ``CONCH_ENABLE_BNB`` gates and which read ``.item()``.
"""

import torch
from conch.ops.activation.silu_and_mul import silu_and_mul
from conch.ops.attention.paged_attention import paged_attention
from conch.ops.attention.varlen_attention import varlen_attention
from conch.ops.embedding.rotary_embedding import rotary_embedding
from conch.ops.normalization.rms_norm import fused_add_rms_norm
from conch.ops.quantization.fp8 import scaled_fp8_quant
from conch.ops.quantization.gemm import mixed_precision_gemm
from conch.ops.vllm.reshape_and_cache import reshape_and_cache

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], model=["8b", "70b-tp8"], width=[4, 16],
                   cache=["bf16", "fp8"])

HIDDEN = {"8b": 4096, "70b-tp8": 8192}
HEADS = {"8b": (32, 8), "70b-tp8": (8, 1)}  # query heads, KV heads on one GPU
INTERMEDIATE = {"8b": 14336, "70b-tp8": 28672 // 8}
HEAD = 128
PAGE = 32  # tokens per KV-cache block (conch's tuning assumes 32)
PAGES = 8192  # blocks in the pool
CONTEXT = 4096  # longest sequence the block table covers
PREFILL = 512  # tokens of one prefill chunk


def _cache(model: str, cache: str):
    """Key and value caches (blocks, block, KV heads, head) and conch's name for their dtype."""
    kv_heads = HEADS[model][1]
    dtype = "uint8" if cache == "fp8" else "bf16"
    shape = (PAGES, PAGE, kv_heads, HEAD)
    return rs.tensor(shape, dtype), rs.tensor(shape, dtype), ("fp8" if cache == "fp8" else "auto")


def _scales(cache: str):
    return (rs.tensor((1,), "fp32"), rs.tensor((1,), "fp32")) if cache == "fp8" else (None, None)


@matrix.kind(axes=["model", "width", "cache"])
def paged_decode(model, width, cache):
    """Decode attention over the paged cache (two launches: the splits, then their reduction)."""
    q_heads, _ = HEADS[model]
    k_cache, v_cache, cache_dtype = _cache(model, cache)
    k_scale, v_scale = _scales(cache)
    paged_attention(rs.tensor((width, q_heads, HEAD), "bf16"), k_cache, v_cache,
                    rs.tensor((width, CONTEXT // PAGE), "int32"), rs.tensor((width,), "int32"),
                    kv_cache_dtype=cache_dtype, k_scale=k_scale, v_scale=v_scale)


@matrix.kind(axes=["model", "cache"])
def varlen_prefill(model, cache):
    """Causal prefill of one chunk against the paged cache (varlen attention)."""
    q_heads, _ = HEADS[model]
    k_cache, v_cache, cache_dtype = _cache(model, cache)
    k_scale, v_scale = _scales(cache)
    varlen_attention(rs.tensor((PREFILL, q_heads, HEAD), "bf16"), k_cache, v_cache,
                     rs.tensor((2,), "int32"), PREFILL, rs.tensor((1,), "int32"), CONTEXT,
                     rs.tensor((1, CONTEXT // PAGE), "int32"), causal=True, kv_cache_dtype=cache_dtype,
                     q_scale=rs.tensor((1,), "fp32") if cache == "fp8" else None, k_scale=k_scale, v_scale=v_scale)


@matrix.kind(axes=["model", "width", "cache"])
def cache_write(model, width, cache):
    """The step's new keys and values written into the paged cache (vLLM's reshape_and_cache)."""
    _, kv_heads = HEADS[model]
    k_cache, v_cache, cache_dtype = _cache(model, cache)
    k_scale, v_scale = _scales(cache)
    reshape_and_cache(rs.tensor((width, kv_heads, HEAD), "bf16"), rs.tensor((width, kv_heads, HEAD), "bf16"),
                      k_cache, v_cache, rs.tensor((width,), "int64"), kv_cache_dtype=cache_dtype,
                      k_scale=k_scale, v_scale=v_scale)


@matrix.kind(axes=["model", "width"])
def rope(model, width):
    """NeoX rotary embedding of the step's queries and keys."""
    q_heads, kv_heads = HEADS[model]
    rotary_embedding(rs.tensor((width,), "int64"), rs.tensor((width, q_heads * HEAD), "bf16"),
                     rs.tensor((width, kv_heads * HEAD), "bf16"), HEAD, rs.tensor((CONTEXT, HEAD), "bf16"))


@matrix.kind(axes=["model", "width"])
def add_rms_norm(model, width):
    """The residual add and RMSNorm between the attention and the MLP."""
    hidden = HIDDEN[model]
    fused_add_rms_norm(rs.tensor((width, hidden), "bf16"), rs.tensor((width, hidden), "bf16"),
                       rs.tensor((hidden,), "bf16"), 1e-5)


@matrix.kind(axes=["model", "width"])
def mlp_act(model, width):
    """SiLU(gate) * up over the merged gate_up projection's output."""
    silu_and_mul(rs.tensor((width, 2 * INTERMEDIATE[model]), "bf16"))


@matrix.kind(axes=["model", "width"])
def act_quant(model, width):
    """Static per-tensor fp8 quantization of the activations (an fp8 checkpoint's linear layers; conch 1.3
    has no dynamic scaling yet)."""
    scaled_fp8_quant(rs.tensor((width, HIDDEN[model]), "bf16"), rs.tensor((1,), "fp32"))


@matrix.kind(axes=["model", "width"])
def w4a16_down(model, width):
    """The MLP's down projection with 4-bit weights in groups of 128 (GPTQ-style, no zero points)."""
    k, n = INTERMEDIATE[model], HIDDEN[model]
    mixed_precision_gemm(rs.tensor((width, k), "bf16"), rs.tensor((k // 8, n), "int32"),
                         rs.tensor((k // 128, n), "bf16"), None, 4, 8, 128)


del torch  # imported for conch's sake only
