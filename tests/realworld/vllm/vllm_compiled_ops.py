"""Shape-only stand-ins for the few compiled (C++/CUDA) ops of vLLM that its fused MoE calls between
and after its Triton launches.

vLLM's own ops live in ``vllm._C_stable_libtorch`` and ``vllm._moe_C_stable_libtorch``, CUDA extensions
linked against ``libcuda.so.1``: without a driver they do not load (vLLM logs "Failed to import from
vllm._C ..."), and ``torch.ops._C.silu_and_mul`` and the like do not exist. ``fused_experts_impl``
calls four of them around its two Triton GEMMs: the expert alignment before them
(``moe_align_block_size``, batches too large for the naive per-token assignment), the activation
between them (``silu_and_mul``), the top-k sum after them (``moe_sum``) and, on a CUDA or ROCm platform,
the fp8 activation quantizer (``per_token_group_fp8_quant``, else its Triton fallback runs). None of them
is a Triton kernel, and on meta tensors none has anything to compute: each is defined here with a
``Meta`` implementation that does nothing, only where vLLM's own op is missing (on a GPU, with the
extension loaded, vLLM's are used and nothing is defined).

One more is asked at import on a CUDA platform: ``fp8_utils`` asks the extension whether its CUTLASS
block-fp8 GEMM supports the device (``cutlass_scaled_mm_supports_block_fp8(capability)``); the stand-in
answers as vLLM's extension does for the capabilities surveyed here (Hopper and up: yes), so that the
module's choices are those of a GPU machine.

Importing this module defines them: import it before vLLM's modules.
"""

import torch

_SCHEMAS = {
    "_C": {
        "silu_and_mul": "silu_and_mul(Tensor(a!) result, Tensor input) -> ()",
        "per_token_group_fp8_quant": (
            "per_token_group_fp8_quant(Tensor input, Tensor(a!) output_q, Tensor(b!) output_s, int group_size, "
            "float eps, float fp8_min, float fp8_max, bool scale_ue8m0, bool column_major, bool tma_aligned) -> ()"),
    },
    "_moe_C": {
        "moe_sum": "moe_sum(Tensor input, Tensor(a!) output, Tensor? topk_ids, Tensor? expert_map) -> ()",
        "moe_align_block_size": (
            "moe_align_block_size(Tensor topk_ids, int num_experts, int block_size, Tensor(a!) sorted_token_ids, "
            "Tensor(b!) experts_ids, Tensor(c!) num_tokens_post_pad, Tensor? expert_map, "
            "Tensor(d!)? scatter_idx) -> ()"),
    },
}

# Ops answering a question rather than computing on tensors: (namespace, name) -> (schema, implementation).
_ANSWERS = {
    ("_C", "cutlass_scaled_mm_supports_block_fp8"): (
        "cutlass_scaled_mm_supports_block_fp8(int cuda_device_capability) -> bool",
        lambda capability: capability >= 90),
}

_libraries = []  # kept alive: a Library's registrations go when it is collected


def _nothing(*args, **kwargs):
    return None


def define_missing() -> list[str]:
    """Define every op above that vLLM's extension did not register; the names defined."""
    defined = []
    for namespace, schemas in _SCHEMAS.items():
        missing = [name for name in schemas if not hasattr(getattr(torch.ops, namespace), name)]
        if not missing:
            continue
        library = torch.library.Library(namespace, "FRAGMENT")
        for name in missing:
            library.define(schemas[name])
            library.impl(name, _nothing, "Meta")
            defined.append(f"{namespace}::{name}")
        _libraries.append(library)
    for (namespace, name), (schema, answer) in _ANSWERS.items():
        if not hasattr(getattr(torch.ops, namespace), name):
            library = torch.library.Library(namespace, "FRAGMENT")
            library.define(schema)
            library.impl(name, answer, "CompositeExplicitAutograd")
            defined.append(f"{namespace}::{name}")
            _libraries.append(library)
    return defined


DEFINED = define_missing()
