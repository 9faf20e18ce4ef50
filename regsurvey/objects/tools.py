"""How long a disassembler (nvdisasm, llvm-objdump) may take on one object before it is given up, and
what a cubin must be before nvdisasm is given it.

Both take about 2 s per MB of object on this project's machines (0.54 s for the demo's largest cubin,
277 KB). A damaged object can keep either busy far longer (a mutated cubin held nvdisasm for minutes),
so the limit grows with the object, with a wide margin for a loaded machine, rather than one fixed
limit for every object. What is known to keep nvdisasm busy is refused before it runs.
"""

from __future__ import annotations

import io

from elftools.elf.elffile import ELFFile

from ..errors import CorruptObjectError
from .elfcheck import PARSE_ERRORS, check_extent, first_line

BASE_S = 30.0
PER_MB_S = 20.0
MAX_S = 120.0


def tool_time_limit(size: int) -> float:
    """Seconds a disassembler may run on an object (or a batch of objects) of ``size`` bytes."""
    return min(MAX_S, BASE_S + PER_MB_S * size / 1e6)


# The most a cubin's space-only (NOBITS) section may claim: its shared memory (no GPU gives a block more
# than 228 KiB) or reserved space. nvdisasm allocates and zeroes what such a section claims: a damaged
# cubin whose .nv.shared.reserved.0 claimed 4 GiB held it 13 s (33.6 s on a loaded machine) and 4 GB of
# memory, and then it printed the SASS as if nothing were wrong.
MAX_NOBITS_BYTES = 16 << 20


def check_cubin_for_tool(data: bytes) -> None:
    """CorruptObjectError, naming it, for a cubin cut short or one that would keep nvdisasm busy (see
    :data:`MAX_NOBITS_BYTES`); a few milliseconds of header reading."""
    try:
        elf = ELFFile(io.BytesIO(data))
        check_extent(elf, len(data), "cubin")
        sections = [(s.name, s["sh_type"], s["sh_size"]) for s in elf.iter_sections()]
    except CorruptObjectError:
        raise
    except PARSE_ERRORS as exc:
        raise CorruptObjectError(f"not a readable cubin: {first_line(exc)}") from None
    for name, kind, size in sections:
        if kind == "SHT_NOBITS" and size > MAX_NOBITS_BYTES:
            raise CorruptObjectError(f"cubin section {name} claims {size} bytes, more than any GPU's memory of "
                                     "its kind (damaged); not disassembled")
