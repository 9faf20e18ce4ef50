"""Small Triton kernels the object-reader tests compile (Triton needs a jit function in a real file).

Each one is here for a figure it makes the toolchain produce; the tests assert the figures.
``compile_kernel`` compiles one offline for a target, the way a launch would specialize it.
"""

import functools
from typing import Any

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Elementwise add: few registers, no spills, no LDS."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def hold_tile_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Keeps a whole BLOCK tile and its exp live across a reduction.

    With BLOCK=16384 on one 64-lane wave that is 512 values per lane: more than the 512-entry unified
    VGPR file holds beside everything else, so gfx950 spills VGPRs to scratch (and fills the AGPRs).
    With BLOCK=4096 on one 32-thread warp sm90 runs out of its 255 registers and spills to local, and one
    32-lane wave of RDNA (256 VGPRs a wave) spills 98 VGPRs (gfx1100; 88 on gfx1201) to scratch. gfx1250's
    waves address 1024 VGPRs: it holds the tile in 635 of them (above v255 through ``s_set_vgpr_msb``), and
    spills only when ``waves_per_eu=8`` leaves it 128 (208 VGPRs, in clauses).
    """
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.exp(x)
    tl.store(out_ptr + offs, y / tl.sum(y, axis=0) + x)


@triton.jit
def many_buffers_kernel(
    p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p20, p21,
    p22, p23, p24, p25, p26, p27, p28, p29, p30, p31, out_ptr, n_iter, BLOCK: tl.constexpr
):  # fmt: skip
    """Reads 32 buffers in a loop; every base stays live in SGPRs across the loop.

    Compiled with ``tt.pointer_range=32`` on the pointers (what a launch gives tensors under 2 GB on
    AMD), each becomes a 4-SGPR buffer resource descriptor: 32 of them cannot fit in gfx950's ~100
    SGPRs, so LLVM spills SGPRs to VGPR lanes (v_writelane_b32); so do RDNA and gfx1250 (wave32: 32 lanes
    a VGPR).
    """
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(n_iter):
        acc += tl.load(p0 + offs)
        acc += tl.load(p1 + offs)
        acc += tl.load(p2 + offs)
        acc += tl.load(p3 + offs)
        acc += tl.load(p4 + offs)
        acc += tl.load(p5 + offs)
        acc += tl.load(p6 + offs)
        acc += tl.load(p7 + offs)
        acc += tl.load(p8 + offs)
        acc += tl.load(p9 + offs)
        acc += tl.load(p10 + offs)
        acc += tl.load(p11 + offs)
        acc += tl.load(p12 + offs)
        acc += tl.load(p13 + offs)
        acc += tl.load(p14 + offs)
        acc += tl.load(p15 + offs)
        acc += tl.load(p16 + offs)
        acc += tl.load(p17 + offs)
        acc += tl.load(p18 + offs)
        acc += tl.load(p19 + offs)
        acc += tl.load(p20 + offs)
        acc += tl.load(p21 + offs)
        acc += tl.load(p22 + offs)
        acc += tl.load(p23 + offs)
        acc += tl.load(p24 + offs)
        acc += tl.load(p25 + offs)
        acc += tl.load(p26 + offs)
        acc += tl.load(p27 + offs)
        acc += tl.load(p28 + offs)
        acc += tl.load(p29 + offs)
        acc += tl.load(p30 + offs)
        acc += tl.load(p31 + offs)
        offs += BLOCK
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    """A plain tiled fp16 GEMM (row-major, unit inner strides): MFMA/wgmma and a pipelined LDS buffer."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :]
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK
        b += BK * stride_bk
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16))


@triton.jit
def nested_loops_kernel(x_ptr, y_ptr, out_ptr, n_outer, n_inner, BLOCK: tl.constexpr):
    """A tile kept across two nested loops (of trip counts known only at launch) that accumulate two more.

    With BLOCK=16384 on one 64-lane wave gfx950 spills before the loops, in the outer loop and in the
    inner one (depths 0, 1 and 2); with BLOCK=4096 on one 32-thread warp sm90 spills before the loops and
    in the outer one, and one 32-lane wave of RDNA spills VGPRs to scratch and SGPRs to VGPR lanes at all
    three depths (gfx1250: SGPRs only, to lanes of v256). ``maxnreg`` squeezes a smaller tile into spills in
    the inner loop as well.
    """
    offs = tl.arange(0, BLOCK)
    keep = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for j in range(n_outer):  # OUTER
        part = tl.zeros((BLOCK,), dtype=tl.float32)
        for i in range(n_inner):  # INNER
            part += tl.exp(tl.load(y_ptr + (j * n_inner + i) * BLOCK + offs))
        acc += part * tl.load(x_ptr + j * BLOCK + offs)
    tl.store(out_ptr + offs, acc * keep)


@triton.jit
def tma_scale_kernel(desc, out_ptr, n, scale, BLOCK: tl.constexpr):
    """Loads a tile through a host TMA descriptor passed first, by value (a ``__grid_constant__`` CUtensorMap,
    64-byte aligned, then its shape and strides), and scales it: every later parameter is placed by that
    alignment (on sm_90 the descriptor starts 48 bytes into the parameter area, at c[0x0][0x240])."""
    pid = tl.program_id(0)
    tile = desc.load([pid * BLOCK, 0])
    offs = pid * BLOCK + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    tl.store(out_ptr + offs, (tile.to(tl.float32) * scale).to(tl.bfloat16), mask=offs < n)


