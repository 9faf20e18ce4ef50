"""What a real NVIDIA GPU's driver says about kernels the offline tests read: the fixture
``tests/gpu/h200-driver-facts.json`` that ``tests/objects/test_nvidia_object.py`` and
``tests/compile/test_toolchain.py`` hold regsurvey's figures against. Run on a machine with an NVIDIA GPU
(never in CI; about 20 s)::

    python tests/gpu/driver_facts.py [--out tests/gpu/h200-driver-facts.json]

It records:

* ``device_view``: every device property a launcher can read (:func:`fidelity.launcher_view`), as the
  real GPU reports it: what the stand-in must answer under a survey.
* ``static_shared_kernel``: the kernel with a real static shared array (``objects_kernels.STATIC_SHARED_PTX``,
  4096 bytes), compiled by the ptxas Triton ships and loaded with ``cuModuleLoadData``: the driver's
  registers, SHARED_SIZE_BYTES, and cuOccupancyMaxActiveBlocksPerMultiprocessor for blocks of 4 warps at
  each dynamic shared memory size.
* ``triton_kernels``: Triton kernels (``objects_kernels``) launched through Triton: the driver's registers,
  SHARED_SIZE_BYTES, Triton's dynamic ``shared``, the warps and the driver's blocks per SM (the GEMM also
  asked with no dynamic shared memory, where its registers bind).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.gpu.fidelity import _cu_check, _libcuda, launcher_view  # noqa: E402
from tests.objects_kernels import static_shared_cubin  # noqa: E402

_NUM_REGS, _SHARED_SIZE_BYTES, _MAX_DYNAMIC_SHARED = 4, 1, 8  # cuda.h's CUfunction_attribute
DYNAMIC_SIZES = (0, 1, 20 * 1024, 40 * 1024, 50 * 1024, 100 * 1024, 113 * 1024, 200 * 1024)


def _attribute(function: ctypes.c_void_p, which: int) -> int:
    value = ctypes.c_int()
    _cu_check(_libcuda().cuFuncGetAttribute(ctypes.byref(value), which, function), f"cuFuncGetAttribute({which})")
    return value.value


def _blocks(function: ctypes.c_void_p, warps: int, dynamic: int) -> int:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor, the function allowed all the dynamic shared memory."""
    static = _attribute(function, _SHARED_SIZE_BYTES)
    _cu_check(_libcuda().cuFuncSetAttribute(function, _MAX_DYNAMIC_SHARED, ctypes.c_int(232448 - static)),
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
    blocks = ctypes.c_int()
    _cu_check(_libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks), function, 32 * warps, ctypes.c_size_t(dynamic)),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    return blocks.value


def static_shared_kernel() -> dict[str, Any]:
    cubin, _ = static_shared_cubin("sm90")
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    _cu_check(_libcuda().cuModuleLoadData(ctypes.byref(module), cubin), "cuModuleLoadData")
    _cu_check(_libcuda().cuModuleGetFunction(ctypes.byref(function), module, b"k"), "cuModuleGetFunction")
    warps = 4
    return {"regs": _attribute(function, _NUM_REGS), "static_shared": _attribute(function, _SHARED_SIZE_BYTES),
            "warps": warps, "blocks_per_sm": {str(d): _blocks(function, warps, d) for d in DYNAMIC_SIZES}}


def triton_kernels() -> list[dict[str, Any]]:
    import torch

    from tests.objects_kernels import add_kernel, hold_tile_kernel, matmul_kernel

    cuda = torch.device("cuda")
    x = torch.zeros(1 << 16, device=cuda)
    a = torch.zeros((256, 256), device=cuda, dtype=torch.float16)
    launched = {
        "add (4 warps)": add_kernel[(64,)](x, x, x, 1 << 16, BLOCK=1024, num_warps=4),
        "tl.sum over 8 warps": hold_tile_kernel[(1,)](x, x, BLOCK=1024, num_warps=8),
        "128x128x64 fp16 GEMM, 3 stages": matmul_kernel[(2, 2)](a, a, a, 256, 256, 256, 256, 256, 256, BM=128,
                                                                 BN=128, BK=64, num_warps=4, num_stages=3),
    }
    torch.cuda.synchronize()
    out = []
    for name, kernel in launched.items():
        function = ctypes.c_void_p(kernel.function)
        warps, dynamic = int(kernel.metadata.num_warps), int(kernel.metadata.shared)
        asked = [(name, dynamic)] + ([(f"{name}, asked with no dynamic shared memory", 0)] if "GEMM" in name else [])
        for label, size in asked:
            out.append({"name": label, "regs": _attribute(function, _NUM_REGS),
                        "static_shared": _attribute(function, _SHARED_SIZE_BYTES), "dynamic_shared": size,
                        "warps": warps, "blocks_per_sm": _blocks(function, warps, size)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "h200-driver-facts.json")
    args = parser.parse_args()
    import torch
    import triton

    torch.zeros(1, device="cuda")  # the context the driver calls use
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    facts = {
        "command": "python tests/gpu/driver_facts.py",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0), "nvidia_smi": smi, "torch": torch.__version__,
        "triton": triton.__version__,
        "device_view": {k: list(v) if isinstance(v, tuple) else v for k, v in launcher_view().items()},
        "static_shared_kernel": static_shared_kernel(),
        "triton_kernels": triton_kernels(),
    }
    args.out.write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps({k: v for k, v in facts.items() if k != "device_view"}, indent=1))


if __name__ == "__main__":
    main()
