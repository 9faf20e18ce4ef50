"""The terminal report of a comparison (rich), grouped like ``bloaty new -- old``.

Changed builds come first, one table per mark (worse first, then better, then status changes), each
with a column per figure that changed in it and capped with an ``[Other]`` row; then the count of
unchanged builds and a total line.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from ..diff.summary import summarize
from ..model.comparison import MARK_ORDER, Comparison, Mark, RowComparison, Stack
from ..model.figures import figure
from ..model.rebuild import RebuildCheck
from ..model.targets import TARGETS
from ..model.words import count
from .compile_text import compile_time_text, compile_times_heading
from .figure_text import (
    build_text,
    change_text,
    changed_names,
    figure_total_deltas,
    launch_text,
    lint_change_text,
    lint_counts_text,
    no_launch_text,
    rebuild_difference,
    rebuild_verdict,
    stage_text,
    status_text,
    total_line,
)
from .no_effect_text import comparison_notes, knob_lines
from .terminal import NAME, TEXT, Cell, Column, Grid, hanging
from .where_text import line_where_sentences

_MARK_STYLE = {
    Mark.WORSE: "bold red", Mark.MIXED: "bold yellow", Mark.NEWLY_FAILING: "bold red", Mark.BETTER: "bold green",
    Mark.FIXED: "bold green",
    Mark.ADDED: "cyan", Mark.REMOVED: "magenta", Mark.CHANGED: "yellow", Mark.STILL_FAILING: "red",
    Mark.NOT_COMPARABLE: "yellow",
}
_TONE_STYLE = {"worse": "red", "better": "green", "neutral": ""}
_VERDICT_STYLE = {"worse": "red", "better": "green"}
_STATUS_MARKS = (Mark.NEWLY_FAILING, Mark.FIXED, Mark.ADDED, Mark.REMOVED, Mark.STILL_FAILING)


def _figure_cell(r: RowComparison, name: str) -> Text:
    f = r.figure(name)
    if f is None or not f.changed:
        return Text("·" if f is not None else "", style="dim")
    return Text(change_text(f), style=_VERDICT_STYLE.get(f.verdict, "yellow"))


def _moved(r: RowComparison) -> list[Text]:
    """The figures that moved in a build, each an item (``VGPR 38 → 64 (+26)``) of the compact layout."""
    return [Text(f"{figure(f.name).label} {change_text(f)}", style=_VERDICT_STYLE.get(f.verdict, "yellow"))
            for f in r.changed_figures]


def _status_line(r: RowComparison, mark: Mark) -> Text | None:
    """What a status row says instead of figures (its error, why it is not comparable), for the line
    under it."""
    text = status_text(r)
    if not text:
        return None
    if mark in (Mark.NEWLY_FAILING, Mark.STILL_FAILING):
        text = f"error: {text}"
    elif mark is Mark.NOT_COMPARABLE:
        text = f"why: {text}"
    return Text(text, style="red" if mark is not Mark.FIXED else "")


def mark_table(rows: tuple[RowComparison, ...], mark: Mark, limit: int, title: str | None = None,
               width: int = 200) -> Grid:
    """One group for a terminal of ``width`` columns: its builds, each a row. A column per figure that
    moved among them where they all fit, else one column listing each build's own figures that moved;
    what the lint found, what the build was made with and the first compiler stage that differs in columns
    of text (under the row where the width runs short); an error, why a build is not comparable, or that it
    can no longer launch, a line under its row; an ``[Other]`` line past ``limit``."""
    names = [] if mark in _STATUS_MARKS else changed_names(rows)
    grid = _group_grid(rows, mark, limit, title, names)
    if names and not grid.fits(width):
        grid = _group_grid(rows, mark, limit, title, None)
    return grid


def _group_grid(rows: tuple[RowComparison, ...], mark: Mark, limit: int, title: str | None,
                names: list[str] | None) -> Grid:
    """A group's grid: a column per figure of ``names``, or (None) a column of the figures each moved."""
    lint = any(r.lint_findings.changed for r in rows)
    built = any(r.build_changes for r in rows)
    stages = any(r.first_difference is not None for r in rows)
    columns = [Column("key", NAME, min_width=12), Column("target", NAME), Column("kernel", NAME, min_width=10)]
    if names is None:
        columns.append(Column("moved", TEXT, min_width=24))
    else:
        columns += [Column(figure(name).label, justify="right") for name in names]
    if lint:
        columns.append(Column("kernarg lint", TEXT, min_width=16))
    if built:
        columns.append(Column("built with", TEXT, min_width=24))
    if stages:
        columns.append(Column("first differs", TEXT, min_width=10))
    grid = Grid(columns, title=Text(title or f"{mark.value} ({len(rows)})", style=_MARK_STYLE.get(mark, "")))
    shown = rows if limit <= 0 else rows[:limit]
    for r in shown:
        # Text, not markup: a build's name holds brackets (``matmul [launch 2]``).
        cells: list[Cell] = [Text(r.key), r.target, Text(launch_text(r))]
        cells += [_moved(r)] if names is None else [_figure_cell(r, n) for n in names]
        if lint:
            style = "red" if r.lint_findings.new_errors else "green" if r.lint_findings.fixed_errors else ""
            cells.append(Text(lint_change_text(r), style=style))
        if built:
            cells.append(build_text(r))
        if stages:
            cells.append(stage_text(r))
        status = _status_line(r, mark) if mark in _STATUS_MARKS or mark is Mark.NOT_COMPARABLE else None
        if status is None and r.no_longer_launches:
            status = Text(no_launch_text(r), style="red")
        grid.add_row(*cells, under=[status] if status is not None else [])
    if len(rows) > len(shown):
        grid.footer.append(Text(f"[Other] {len(rows) - len(shown)} more", style="dim"))
    return grid


