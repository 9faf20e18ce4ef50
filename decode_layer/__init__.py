"""The regsurvey demo project: Triton kernels and launchers for one decode layer of an MLA + MoE model.

Modules follow the layer's data flow: :mod:`proj` (front projection, q_b, o_proj), :mod:`absorb`
(the per-head W_UK / W_UV matmuls of absorbed MLA), :mod:`attention` (KV-cache write and MLA decode
attention), :mod:`router` (FP32 router GEMM and grouped top-k) and :mod:`moe` (expert alignment,
fp8 up/gate and down GEMMs). :mod:`device` holds what launchers ask about the device.

Every launcher takes torch tensors and ends in ``kernel[grid](...)``; it runs on GPU tensors, on
regsurvey's 'meta' tensors, and on CPU tensors under ``TRITON_INTERPRET=1``.
"""

from . import absorb, attention, device, moe, proj, router

__all__ = ["absorb", "attention", "device", "moe", "proj", "router"]
