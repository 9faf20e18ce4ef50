"""vLLM 0.33.0's Triton attention kernels at one decode step, with the KV cache in bf16 or in fp8:

* ``unified_decode``: ``unified_attention`` (``vllm/v1/attention/ops/triton_unified_attention.py``), the
  Triton attention backend's kernel, for Qwen3-235B-A22B's GQA layers (64 query heads, 4 KV heads of
  128; TP4: 16 query heads and 1 KV head per GPU, TP8: 8 and 1, the KV heads replicated), through the
  backend's own ``TritonAttentionImpl.forward``: it splits the paged cache into K and V, views an fp8
  cache as the platform's fp8 type, bounds the views' pointer range on ROCm, expands the scales and calls
  ``unified_attention``. 4 sequences take its split-KV ("3D") kernel and the segment reduction; 256
  sequences exceed the backend's threshold (``MIN_LAUNCH_GRID_SIZE_2D`` // KV heads) and take the 2D
  kernel alone. With an fp8 cache the attention layer quantizes the query to fp8 where the backend says
  it can (``supports_quant_query_input``).
* ``mla_decode``: ``decode_attention_fwd`` (``vllm/v1/attention/ops/triton_decode_attention.py``) on its
  MLA path, as the Triton MLA backend calls it for DeepSeek-V3 (128 heads; TP4: 32, TP8: 16; the
  absorbed query of 512 + 64 against the latent cache of 576, values its first 512), for 4 and 64
  sequences: the grouped stage 1 over the KV splits, then the reduction (stage 2). The splits are the
  backend's own (``_compute_num_kv_splits``: one per 512 tokens of context, to a power of two).
* ``gqa_decode``: the same launcher's grouped path without MLA, at Qwen3's GQA shapes (16 sequences).
  vLLM 0.33's own backends call ``decode_attention_fwd`` for MLA only; this is the launcher as a user of
  the op calls it.

Every KV cache is one layer's view into the allocation of all the model's layers (vLLM's default
layout: layers outermost, then blocks, tokens, heads), 65536 blocks of 16 tokens, 4096 tokens of
context per sequence.
"""

import types

import torch
import vllm_compiled_ops  # noqa: F401  (defines vLLM's missing compiled ops: before vLLM's modules)
from vllm.platforms import current_platform
from vllm.v1.attention.backends.mla.triton_mla import _compute_num_kv_splits
from vllm.v1.attention.backends.triton_attn import (
    MIN_LAUNCH_GRID_SIZE_2D,
    NUM_PAR_SOFTMAX_SEGMENTS,
    TritonAttentionImpl,
    TritonAttentionMetadata,
)
from vllm.v1.attention.ops.triton_decode_attention import decode_attention_fwd

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], tp=[4, 8], width=[4, 16, 64, 256],
                   cache=["bf16", "fp8"], labels={"width": "w"})

BLOCKS = 65536  # KV-cache blocks per layer
PAGE = 16  # tokens per block (vLLM's default block size; the Triton backends take multiples of 16)
CONTEXT = 4096  # tokens of context per sequence
MAX_MODEL_LEN = 32768  # the block table's width: cdiv(max_model_len, PAGE)

# Qwen3-235B-A22B attention: query heads, KV heads, head size, layers
QWEN3 = (64, 4, 128, 94)
# DeepSeek-V3 MLA: heads, kv_lora_rank, rope dim, layers
DSV3 = (128, 512, 64, 61)


def _scale():
    """A per-tensor scale as the attention layer keeps it (a 0-d float32 buffer)."""
    return rs.tensor((), "fp32")


def _layer_cache(layers: int, block_shape: tuple[int, ...], dtype):
    """One layer's (blocks, *block_shape) view into the cache of all ``layers``, as vLLM allocates it."""
    per_layer = BLOCKS
    for n in block_shape:
        per_layer *= n
    return rs.tensor((BLOCKS, *block_shape), dtype, storage_numel=layers * per_layer)


def _cache_dtype(cache: str):
    """The KV cache's storage dtype: an fp8 cache is allocated as bytes (vLLM's "fp8" is uint8)."""
    return "uint8" if cache == "fp8" else "bf16"