def compile_table(comparison: Comparison, limit: int) -> Grid | None:
    """The builds whose compile time moved notably, the most slowed first, each a row (red where it is a
    pathological slowdown: 10x and over 30 s); an ``[Other]`` line past ``limit``. None where none moved."""
    moved = comparison.compile_time_changes
    if not moved:
        return None
    grid = Grid([Column("key", NAME, min_width=12), Column("target", NAME), Column("kernel", NAME, min_width=10),
                 Column("compile time", TEXT, min_width=24)],
                title=Text(compile_times_heading(comparison), style="bold"))
    shown = moved if limit <= 0 else moved[:limit]
    for r in shown:
        assert r.compile_time is not None
        style = "red" if r.compile_time.slowdown() else ""
        grid.add_row(Text(r.key), r.target, Text(launch_text(r)), Text(compile_time_text(r.compile_time, named=False),
                                                                     style=style))
    if len(moved) > len(shown):
        grid.footer.append(Text(f"[Other] {len(moved) - len(shown)} more", style="dim"))
    return grid


def stack_table(stack: Stack) -> Grid:
    """A line per commit of a stack, as ``git log --oneline`` has it (the subject last, under the line
    where the width runs short): its marks' counts, the spill totals that moved, the lint's findings."""
    grid = Grid([Column("commit", NAME, min_width=10),
                 *(Column(head, justify="right") for head in ("keys build", "worse", "mixed", "better",
                                                               "newly failing", "fixed")),
                 Column("spills", TEXT, min_width=16), Column("lint", TEXT, min_width=10),
                 Column("subject", TEXT, min_width=24, labelled_under=False)],
                title=Text(f"{stack.base.short}..{stack.head.short}: {count(len(stack.steps), 'commit')}",
                           style="bold"))
    for step in stack.steps:
        counts = step.comparison.counts
        ok, total = step.keys_built
        marks = [str(counts[m]) for m in (Mark.WORSE, Mark.MIXED, Mark.BETTER, Mark.NEWLY_FAILING, Mark.FIXED)]
        grid.add_row(step.commit[:10], f"{ok}/{total}", *marks, figure_total_deltas(step.comparison) or ["unchanged"],
                     lint_counts_text(step.lint_findings), step.subject)
    return grid


def rebuild_lines(check: RebuildCheck) -> list[Text]:
    """The determinism check's lines: one verdict, then each build that differed."""
    verdict = Text(f"rebuild check of {check.label}: {rebuild_verdict(check)} from a cold cache",
                   style="green" if check.deterministic else "bold red")
    return [verdict, *(Text(f"  {rebuild_difference(d)}") for d in check.differences)]


