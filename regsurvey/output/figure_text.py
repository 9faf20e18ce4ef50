"""How every report writes figures, marks, lint findings and totals, so the table, Markdown and HTML read
alike."""

from __future__ import annotations

from ..model.comparison import FIGURE_MARKS, Comparison, FigureDelta, LintCounts, Mark, RowComparison
from ..model.figures import FIGURE_ORDER, figure
from ..model.findings import Finding
from ..model.rebuild import RebuildCheck, RebuildDifference
from ..model.results import error_line
from ..model.words import ARROW, agree, count


def change_text(f: FigureDelta, arrow: str = ARROW) -> str:
    """``38 → 64 (+26)``; one side only: ``64`` or ``38 → -``."""
    if f.before is None and f.after is None:
        return ""
    if f.before is None:
        return str(f.after)
    if f.after is None:
        return f"{f.before} {arrow} -"
    if f.before == f.after:
        return str(f.after)
    return f"{f.before} {arrow} {f.after} ({f.after - f.before:+d})"


# The occupancy a build change is told with, per vendor: waves per SIMD (AMD), warps per SM (NVIDIA).
_OCCUPANCY_FIGURES = ("occupancy", "occupancy_warps")


def occupancy_text(r: RowComparison, arrow: str = ARROW) -> str:
    """``warps/SM unchanged at 48`` or ``waves/SIMD 8 → 6``: the build's occupancy on both sides; empty
    where a side has none."""
    for name in _OCCUPANCY_FIGURES:
        f = r.figure(name)
        if f is None or f.before is None or f.after is None:
            continue
        unit = figure(name).unit.strip()
        return f"{unit} unchanged at {f.after}" if f.before == f.after else f"{unit} {f.before} {arrow} {f.after}"
    return ""


def build_text(r: RowComparison, arrow: str = ARROW) -> str:
    """What the build was made with that differs, then its occupancy: ``num_warps 4 → 8; warps/SM
    unchanged at 48``, ``BLOCK_N 64 → 128; waves/SIMD 8 → 6``; empty when the builds were made alike."""
    if not r.build_changes:
        return ""
    made = ", ".join(c.describe(arrow) for c in r.build_changes)
    return "; ".join(t for t in (made, occupancy_text(r, arrow)) if t)


def figures_text(r: RowComparison, arrow: str = ARROW) -> str:
    """The figures that changed, each with its label (``VGPR 38 → 64 (+26), waves 8 → 6 (-2)``)."""
    return ", ".join(f"{figure(f.name).label} {change_text(f, arrow)}" for f in r.changed_figures)


def no_launch_text(r: RowComparison) -> str:
    """``can no longer launch: LDS 205744 B, above the CU's 163840 B`` for a build whose occupancy fell to 0
    (``can no longer launch`` where its figures show no limit: ``RowComparison.launch_limit``); empty for
    any other."""
    if not r.no_longer_launches:
        return ""
    limit = r.launch_limit
    return "can no longer launch" + (f": {limit.describe()}" if limit is not None else "")


def row_change_text(r: RowComparison, arrow: str = ARROW) -> str:
    """A build's change column: that it can no longer launch, the figures that changed (or its status), the
    lint's change, and what its build was made with that differs (``built with num_warps 4 → 8; warps/SM
    unchanged at 48``)."""
    text = figures_text(r, arrow) if r.mark in FIGURE_MARKS else status_text(r, arrow)
    build = build_text(r, arrow)
    return "; ".join(t for t in (no_launch_text(r), text, lint_change_text(r), f"built with {build}" if build else "")
                     if t)


def launch_text(r: RowComparison) -> str:
    """The build within its key, as every report names it (:class:`~regsurvey.model.names.BuildName`):
    ``matmul``, ``fused_moe_kernel [down]``, ``matmul [launch 2]``, ``axpy [cfg 1]``; ``-`` for a key's own row."""
    return r.name.text or "-"


def stage_text(r: RowComparison) -> str:
    """The first compiler stage whose output differs in the build (``TTGIR``, ``AMDGCN``, ``object``,
    ``identical from TTIR on``, ``identical``); empty where it is not known."""
    return "" if r.first_difference is None else r.first_difference.label


def changed_names(rows: tuple[RowComparison, ...] | list[RowComparison]) -> list[str]:
    """Figures that changed in any of ``rows``, in display order."""
    names = {f.name for r in rows for f in r.changed_figures}
    return sorted(names, key=lambda n: FIGURE_ORDER.get(n, len(FIGURE_ORDER)))


def counts_text(comparison: Comparison) -> str:
    """``3 worse, 2 better, 91 unchanged`` (marks with no row are left out)."""
    return ", ".join(f"{n} {m.value}" for m, n in comparison.counts.items() if n)


def spill_totals_text(comparison: Comparison, arrow: str = ARROW) -> str:
    """``VGPR spills 112 → 16, spill stores 1200 → 800 B``."""
    parts = [f"{figure(t.name).noun} {t.before} {arrow} {t.after}{figure(t.name).unit}"
             for t in comparison.spill_totals]
    return ", ".join(parts) if parts else "no spill figures"


