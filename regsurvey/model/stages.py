"""The compiler's stages, and which one first made a build's output differ between two surveys.

Triton lowers a kernel to TTIR (its own IR of the kernel), then TTGIR (laid out on the GPU: layouts,
pipelining), then LLVM IR, then LLVM's backend makes AMDGCN or PTX, which the assembler and linker (AMD's
LLVM, NVIDIA's ptxas) make into the object. ``RowComparison.first_difference`` is a :class:`Stage`:
the first of these whose output differs, once location and debug information are set aside
(:mod:`regsurvey.diff.stages` normalizes the texts).
"""

from __future__ import annotations

from .enums import TextEnum


class Stage(TextEnum):
    """Where two builds of one kernel first differ, in the compiler's order (the value is the JSON's)."""

    TTIR = "ttir"  # the kernel's Triton IR: its source, or Triton's frontend
    TTGIR = "ttgir"  # Triton's lowering to the GPU (layouts, pipelining)
    LLIR = "llir"  # Triton's lowering to LLVM IR
    AMDGCN = "amdgcn"  # LLVM's AMD backend, from identical LLVM IR
    PTX = "ptx"  # LLVM's NVPTX backend, from identical LLVM IR
    OBJECT = "object"  # the assembler or linker (AMD's LLVM, ptxas), from identical AMDGCN or PTX
    # Every text identical once source locations are set aside, and the objects differ only in their debug
    # sections: the build moved on its source lines (or was compiled from another checkout's path).
    LOCATIONS = "locations"
    IDENTICAL = "identical"  # the same object (sha256)

    @property
    def label(self) -> str:
        """How reports name the stage: ``TTGIR``, ``AMDGCN``, ``object``, ``identical``."""
        return _LABELS[self]

    @property
    def code_differs(self) -> bool:
        """True when a stage's output differs in more than locations: the build's code changed."""
        return self not in (Stage.LOCATIONS, Stage.IDENTICAL)


_LABELS = {Stage.TTIR: "TTIR", Stage.TTGIR: "TTGIR", Stage.LLIR: "LLIR", Stage.AMDGCN: "AMDGCN",
           Stage.PTX: "PTX", Stage.OBJECT: "object", Stage.LOCATIONS: "identical from TTIR on",
           Stage.IDENTICAL: "identical"}

# The stages whose output is a text kept beside the object, in the compiler's order (an AMD build has no PTX,
# an NVIDIA build no AMDGCN).
TEXT_STAGES: tuple[Stage, ...] = (Stage.TTIR, Stage.TTGIR, Stage.LLIR, Stage.AMDGCN, Stage.PTX)
