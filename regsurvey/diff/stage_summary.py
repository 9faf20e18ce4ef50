"""The summary's lines on the first compiler stage that differs: a sentence per stage over the builds it is
known for (``RowComparison.first_difference``), in the compiler's order, with the figures that moved among
them: ``11 builds: Triton's lowering changed (TTGIR differs first: VGPRs -6 to +34 in 9)``, ``7 builds:
LLVM's backend changed (identical LLIR, different AMDGCN: scratch +44 to +96 B)``."""

from __future__ import annotations

from collections.abc import Iterable

from ..model.comparison import Comparison, Mark, RowComparison
from ..model.figures import BY_IMPORTANCE, SPILL
from ..model.stages import Stage
from ..model.targets import TARGETS
from ..model.words import count

# What a stage's differing first says of the compiler, and in parentheses which texts are the same and which
# differ ({code}: AMDGCN, PTX, or both where a line holds builds of both vendors).
_STAGE_WORDS = {
    Stage.TTIR: ("the kernel's Triton IR changed", "TTIR differs"),
    Stage.TTGIR: ("Triton's lowering changed", "TTGIR differs first"),
    Stage.LLIR: ("Triton's LLVM lowering changed", "LLIR differs first"),
    Stage.AMDGCN: ("LLVM's backend changed", "identical LLIR, different AMDGCN"),
    Stage.PTX: ("LLVM's backend changed", "identical LLIR, different PTX"),
    Stage.OBJECT: ("the assembler/linker changed", "identical {code}, different object"),
    Stage.LOCATIONS: ("identical from TTIR on", "only source locations differ"),
    Stage.IDENTICAL: ("the same object", "identical at every stage"),
}
MAX_STAGE_FIGURES = 3  # figures whose change a stage's sentence tells


def stage_sentences(comparison: Comparison) -> list[tuple[str, tuple[str, ...]]]:
    """A sentence per compiler stage that first differs, in the compiler's order, with the builds it speaks
    of (``RowComparison.ref``): those that changed, and the unchanged ones whose objects differ (a build
    unchanged to the same object says nothing)."""
    groups: dict[Stage, list[RowComparison]] = {}
    for r in comparison.rows:
        stage = r.first_difference
        if stage is not None and not (stage is Stage.IDENTICAL and r.mark is Mark.UNCHANGED):
            groups.setdefault(stage, []).append(r)
    out = []
    for stage in Stage:
        rows = groups.get(stage)
        if rows:
            meaning = stage_meaning(stage, [r.target for r in rows], moved_figures(rows))
            out.append((f"{count(len(rows), 'build')}: {meaning}", tuple(r.ref for r in rows)))
    return out


def stage_meaning(stage: Stage, targets: Iterable[str], moved: str = "") -> str:
    """What ``stage`` differing first says of the compiler, for builds on ``targets``, and in parentheses
    which texts are the same and which differ, then ``moved`` (the figures' changes) where given:
    ``LLVM's backend changed (identical LLIR, different AMDGCN: scratch +44 to +96 B)``."""
    what, detail = _STAGE_WORDS[stage]
    amd = {(t := TARGETS.get(target)) is not None and t.is_amd for target in targets}
    code = " and ".join(word for word, vendor in (("AMDGCN", True), ("PTX", False)) if vendor in amd)
    return f"{what} ({detail.format(code=code or 'AMDGCN/PTX')}{': ' + moved if moved else ''})"


def moved_figures(rows: list[RowComparison]) -> str:
    """The most important figures that moved among ``rows`` (at most MAX_STAGE_FIGURES), each as the range of
    its change (``scratch +44 to +96 B``), and in how many builds where not all (``in 7``)."""
    told: list[str] = []
    names: set[str] = set()
    for f in BY_IMPORTANCE:
        deltas = [d.delta for r in rows if (d := r.figure(f.name)) is not None and d.changed and d.delta is not None]
        # A companion that restates its figure (unified VGPRs, blocks per SM) is left out beside it; scratch,
        # spill loads and stack say more than the spills.
        if not deltas or (f.companion_of in names and f.kind != SPILL):
            continue
        names.add(f.name)
        low, high = min(deltas), max(deltas)
        change = f"{low:+d}" if low == high else f"{low:+d} to {high:+d}"
        told.append(f"{f.noun} {change}{f.unit}" + (f" in {len(deltas)}" if len(deltas) < len(rows) else ""))
        if len(told) == MAX_STAGE_FIGURES:
            break
    return ", ".join(told)


__all__ = ["moved_figures", "stage_meaning", "stage_sentences"]
