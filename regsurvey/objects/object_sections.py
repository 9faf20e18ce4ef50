"""Where two builds of one kernel differ: the first ELF section whose bytes differ.

Both vendors' objects are ELF (HSACO, cubin); this module compares them generically, section by
section in the first object's section order, with pyelftools. It reads no vendor metadata: that is
``amd_object``'s and ``nvidia_object``'s job.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile


@dataclass(frozen=True)
class SectionDifference:
    """The first place two objects differ."""

    section: str  # a section name, or "<ELF header>", "<section list>", "<not ELF>", "<layout>"
    detail: str  # one line: what differs there


def _sections(data: bytes) -> list[tuple[str, int, bytes]]:
    elf = ELFFile(io.BytesIO(data))
    out = []
    for section in elf.iter_sections():
        # NOBITS sections (.bss, .nv.shared.*) have a size but no bytes in the file.
        body = b"" if section["sh_type"] == "SHT_NOBITS" else section.data()
        out.append((section.name, section["sh_size"], body))
    return out


def first_difference(first: bytes, second: bytes) -> SectionDifference | None:
    """None when the objects are byte-identical; else the first differing section and how."""
    if first == second:
        return None
    try:
        a, b = _sections(first), _sections(second)
    except (ELFError, ValueError, OSError) as exc:
        return SectionDifference("<not ELF>", f"cannot read as ELF ({exc}); sizes {len(first)} vs {len(second)} B")
    names_b: dict[str, list[tuple[int, bytes]]] = {}
    for name, size, body in b:
        names_b.setdefault(name, []).append((size, body))
    seen: dict[str, int] = {}
    for name, size, body in a:
        index = seen.get(name, 0)
        seen[name] = index + 1
        others = names_b.get(name, [])
        if index >= len(others):
            return SectionDifference(name or "<unnamed>", "only in the first build")
        other_size, other_body = others[index]
        if size != other_size:
            return SectionDifference(name, f"size {size} vs {other_size} B")
        if body != other_body:
            offset = next(i for i, (x, y) in enumerate(zip(body, other_body)) if x != y)
            return SectionDifference(name, f"contents differ at offset {offset:#x} of {size} B")
    extra = [name for name, _, _ in b if name not in seen]
    if extra:
        return SectionDifference(extra[0] or "<unnamed>", "only in the second build")
    if first[:64] != second[:64]:
        return SectionDifference("<ELF header>", "headers differ")
    return SectionDifference("<layout>", "same sections, different file layout (offsets or padding)")


# Sections of debug information (DWARF; NVIDIA's own line and register tables), and their relocations: where
# a build's source locations and file paths are, not its code.
_DEBUG_PREFIXES = (".debug_", ".nv_debug_", ".rel.debug_", ".rela.debug_", ".rel.nv_debug_", ".rela.nv_debug_")


def is_debug_section(name: str) -> bool:
    """True for a section holding debug information (``.debug_line``, ``.nv_debug_line_sass`` ...)."""
    return name.startswith(_DEBUG_PREFIXES)


NOT_ELF = "<not ELF>"


def differing_sections(first: bytes, second: bytes) -> tuple[str, ...]:
    """The names of the sections whose bytes differ, or that only one object has (each once, in the first
    object's order, then the second's); ``(NOT_ELF,)`` when either cannot be read. Empty when every
    section is the same (the objects may still differ in their layout)."""
    try:
        a, b = _sections(first), _sections(second)
    except (ELFError, ValueError, OSError):
        return (NOT_ELF,)
    def by_name(sections: list[tuple[str, int, bytes]]) -> dict[str, list[tuple[int, bytes]]]:
        out: dict[str, list[tuple[int, bytes]]] = {}
        for name, size, body in sections:
            out.setdefault(name, []).append((size, body))
        return out
    first_sections, second_sections = by_name(a), by_name(b)
    return tuple(name for name in dict.fromkeys([*first_sections, *second_sections])
                 if first_sections.get(name) != second_sections.get(name))


def code_differs(first: bytes, second: bytes) -> bool | None:
    """Whether two objects differ in more than their debug sections (the paths and lines of the checkout each
    was compiled from); None when either cannot be read as ELF."""
    sections = differing_sections(first, second)
    if NOT_ELF in sections:
        return None
    return any(not is_debug_section(name) for name in sections)