# Argument types per kernel, in order; "constexpr" ones come from compile_kernel's keywords.
_BUFFERS = {f"p{i}": "*fp32" for i in range(32)}
SIGNATURES: dict[str, dict[str, str]] = {
    "add_kernel": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
    "hold_tile_kernel": {"x_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"},
    "many_buffers_kernel": {**_BUFFERS, "out_ptr": "*fp32", "n_iter": "i32", "BLOCK": "constexpr"},
    "matmul_kernel": {
        **{name: "*fp16" for name in ("a_ptr", "b_ptr", "c_ptr")},
        **{name: "i32" for name in ("M", "N", "K", "stride_am", "stride_bk", "stride_cm")},
        **{name: "constexpr" for name in ("BM", "BN", "BK")},
    },
    "nested_loops_kernel": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_outer": "i32", "n_inner": "i32",
                            "BLOCK": "constexpr"},
    "tma_scale_kernel": {"desc": "tensordesc<bf16[64, 64]>", "out_ptr": "*bf16", "n": "i32", "scale": "fp32",
                         "BLOCK": "constexpr"},
}

TARGETS = {
    "gfx942": GPUTarget("hip", "gfx942", 64),
    "gfx950": GPUTarget("hip", "gfx950", 64),
    # RDNA 3, 3.5 and 4, and GFX12.5 (issue 39): wave32.
    "gfx1100": GPUTarget("hip", "gfx1100", 32),
    "gfx1151": GPUTarget("hip", "gfx1151", 32),
    "gfx1201": GPUTarget("hip", "gfx1201", 32),
    "gfx1250": GPUTarget("hip", "gfx1250", 32),
    # Not a regsurvey target: the arch Triton 3.9 compiles gfx1250 code for with kernarg preloading (its
    # plain gfx1250 passes no argument `inreg`).
    "gfx1250-strict": GPUTarget("hip", "gfx1250-strict", 32),
    "sm90": GPUTarget("cuda", 90, 32),
    "sm100": GPUTarget("cuda", 100, 32),
    "sm103": GPUTarget("cuda", 103, 32),
    "sm120": GPUTarget("cuda", 120, 32),
}


@functools.cache
def compile_kernel(kernel: str, target: str, *, options: tuple[tuple[str, int], ...] = (), **constexprs: int) -> Any:
    """Compile one kernel of this module for a target name; returns Triton's CompiledKernel.

    Pointers and int arguments are specialized the way a launch with 16-byte-aligned tensors and
    multiples of 16 specializes them (``tt.divisibility=16``); on AMD pointers also get
    ``tt.pointer_range=32`` (tensors under 2 GB), which switches Triton to buffer loads.
    """
    signature = SIGNATURES[kernel]
    pointer_attrs = [["tt.divisibility", 16]]
    if TARGETS[target].backend == "hip":
        pointer_attrs.append(["tt.pointer_range", 32])
    attrs = {}
    for index, (name, ty) in enumerate(signature.items()):
        if ty.startswith("*"):
            attrs[(index,)] = pointer_attrs
        elif ty == "i32" and name != "n":
            attrs[(index,)] = [["tt.divisibility", 16]]
    source = ASTSource(globals()[kernel], signature, constexprs, attrs)
    return triton.compile(source, target=TARGETS[target], options=dict(options))


def compile_case(case: tuple[str, str, tuple[tuple[str, Any], ...], dict[str, int]]) -> Any:
    """Compile one of the tests' cases, ``(kernel, target, options, constexprs)``."""
    kernel, target, options, constexprs = case
    return compile_kernel(kernel, target, options=options, **constexprs)


def value_args(kernel: str) -> list[str]:
    """The kernel's parameters that are not constexpr, in order: the lint's ``arg_names``."""
    return [n for n, t in SIGNATURES[kernel].items() if t != "constexpr"]


# A kernel with a real static array (Triton never emits one): 4096 bytes of .shared, and dynamic shared
# memory beside it. ptxas gives .nv.shared.k 5120 bytes (the reserve, then the array at 0x400).
STATIC_SHARED_PTX = """
.version {version}
.target {arch}
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry k(.param .u64 p)
{{
 .shared .align 16 .b8 buf[4096];
 .reg .b32 %r<5>; .reg .b64 %rd<4>;
 ld.param.u64 %rd1, [p];
 mov.u32 %r1, %tid.x; shl.b32 %r2, %r1, 2;
 mov.u32 %r3, buf; add.u32 %r3, %r3, %r2; mov.u32 %r0, dyn; st.shared.u32 [%r0], %r2;
 st.shared.u32 [%r3], %r1; bar.sync 0;
 ld.shared.u32 %r1, [%r3+4];
 cvta.to.global.u64 %rd2, %rd1; st.global.u32 [%rd2], %r1;
 ret;
}}
"""


def static_shared_cubin(target: str) -> tuple[bytes, dict[str, int]]:
    """STATIC_SHARED_PTX compiled by the ptxas Triton uses for ``target``, and that run's ``-v`` figures."""
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    from regsurvey.compile.toolchain import ptxas_path

    arch = int(target[2:])
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        # PTX 8.7 is the newest Triton 3.6's ptxas reads; sm_103a needs 8.8.
        src.write_text(STATIC_SHARED_PTX.format(arch=f"sm_{arch}a", version="8.8" if arch == 103 else "8.7"))
        done = subprocess.run([ptxas_path(arch), "-v", f"--gpu-name=sm_{arch}a", str(src), "-o", str(out)],
                              capture_output=True, text=True, check=True, timeout=120)
        smem = re.search(r"(\d+) bytes smem", done.stdout + done.stderr)
        assert smem
        return out.read_bytes(), {"static_shared": int(smem[1])}
