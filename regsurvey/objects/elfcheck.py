"""What both object readers (AMD HSACO, NVIDIA cubin) need of an ELF file before trusting it."""

from __future__ import annotations

import contextlib
import io
import struct

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ..errors import CorruptObjectError

# How pyelftools reports a cut or altered object: every one means "corrupt".
PARSE_ERRORS = (ELFError, struct.error, ValueError, IndexError, KeyError, TypeError, EOFError, OverflowError)


def machine(data: bytes) -> str | None:
    """The machine an ELF object is for, as pyelftools names it (``EM_AMDGPU``, ``EM_CUDA``: which reader
    reads it); None when ``data`` is no ELF that parses."""
    with contextlib.suppress(*PARSE_ERRORS):
        return str(ELFFile(io.BytesIO(data)).header["e_machine"])
    return None


def check_extent(elf: ELFFile, size: int, what: str) -> None:
    """Refuse an object cut short: every header table, section and segment must lie inside it.

    pyelftools reads lazily, so a truncated object would otherwise fail later, far from the cause.
    """
    header = elf.header
    ends = [
        header["e_shoff"] + header["e_shnum"] * header["e_shentsize"],
        header["e_phoff"] + header["e_phnum"] * header["e_phentsize"],
    ]
    if max(ends) <= size:  # the tables fit: then check what they describe
        ends += [s["sh_offset"] + s["sh_size"] for s in elf.iter_sections() if s["sh_type"] != "SHT_NOBITS"]
        ends += [p["p_offset"] + p["p_filesz"] for p in elf.iter_segments()]
    if max(ends) > size:
        raise CorruptObjectError(f"{what} is cut short: its headers describe {max(ends)} bytes, it has {size}")


def first_line(message: BaseException | str) -> str:
    """The first non-empty line of a message, whitespace collapsed (or the exception's type name)."""
    for line in str(message).splitlines():
        if line.strip():
            return " ".join(line.split())
    return type(message).__name__ if isinstance(message, BaseException) else "no message"
