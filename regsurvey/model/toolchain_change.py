"""One part of one backend's toolchain that differs between two surveys (``Comparison.toolchain_changes``):
what makes their builds not comparable, unless a comparison across toolchains judges them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .words import ARROW


@dataclass(frozen=True)
class ToolchainChange:
    """One part of one backend's toolchain that differs between the surveys (makes rows not comparable)."""

    backend: str  # "hip" or "cuda"
    part: str  # "triton", "ptxas", "amd_codegen_revision", "fp_fusion" ...
    before: Any
    after: Any

    def describe(self, arrow: str = ARROW) -> str:
        """``cuda ptxas: 12.8 → 13.4`` (``arrow``: how the report draws one); a part recorded per target
        (ptxas) by the targets whose entry differs: ``cuda ptxas: sm90 12.8 → 13.4; sm100 12.9 → 13.4``. A
        side that recorded none (a survey older than the part, a toolchain that cannot say) is
        ``unknown``."""
        if isinstance(self.before, dict) and isinstance(self.after, dict):
            moved = [f"{name} {_known(self.before.get(name))} {arrow} {_known(self.after.get(name))}"
                     for name in dict.fromkeys([*self.before, *self.after])
                     if self.before.get(name) != self.after.get(name)]
            return f"{self.backend} {self.part}: {'; '.join(moved)}"
        return f"{self.backend} {self.part}: {_known(self.before)} {arrow} {_known(self.after)}"


def _known(value: Any) -> Any:
    return "unknown" if value is None else value
