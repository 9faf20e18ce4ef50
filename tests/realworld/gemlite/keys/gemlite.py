"""gemlite surveyed through its quantized linear layer: ``GemLiteLinearTriton`` packed with 4-bit
weights (group size 128, fp16 activations: the A16W4 layout of HQQ/AWQ models) at a 4096x4096
projection, for a decode token (GEMV), a small batch (split-K GEMM) and a prefill (GEMM).

gemlite reads the GPU when imported (``torch.cuda.get_device_capability()``, Triton's target, the SM
count, and the tuned config file matching the device name: ``mi300x.json`` on MI300X, none on MI355X
or H200): it is imported here, as a user imports it, and regsurvey imports this file once per target,
while that target is the device. Two things still stand between gemlite and a meta-tensor survey,
each worked around here:

* It allocates on a hard-coded ``"cuda:<i>"`` when imported (a default scale and an FP4 lookup table
  per GPU). The stand-in device answers device questions, but tensors are meta tensors and a CPU
  build of torch cannot allocate on ``cuda``: ``_CudaOnMeta`` sends such allocations to ``rs.device()``
  while gemlite is imported.
* ``GemLiteLinearTriton.pack`` packs the weights with its Triton kernel (``pack_weights_over_cols_kernel``)
  only for weights whose ``device.type`` is ``"cuda"``, and with torch otherwise; a meta tensor's is
  ``"meta"``. ``_triton_packing`` makes the layer take its GPU path, so that the packing kernel a GPU
  runs when the layer is created is surveyed too.
* The layer's forward is the custom op ``gemlite::forward_functional``: called on meta tensors, torch
  runs its fake (shape-only) implementation and nothing launches. The kind bodies call the op's own
  Python implementation (``forward_functional._init_fn``) with the layer's arguments instead, which is
  what the op runs on a GPU.
"""

import contextlib

import torch
from torch.overrides import TorchFunctionMode

import regsurvey as rs


class _CudaOnMeta(TorchFunctionMode):
    """Factory calls with ``device="cuda..."`` allocate on ``rs.device()`` instead."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "cuda":
            kwargs["device"] = rs.device()
        return func(*args, **kwargs)


with _CudaOnMeta():
    import gemlite.core as gl
from gemlite.dtypes import DType  # noqa: E402


@contextlib.contextmanager
def _triton_packing():
    """``pack`` uses its Triton packer (the GPU path) for meta-tensor weights too."""
    torch_packer = gl.pack_weights_over_cols_torch
    gl.pack_weights_over_cols_torch = gl.pack_weights_over_cols_triton
    try:
        yield
    finally:
        gl.pack_weights_over_cols_torch = torch_packer

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90", "sm100"], batch=[1, 16, 4096], labels={"batch": "m"})


@matrix.kind(axes=["batch"])
def a16w4(batch):
    n = k = 4096
    group = 128
    layer = gl.GemLiteLinearTriton(W_nbits=4, group_size=group, in_features=k, out_features=n,
                                   input_dtype=DType.FP16, output_dtype=DType.FP16)
    with _triton_packing():
        layer.pack(rs.tensor((n, k), "uint8"), rs.tensor((n, k // group), "fp16"),
                   rs.tensor((n, k // group), "fp16"))
    x = rs.tensor((batch, k), "fp16")
    gl.forward_functional._init_fn(x, layer.bias, layer.get_tensor_args(), layer.get_meta_args())
