"""FlagGems surveyed through the operators a model calls (``flag_gems.ops.mm``, ``flag_gems.rms_norm``,
...), at Llama-3 8B widths, 4096 tokens of prefill and 16 of decode.

FlagGems picks its vendor backend (tuned configs, heuristics, specialised ops) once, when it is first
imported, from ``GEMS_VENDOR`` or by running ``nvidia-smi``/``rocm-smi``. So it is imported inside the
kind bodies (``gems()``), with ``GEMS_VENDOR`` naming the surveyed target's vendor; a worker that has
already imported it for the other vendor cannot survey this target, and the kind body says so.
"""

import os

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90"], tokens=[16, 4096], dtype=["bf16"], labels={"tokens": "t"})
HIDDEN, INTERMEDIATE, HEADS, KV_HEADS = 4096, 14336, 32, 8


def gems():
    """flag_gems, imported for the vendor of the surveyed target."""
    vendor = "amd" if rs.target().is_amd else "nvidia"
    os.environ["GEMS_VENDOR"] = vendor
    import flag_gems

    chosen = flag_gems.runtime.device.vendor_name
    if chosen != vendor:
        raise RuntimeError(f"flag_gems was imported for {chosen} in this process; {rs.target().name} needs {vendor}")
    return flag_gems


@matrix.kind(axes=["tokens", "dtype"])
def mm(tokens, dtype):
    # The QKV projection: (tokens, 4096) x (4096, 6144).
    gems().ops.mm(rs.tensor((tokens, HIDDEN), dtype), rs.tensor((HIDDEN, (HEADS + 2 * KV_HEADS) * 128), dtype))


@matrix.kind(axes=["tokens", "dtype"])
def rms_norm(tokens, dtype):
    gems().rms_norm(rs.tensor((tokens, HIDDEN), dtype), [HIDDEN], rs.tensor((HIDDEN,), dtype), 1e-5)


@matrix.kind(axes=["tokens", "dtype"])
def fused_add_rms_norm(tokens, dtype):
    gems().fused_add_rms_norm(rs.tensor((tokens, HIDDEN), dtype), rs.tensor((tokens, HIDDEN), dtype), [HIDDEN],
                              rs.tensor((HIDDEN,), dtype), 1e-5)


@matrix.kind(axes=["tokens", "dtype"])
def layer_norm(tokens, dtype):
    gems().layer_norm(rs.tensor((tokens, HIDDEN), dtype), [HIDDEN], rs.tensor((HIDDEN,), dtype),
                      rs.tensor((HIDDEN,), dtype), 1e-5)


@matrix.kind(axes=["tokens", "dtype"])
def softmax(tokens, dtype):
    gems().ops.softmax(rs.tensor((tokens, 4096), dtype), -1)


# NVIDIA only: on AMD FlagGems generates its pointwise kernels with tl.make_block_ptr, which Triton 3.9
# removed ("Block pointers have been removed in favor of the tensor descriptor API"): no launch builds.
@matrix.kind(axes=["tokens", "dtype"], targets=["sm90"])
def silu_and_mul(tokens, dtype):
    gems().silu_and_mul(rs.tensor((tokens, INTERMEDIATE), dtype), rs.tensor((tokens, INTERMEDIATE), dtype))


@matrix.kind(axes=["tokens", "dtype"])
def rotary(tokens, dtype):
    q = rs.tensor((tokens, HEADS, 128), dtype)
    k = rs.tensor((tokens, KV_HEADS, 128), dtype)
    cos, sin = rs.tensor((8192, 64), dtype), rs.tensor((8192, 64), dtype)
    gems().apply_rotary_pos_emb(q, k, cos, sin, rs.tensor((tokens,), "int64"))


@matrix.kind(axes=["tokens", "dtype"])
def attention(tokens, dtype):
    q = rs.tensor((1, HEADS, tokens, 128), dtype)
    kv = rs.tensor((1, HEADS, tokens, 128), dtype)
    gems().scaled_dot_product_attention(q, kv, kv, is_causal=True)
