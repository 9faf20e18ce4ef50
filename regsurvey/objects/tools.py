"""How long a disassembler (nvdisasm, llvm-objdump) may take on one object before it is given up.

Both take about 2 s per MB of object on this project's machines (0.54 s for the demo's largest cubin,
277 KB). A damaged object can keep either busy far longer (a mutated cubin held nvdisasm for minutes),
so the limit grows with the object, with a wide margin for a loaded machine, rather than one fixed
limit for every object.
"""

from __future__ import annotations

BASE_S = 30.0
PER_MB_S = 20.0
MAX_S = 120.0


def tool_time_limit(size: int) -> float:
    """Seconds a disassembler may run on an object (or a batch of objects) of ``size`` bytes."""
    return min(MAX_S, BASE_S + PER_MB_S * size / 1e6)
