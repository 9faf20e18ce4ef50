"""``rs.tensor``: a tensor with everything a launch specializes on and no data.

Kind bodies build their arguments with :func:`tensor`. The result is a real ``torch.Tensor`` on the
``meta`` device: dtype, shape, strides and storage size are real, so launchers can call ``.stride()``,
``.view()`` or ``torch.empty(..., device=x.device)`` as they do on a GPU, and Triton's own binder
specializes it exactly as it would a GPU tensor (16-byte alignment from ``data_ptr()``, the AMD
buffer-op pointer range from the storage size). Its ``data_ptr()`` is 0 plus the view's byte offset,
which has the same alignment as a fresh GPU allocation (256-byte aligned) plus the same offset.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch

from .session import current_target_or_none

_DTYPES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
    "fp16": torch.float16, "f16": torch.float16, "float16": torch.float16,
    "fp32": torch.float32, "f32": torch.float32, "float32": torch.float32,
    "fp64": torch.float64, "float64": torch.float64,
    "int8": torch.int8, "i8": torch.int8, "uint8": torch.uint8, "u8": torch.uint8,
    "int16": torch.int16, "int32": torch.int32, "i32": torch.int32,
    "int64": torch.int64, "i64": torch.int64, "bool": torch.bool,
    "e4m3fn": torch.float8_e4m3fn, "e4m3fnuz": torch.float8_e4m3fnuz,
    "e5m2": torch.float8_e5m2, "e5m2fnuz": torch.float8_e5m2fnuz,
}

# gfx942 (MI300X) implements the FNUZ fp8 formats; gfx950 and NVIDIA implement the OCP ones.
_FNUZ_ARCHS = {"gfx942"}


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """Map a dtype name to torch. ``e4m3``/``e5m2`` mean the surveyed target's native fp8 format."""
    if isinstance(dtype, torch.dtype):
        return dtype
    name = dtype.strip().lower()
    if name in ("e4m3", "fp8", "fp8e4m3", "e5m2", "fp8e5m2"):
        base = "e5m2" if "5" in name else "e4m3"
        target = current_target_or_none()
        fnuz = target is not None and str(target.arch) in _FNUZ_ARCHS
        if base == "e4m3":
            return torch.float8_e4m3fnuz if fnuz else torch.float8_e4m3fn
        return torch.float8_e5m2fnuz if fnuz else torch.float8_e5m2
    if name not in _DTYPES and isinstance(getattr(torch, name, None), torch.dtype):
        return getattr(torch, name)  # torch's own names, as launch records spell them
    if name not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; known: e4m3, e5m2, {', '.join(sorted(_DTYPES))}")
    return _DTYPES[name]


def tensor(shape: Sequence[int], dtype: str | torch.dtype = "bf16", *,
           stride: Sequence[int] | None = None, offset: int = 0,
           storage_numel: int | None = None) -> torch.Tensor:
    """A data-less tensor of ``shape`` and ``dtype`` (contiguous unless ``stride`` is given).

    ``offset`` is a storage offset in elements, for views that start inside an allocation: it moves
    ``data_ptr()`` and so changes the 16-byte alignment Triton specializes on, as on a GPU.
    ``storage_numel`` sizes the underlying allocation (default: just what the view reaches); on AMD a
    storage over 2 GiB loses the 32-bit buffer-op pointer range.
    """
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    torch_dtype = resolve_dtype(dtype)
    device = os.environ.get(MATERIALIZE_ENV) or "meta"
    if stride is None:
        if offset == 0 and storage_numel is None:
            return _allocate(shape, torch_dtype, device)
        stride = torch.empty(shape, dtype=torch_dtype, device="meta").stride()
    stride = tuple(int(s) for s in stride)
    # Storage large enough for the furthest element the strides reach.
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    numel = max(offset + extent, storage_numel or 0)
    storage = _allocate((numel,), torch_dtype, device)
    return storage.as_strided(shape, stride, offset)


# Set to a torch device ("cuda") to get real, zero-filled tensors instead: the GPU fidelity check
# runs the same kind bodies on a GPU this way (zeros keep every index a kernel reads in bounds).
MATERIALIZE_ENV = "REGSURVEY_MATERIALIZE"


def device() -> torch.device:
    """The device kind bodies allocate on: ``meta`` under a survey (a GPU in the fidelity check)."""
    return torch.device(os.environ.get(MATERIALIZE_ENV) or "meta")


def _allocate(shape: tuple[int, ...], dtype: torch.dtype, device: str) -> torch.Tensor:
    if device == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    return torch.zeros(shape, dtype=dtype, device=device)
