"""FlagGems surveyed through the operators a model calls (``flag_gems.ops.mm``, ``flag_gems.rms_norm``,
...), at Llama-3 8B widths, 4096 tokens of prefill and 16 of decode.

Imported as a user imports it: once per target, while that target is the device (regsurvey imports
keys files in a worker per target). Two settings come first, both still needed:

* ``GEMS_VENDOR``: FlagGems picks its vendor backend (tuned configs, heuristics, specialised ops) when
  imported, from ``GEMS_VENDOR`` or else by running ``nvidia-smi``/``rocm-smi``, which the stand-in
  device does not answer (it answers ``torch``'s and Triton's device questions only). Set from
  ``torch.version.hip``, which the stand-in sets as the target's.
* ``FLAGGEMS_DB_URL``: FlagGems' tuner stores each pick in a SQLite file under ``~/.flaggems`` named after
  the GPU and reads it back before tuning. A survey "tunes" at 0 ms per config: it must neither write
  such picks into the user's file (a real GPU's picks) nor read them back (the next survey would
  survey one config instead of every config the tuner keeps). An in-memory database per worker.

Left out: ``silu_and_mul`` and FlagGems' other generated pointwise ops. Their code generator writes
``tl.make_block_ptr`` on NVIDIA and AMD alike (``prefer_block_pointer``), which Triton 3.9 removed
("Block pointers have been removed in favor of the tensor descriptor API"): no launch of them builds
with this Triton, on a GPU either.
"""

import os

import torch

import regsurvey as rs

os.environ["GEMS_VENDOR"] = "amd" if torch.version.hip else "nvidia"
os.environ["FLAGGEMS_DB_URL"] = "sqlite://"
import flag_gems  # noqa: E402

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], tokens=[16, 4096], dtype=["bf16"],
                   labels={"tokens": "t"})
HIDDEN, HEADS, KV_HEADS = 4096, 32, 8


@matrix.kind(axes=["tokens", "dtype"])
def mm(tokens, dtype):
    # The QKV projection: (tokens, 4096) x (4096, 6144).
    flag_gems.ops.mm(rs.tensor((tokens, HIDDEN), dtype), rs.tensor((HIDDEN, (HEADS + 2 * KV_HEADS) * 128), dtype))


@matrix.kind(axes=["tokens", "dtype"])
def rms_norm(tokens, dtype):
    flag_gems.rms_norm(rs.tensor((tokens, HIDDEN), dtype), [HIDDEN], rs.tensor((HIDDEN,), dtype), 1e-5)


@matrix.kind(axes=["tokens", "dtype"])
def fused_add_rms_norm(tokens, dtype):
    flag_gems.fused_add_rms_norm(rs.tensor((tokens, HIDDEN), dtype), rs.tensor((tokens, HIDDEN), dtype), [HIDDEN],
                                 rs.tensor((HIDDEN,), dtype), 1e-5)


@matrix.kind(axes=["tokens", "dtype"])
def layer_norm(tokens, dtype):
    flag_gems.layer_norm(rs.tensor((tokens, HIDDEN), dtype), [HIDDEN], rs.tensor((HIDDEN,), dtype),
                         rs.tensor((HIDDEN,), dtype), 1e-5)


@matrix.kind(axes=["tokens", "dtype"])
def softmax(tokens, dtype):
    flag_gems.ops.softmax(rs.tensor((tokens, 4096), dtype), -1)


@matrix.kind(axes=["tokens", "dtype"])
def rotary(tokens, dtype):
    q = rs.tensor((tokens, HEADS, 128), dtype)
    k = rs.tensor((tokens, KV_HEADS, 128), dtype)
    cos, sin = rs.tensor((8192, 64), dtype), rs.tensor((8192, 64), dtype)
    flag_gems.apply_rotary_pos_emb(q, k, cos, sin, rs.tensor((tokens,), "int64"))


@matrix.kind(axes=["tokens", "dtype"])
def attention(tokens, dtype):
    q = rs.tensor((1, HEADS, tokens, 128), dtype)
    kv = rs.tensor((1, HEADS, tokens, 128), dtype)
    flag_gems.scaled_dot_product_attention(q, kv, kv, is_causal=True)
