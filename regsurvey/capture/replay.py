"""Launch records: a launch's arguments described as data, and replaying them offline.

``regsurvey capture`` records each launch of a running program as a :func:`describe_launch`
record (tensors by dtype, shape, strides, storage offset and size; scalars by value; the launch
options). A generated keys file replays them with :func:`replay`, which rebuilds the arguments with
``rs.tensor`` and launches the same JITFunction through Triton's own binder, for any target.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..compile import toolchain
from ..keys.session import launch


class ReplayError(Exception):
    """A launch record that cannot be replayed (kernel not importable, unknown argument type)."""


def describe_value(value: Any) -> dict[str, Any]:
    """A JSON-able description of one launch argument."""
    import torch

    if isinstance(value, torch.Tensor):
        storage_bytes = value.untyped_storage().nbytes()
        return {"tensor": {
            "shape": list(value.shape), "stride": list(value.stride()), "dtype": str(value.dtype).split(".")[-1],
            "offset": value.storage_offset(), "storage_numel": storage_bytes // max(1, value.element_size()),
            "ptr_mod16": value.data_ptr() % 16}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if isinstance(value, (tuple, list)):
        return {"tuple": [describe_value(v) for v in value]}
    if type(value).__name__ == "MockTensor":  # a warmup's dtype in place of a tensor: an aligned pointer
        return {"tensor": {"shape": [16], "stride": [1], "dtype": str(value.dtype).split(".")[-1], "offset": 0,
                           "storage_numel": 16, "ptr_mod16": 0}}
    if toolchain.is_tl_dtype(value):
        return {"tl_dtype": str(value)}
    if hasattr(value, "value") and type(value).__name__ == "constexpr":
        return describe_value(value.value)
    return {"unsupported": type(value).__qualname__}


def describe_launch(fn: Any, args: tuple, kwargs: dict, specialization: str | None) -> dict[str, Any]:
    """The record of one launch of JITFunction ``fn``."""
    return {
        "kernel": toolchain.jit_function_name(fn),
        "args": [describe_value(a) for a in args],
        "kwargs": {k: describe_value(v) for k, v in kwargs.items()
                   if k not in ("debug", "instrumentation_mode", "fpsan_homomorphic_casts")},
        "specialization": specialization,
    }


def _build(desc: dict[str, Any]) -> Any:
    from ..keys.meta_tensor import tensor

    if "tensor" in desc:
        t = desc["tensor"]
        return tensor(t["shape"], t["dtype"], stride=t["stride"], offset=t["offset"],
                      storage_numel=t["storage_numel"])
    if "value" in desc:
        return desc["value"]
    if "tuple" in desc:
        return tuple(_build(d) for d in desc["tuple"])
    if "tl_dtype" in desc:
        return toolchain.tl_dtype(desc["tl_dtype"])
    raise ReplayError(f"cannot replay an argument of type {desc.get('unsupported', desc)}")


def resolve_kernel(name: str) -> Any:
    """The JITFunction called ``module:qualname`` (unwrapping autotune/heuristics wrappers)."""
    module_name, _, qualname = name.partition(":")
    if module_name == "__main__":
        raise ReplayError(f"kernel {name} was defined in the captured script itself; move it into an "
                          "importable module to replay it")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ReplayError(f"cannot import kernel {name}: {exc}") from None
    return toolchain.innermost_jit_function(obj)


def replay(record: dict[str, Any]) -> None:
    """Launch a recorded launch again (under a survey: captured, for the surveyed target)."""
    fn = resolve_kernel(record["kernel"])
    args = [_build(a) for a in record["args"]]
    kwargs = {k: _build(v) for k, v in record["kwargs"].items()}
    launch(fn, *args, grid=(1,), **kwargs)
