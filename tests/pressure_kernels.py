"""Kernels whose register pressure is known by construction (issue #13's proof): where the peak is,
where the spills go, and which lines a helper's code is attributed to. Each line a test looks for is
marked by a comment (``# PEAK`` ...); the tests find the line numbers from the markers.

- ``peak_kernel``: a tile from a helper (``_scaled``) and a second tile stay live across a reduction of
  their product: the most registers are live on the line that reduces and combines them (``# PEAK``).
- ``spill_kernel``: a tile kept across an unrolled loop that accumulates a second one of the same size.
  With one wave of 64 lanes and BLOCK=8192, AMD keeps the loop's tiles in registers and spills the kept
  one: stored right after its load (``# KEEP``), reloaded where it is used (``# USE``), nowhere else.
- ``loop_spill_kernel``: the same, with the kept tile read in the loop too. With one warp of 32 threads
  and BLOCK=4096, ptxas spills inside the unrolled loop: its line holds most spill stores and reloads
  (``# LOOP2``). (ptxas compiles ``spill_kernel`` at BLOCK=8192 too, but takes 100 s to.)
"""

import triton
import triton.language as tl


@triton.jit
def _scaled(ptr, offs):
    return tl.load(ptr + offs) * 2.0  # HELPER


@triton.jit
def peak_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = _scaled(x_ptr, offs)  # CALL
    b = tl.load(y_ptr + offs)
    c = tl.sum(a * b, axis=0) * b + a  # PEAK
    tl.store(out_ptr + offs, c)


@triton.jit
def spill_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    keep = tl.load(x_ptr + offs)  # KEEP
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.static_range(N):
        acc += tl.exp(tl.load(y_ptr + i * BLOCK + offs))  # LOOP
    tl.store(out_ptr + offs, acc * keep)  # USE


@triton.jit
def loop_spill_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    keep = tl.load(x_ptr + offs)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.static_range(N):
        acc += tl.exp(tl.load(y_ptr + i * BLOCK + offs) * keep)  # LOOP2
    tl.store(out_ptr + offs, acc * keep)


def marked_line(marker: str) -> int:
    """The line of this file that ends with ``# <marker>``."""
    with open(__file__) as f:
        for number, line in enumerate(f, start=1):
            if line.rstrip().endswith(f"# {marker}"):
                return number
    raise KeyError(marker)
