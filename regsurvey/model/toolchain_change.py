"""One part of one backend's toolchain that differs between two surveys (``Comparison.toolchain_changes``):
what makes their builds not comparable, unless a comparison across toolchains judges them."""

from __future__ import annotations

from collections.abc import Mapping
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


def differing_parts(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[str]:
    """The parts of one backend's toolchain block that differ between two surveys, in ``after``'s order then
    ``before``'s. A part recorded per target (ptxas: a mapping of target to version) differs only in a target
    both sides recorded: a target one side's regsurvey did not know yet (sm120 added later) is no change of
    toolchain, or every survey stored before it would be made again and compare as not comparable."""
    was, now = before or {}, after or {}
    parts = []
    for part in dict.fromkeys([*now, *was]):
        old, new = was.get(part), now.get(part)
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            if any(old[name] != new[name] for name in old if name in new):
                parts.append(part)
        elif old != new:
            parts.append(part)
    return parts


def same_toolchain(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> bool:
    """True when one backend's toolchain blocks of two surveys say the same toolchain (:func:`differing_parts`)."""
    return (before is None) == (after is None) and not differing_parts(before, after)
