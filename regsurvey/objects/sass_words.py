"""Constant-bank reads read straight from a cubin's instruction words, without nvdisasm.

Volta and later NVIDIA GPUs encode every instruction in 16 bytes. Its first 64-bit word (little-endian) holds
the opcode and operand form in bits 0 to 11 and, in a form with a constant-bank operand, the bank in bits 54
to 58 and the byte offset from a bit of the form's own to bit 53 (``LDC R1, c[0x0][0x28]`` is
``0x00000a00ff017b82``: 0x28 from bit 38; sm_100's ``LDCU`` from bit 37); a load's size is bits 73 to 75
(``LDC``: 4 is 32 bits, 5 is 64). Which forms carry such an operand, and where, is not documented:
``sass_forms.json`` records it per architecture, learned from nvdisasm's own text of the corpus's cubins
(``benchmarks/sass_forms.py`` regenerates it and prints the proof): a form is ``const`` only where every one
of its instructions printed ``c[bank][offset]`` with the bank the bits say and the offset at one place in
the word (with the bytes it reads: by size field, where that field told every instruction's width apart,
else the fewest any read), ``none`` where none printed a constant operand, and absent (unknown) otherwise.
A read is never taken wider than nvdisasm printed it.

The kernarg lint uses it to avoid a disassembly where it can (:func:`regsurvey.lint.nvidia.lint_nvidia`): the
reads decoded here are reads nvdisasm would print (each form checked), so a kernel whose every loaded
parameter is read by one of them has no finding; any other kernel, or one with an instruction of a form not
in the table, is disassembled and linted as before.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from ..errors import CorruptObjectError

FORM_MASK = 0xFFF
FORMS_FILE = Path(__file__).with_name("sass_forms.json")


@functools.cache
def forms(arch: int) -> tuple[dict[int, tuple[int, dict[int, int] | int]], frozenset[int]] | None:
    """The forms known on ``sm_<arch>``: those with a constant-bank operand, each with the bit its byte offset
    starts at (it ends at bit 53) and the bytes its read covers (by the value of its size field, bits 73 to
    75, where the form has one; else the fewest any of its instructions read), and those without; None for
    an architecture the table does not cover."""
    table = json.loads(FORMS_FILE.read_text())["forms"].get(str(arch))
    if table is None:
        return None
    const: dict[int, tuple[int, dict[int, int] | int]] = {}
    for form, known in table["const"].items():
        size = known["bytes"]
        const[int(form, 16)] = (int(known["offset_bit"]),
                                {int(v): n for v, n in size.items()} if isinstance(size, dict) else int(size))
    return const, frozenset(int(f, 16) for f in table["none"])


def size_field(high: int) -> int:
    """An instruction's size field (bits 73 to 75: bits 9 to 11 of its second word)."""
    return (high >> 9) & 0x7


def bank_zero_reads(data: bytes) -> list[tuple[int, int]] | None:
    """The byte ranges of constant bank 0 that the cubin's instructions read, or None where the table cannot
    say: an architecture it does not cover, an instruction of a form it does not know, or a size it has not
    seen that form read with."""
    from .nvidia_object import instruction_words

    try:
        arch, words = instruction_words(data)
    except CorruptObjectError:  # the disassembly says what is wrong
        return None
    table = forms(arch)
    if table is None:
        return None
    const, none = table
    reads = []
    for low, high in words:
        form = low & FORM_MASK
        known = const.get(form)
        if known is None:
            if form not in none:
                return None
            continue
        offset_bit, sizes = known
        size = sizes.get(size_field(high)) if isinstance(sizes, dict) else sizes
        if size is None:
            return None
        if (low >> 54) & 0x1F == 0:
            at = (low >> offset_bit) & ((1 << (54 - offset_bit)) - 1)
            reads.append((at, at + size))
    return reads