@matrix.kind(axes=["tp", "width", "cache"], width=[4, 256])
def unified_decode(tp, width, cache):
    """One decode token per sequence, paged GQA attention (``TritonAttentionImpl.forward``)."""
    q_heads, kv_heads, head, layers = QWEN3
    q_heads, kv_heads = q_heads // tp, max(1, kv_heads // tp)
    impl = TritonAttentionImpl(q_heads, head, head**-0.5, kv_heads, alibi_slopes=None, sliding_window=None,
                               kv_cache_dtype="fp8" if cache == "fp8" else "auto")
    quantized_query = cache == "fp8" and impl.supports_quant_query_input
    # (blocks, block, heads, K | V) in memory; the backend takes it in logical (blocks, heads, block, K | V)
    kv_cache = _layer_cache(layers, (PAGE, kv_heads, 2 * head), _cache_dtype(cache)).transpose(1, 2)
    threshold = MIN_LAUNCH_GRID_SIZE_2D // kv_heads  # the builder's seq_threshold_3D
    segments = NUM_PAR_SOFTMAX_SEGMENTS
    metadata = TritonAttentionMetadata(
        num_actual_tokens=width, max_query_len=1, query_start_loc=rs.tensor((width + 1,), "int32"),
        max_seq_len=CONTEXT, seq_lens=rs.tensor((width,), "int32"),
        block_table=rs.tensor((width, MAX_MODEL_LEN // PAGE), "int32"), slot_mapping=rs.tensor((width,), "int64"),
        seq_threshold_3D=threshold, num_par_softmax_segments=segments,
        softmax_segm_output=rs.tensor((threshold, q_heads, segments, head), "fp32"),
        softmax_segm_max=rs.tensor((threshold, q_heads, segments), "fp32"),
        softmax_segm_expsum=rs.tensor((threshold, q_heads, segments), "fp32"),
        causal=True)
    layer = types.SimpleNamespace(_q_scale=_scale(), _k_scale=_scale(), _v_scale=_scale())
    query = rs.tensor((width, q_heads, head), impl.fp8_dtype if quantized_query else "bf16")
    impl.forward(layer, query, rs.tensor((width, kv_heads, head)), rs.tensor((width, kv_heads, head)), kv_cache,
                 metadata, rs.tensor((width, q_heads, head), "bf16"))


@matrix.kind(axes=["tp", "width", "cache"], width=[4, 64])
def mla_decode(tp, width, cache):
    """DeepSeek-V3's MLA decode over the latent cache (``decode_attention_fwd``, is_mla)."""
    heads, rank, rope, layers = DSV3
    heads //= tp
    kv_cache = _layer_cache(layers, (PAGE, rank + rope), _cache_dtype(cache))
    if cache == "fp8":
        kv_cache = kv_cache.view(current_platform.fp8_dtype())  # as the MLA layer views it
    kv_cache = kv_cache.unsqueeze(2)  # the backend adds a head dim of 1
    splits = _compute_num_kv_splits(CONTEXT, torch.cuda.get_device_properties().multi_processor_count)
    decode_attention_fwd(
        rs.tensor((width, heads, rank + rope)), kv_cache, kv_cache[..., :rank],
        rs.tensor((width, heads, rank)), rs.tensor((width, heads)),
        rs.tensor((width, MAX_MODEL_LEN // PAGE), "int32"), rs.tensor((width,), "int32"),
        rs.tensor((width, heads, splits, rank + 1), "fp32"), splits, (128 + rope) ** -0.5, PAGE,
        k_scale=_scale(), v_scale=_scale(), is_mla=True)


@matrix.kind(axes=["tp", "width", "cache"], width=[16])
def gqa_decode(tp, width, cache):
    """The same launcher's grouped (GQA) path at Qwen3's shapes, K and V in one paged cache."""
    q_heads, kv_heads, head, layers = QWEN3
    q_heads, kv_heads = q_heads // tp, max(1, kv_heads // tp)
    kv_cache = _layer_cache(layers, (PAGE, kv_heads, 2 * head), _cache_dtype(cache))
    if cache == "fp8":
        kv_cache = kv_cache.view(current_platform.fp8_dtype())
    key_cache, value_cache = kv_cache.split(head, dim=-1)
    splits = _compute_num_kv_splits(CONTEXT, torch.cuda.get_device_properties().multi_processor_count)
    decode_attention_fwd(
        rs.tensor((width, q_heads, head)), key_cache, value_cache,
        rs.tensor((width, q_heads, head)), rs.tensor((width, q_heads)),
        rs.tensor((width, MAX_MODEL_LEN // PAGE), "int32"), rs.tensor((width,), "int32"),
        rs.tensor((width, q_heads, splits, head + 1), "fp32"), splits, head**-0.5, PAGE,
        k_scale=_scale(), v_scale=_scale())