def total_line(comparison: Comparison, arrow: str = ARROW) -> str:
    """The closing line: what was compared, the marks, and the spill totals before and after."""
    before, after = comparison.spilling_builds
    line = (f"{count(comparison.keys, 'key')} ({count(len(comparison.rows), 'build')}) compared on "
            f"{', '.join(comparison.targets) or 'no target'}: {counts_text(comparison) or 'nothing'}; "
            f"spill totals {spill_totals_text(comparison, arrow)}; builds that spill {before} {arrow} {after}")
    errors_before, errors_after = comparison.lint_errors
    if errors_before or errors_after:  # quiet while the lint has nothing to say
        line += f"; miscompile suspects {errors_before} {arrow} {errors_after}"
    skipped_before, skipped_after = comparison.skipped_keys
    if skipped_before or skipped_after:  # keys a kind body skipped (rs.skip): not builds
        line += f"; keys skipped {skipped_before} {arrow} {skipped_after}"
    return line


def first_line(text: str | None, limit: int = 160) -> str:
    """The line that says why a build failed (:func:`regsurvey.model.results.error_line`), cut to ``limit``
    characters."""
    line = error_line(text)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def note_text(r: RowComparison, arrow: str = ARROW) -> str:
    """A row's note: the toolchain parts that make it not comparable (with ``arrow``), else why the
    other side has no such build (it skipped the key, or the build was flaky)."""
    return "; ".join(c.describe(arrow) for c in r.toolchain_changes) or r.note or ""


def status_text(r: RowComparison, arrow: str = ARROW) -> str:
    """What a build-status row says instead of figures (the error, that it is new, or which toolchain
    parts differ)."""
    if r.mark in (Mark.NEWLY_FAILING, Mark.STILL_FAILING):
        return first_line(r.after.error if r.after else None)
    if r.mark is Mark.FIXED:
        return "was: " + first_line(r.before.error if r.before else None)
    if r.mark in (Mark.ADDED, Mark.REMOVED):
        row = r.after if r.mark is Mark.ADDED else r.before
        if row is not None and not row.ok:
            return "error: " + first_line(row.error)
        return note_text(r, arrow)  # the other side skipped the key, when it did
    if r.mark is Mark.NOT_COMPARABLE:
        return note_text(r, arrow)
    return ""


def figure_total_deltas(comparison: Comparison, arrow: str = ARROW) -> list[str]:
    """The spill totals that changed, each on its own (``VGPR spills 112 → 16``)."""
    return [f"{figure(t.name).noun} {t.before} {arrow} {t.after}{figure(t.name).unit}"
            for t in comparison.spill_totals if t.before != t.after]


def figure_total_delta(comparison: Comparison, arrow: str = ARROW) -> str:
    """The spill totals that changed (``VGPR spills 112 → 16, spill stores 0 → 8 B``), or ``unchanged``."""
    return ", ".join(figure_total_deltas(comparison, arrow)) or "unchanged"


def finding_text(finding: Finding) -> str:
    """``out_ptr (#2, offset 16)``: a lint finding's argument."""
    return f"{finding.argument} (#{finding.arg_index}, offset {finding.arg_offset})"


def lint_change_text(r: RowComparison) -> str:
    """What the lint found new or fixed on a build: ``new miscompile suspect out_ptr; fixed note M``;
    empty when nothing changed."""
    parts = []
    for word, found in (("new", r.lint_findings.new), ("fixed", r.lint_findings.fixed)):
        for error, noun in ((True, "miscompile suspect"), (False, "lint note")):
            names = [f.argument for f in found if f.is_error == error]
            if names:
                parts.append(f"{word} {agree(len(names), noun)} {', '.join(names)}")
    return "; ".join(parts)


def lint_counts_text(counts: LintCounts | None, not_linted: str = "-") -> str:
    """A commit's findings for the stack's lint column: ``3 (1 suspect, 1 new)``, ``0``, or ``not_linted``."""
    if counts is None:
        return not_linted
    parts = [count(counts.errors, "suspect")] if counts.errors else []
    parts += [f"{counts.new} new"] if counts.new else []
    parts += [f"{counts.fixed} fixed"] if counts.fixed else []
    return str(counts.findings) + (f" ({', '.join(parts)})" if parts else "")


def rebuild_verdict(check: RebuildCheck) -> str:
    """``all 12 builds identical`` (``1 build identical``) or ``2 of 12 builds differ`` (``1 of 12 builds
    differs``): the rebuild check in a few words."""
    builds = count(check.builds, "build")
    if check.deterministic:
        return f"{'all ' if check.builds > 1 else ''}{builds} identical"
    return f"{len(check.differences)} of {builds} {agree(len(check.differences), 'differs', 'differ')}"


def rebuild_difference(d: RebuildDifference) -> str:
    """``gemm/w2 sm90 matmul: .text: ...``: one build the rebuild check found different."""
    return f"{d.key} {d.target} {d.kernel or '-'}: {d.section}: {d.detail}"