def rebuild_text(check: RebuildCheck, *, color: bool = False, width: int | None = None) -> str:
    """``rebuild-check``'s report: :func:`rebuild_lines`, for a terminal of ``width`` columns (None: the
    terminal's own, as rich finds it; colour only when asked, in the terminal's own colours)."""
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True if color else None, highlight=False)
    for line in rebuild_lines(check):
        console.print(line)
    return out.getvalue()


def _trimmed(text: str) -> str:
    # rich pads table titles to the table's width: trailing blanks only get in the way of a pipe.
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _vendor(target: str) -> str:
    known = TARGETS.get(target)
    return "AMD" if known is not None and known.is_amd else "NVIDIA" if known is not None else "other"


class TableFormat:
    """``--format table``: tables for a terminal of ``width`` columns (colour only when asked)."""

    name = "table"

    def __init__(self, color: bool = False, width: int = 140, limit: int = 50):
        self.color, self.width, self.limit = color, width, limit

    def _console(self) -> tuple[Console, io.StringIO]:
        buffer = io.StringIO()
        console = Console(file=buffer, width=self.width, force_terminal=self.color, no_color=not self.color,
                          color_system="standard" if self.color else None, highlight=False, emoji=False)
        return console, buffer

    def _render(self, console: Console, comparison: Comparison, title: str | None = None,
                only_new_knobs: bool = False) -> None:
        console.print(Text(title or f"{comparison.base.label} → {comparison.head.label}", style="bold"))
        for change in comparison.toolchain_changes:
            for text in hanging(Text(f"toolchain differs: {change.describe()}", style="yellow"), console.width):
                console.print(text)
        for line in summarize(comparison).lines:
            for text in hanging(Text("- " + line.text, style=_TONE_STYLE.get(line.tone, "")), console.width):
                console.print(text)
            for where in line_where_sentences(line):
                for text in hanging(Text(f"    where: {where}"), console.width, 6):
                    console.print(text)
        for mark in MARK_ORDER:
            if mark is Mark.UNCHANGED:
                continue
            rows = comparison.with_mark(mark)
            if not rows:
                continue
            # One table per vendor, as in `run`: AMD and NVIDIA figures have nothing in common.
            vendors: dict[str, list[RowComparison]] = {}
            for r in rows:
                vendors.setdefault(_vendor(r.target), []).append(r)
            for vendor, part in vendors.items():
                title = f"{mark.value} ({len(rows)})" if len(vendors) == 1 else \
                    f"{mark.value} ({len(part)} of {len(rows)}, {vendor})"
                console.print()
                for text in mark_table(tuple(part), mark, self.limit, title, console.width).lines(console.width):
                    console.print(text)
        compile_times = compile_table(comparison, self.limit)
        if compile_times is not None:
            console.print()
            for text in compile_times.lines(console.width):
                console.print(text)
        console.print()
        unchanged = comparison.counts[Mark.UNCHANGED]
        console.print(Text(f"unchanged: {count(unchanged, 'build')}", style="dim"))
        for k, knob in enumerate(knob_lines(comparison_notes(comparison, only_new_knobs))):
            for text in hanging(Text(knob, style="dim"), console.width, 4 if k else 2):
                console.print(text)
        if comparison.rebuild is not None:
            for text in rebuild_lines(comparison.rebuild):
                console.print(text)
        for text in hanging(Text("TOTAL " + total_line(comparison), style="bold"), console.width):
            console.print(text)

    def format(self, comparison: Comparison) -> str:
        """The whole comparison as terminal text."""
        console, buffer = self._console()
        self._render(console, comparison)
        return _trimmed(buffer.getvalue())

    def format_stack(self, stack: Stack) -> str:
        """A line per commit, then each commit against its parent, then the head against the base."""
        console, buffer = self._console()
        for line in stack_table(stack).lines(console.width):
            console.print(line)
        for step in stack.steps:
            console.print()
            self._render(console, step.comparison, title=f"{step.commit[:10]} {step.subject} (against its parent)",
                         only_new_knobs=True)
        console.print()
        self._render(console, stack.overall,
                     title=f"{stack.head.short} against {stack.base.short} (the whole range)")
        return _trimmed(buffer.getvalue())
