"""The terminal report of a comparison (rich), grouped like ``bloaty new -- old``.

Changed builds come first, one table per mark (worse first, then better, then status changes), each
with a column per figure that changed in it and capped with an ``[Other]`` row; then the count of
unchanged builds and a total line.
"""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..diff.summary import summarize
from ..model.comparison import MARK_ORDER, Comparison, Mark, RowComparison, Stack
from ..model.figures import figure
from ..model.rebuild import RebuildCheck
from ..model.targets import TARGETS
from ..model.words import count
from .figure_text import (
    build_text,
    change_text,
    changed_names,
    figure_total_delta,
    launch_text,
    lint_change_text,
    lint_counts_text,
    rebuild_difference,
    rebuild_verdict,
    status_text,
    total_line,
)

_MARK_STYLE = {
    Mark.WORSE: "bold red", Mark.MIXED: "bold yellow", Mark.NEWLY_FAILING: "bold red", Mark.BETTER: "bold green",
    Mark.FIXED: "bold green",
    Mark.ADDED: "cyan", Mark.REMOVED: "magenta", Mark.CHANGED: "yellow", Mark.STILL_FAILING: "red",
    Mark.NOT_COMPARABLE: "yellow",
}
_TONE_STYLE = {"worse": "red", "better": "green", "neutral": ""}
_STATUS_MARKS = (Mark.NEWLY_FAILING, Mark.FIXED, Mark.ADDED, Mark.REMOVED, Mark.STILL_FAILING)


def _figure_cell(r: RowComparison, name: str) -> Text:
    f = r.figure(name)
    if f is None or not f.changed:
        return Text("·" if f is not None else "", style="dim")
    style = {"worse": "red", "better": "green"}.get(f.verdict, "yellow")
    return Text(change_text(f), style=style)


def mark_table(rows: tuple[RowComparison, ...], mark: Mark, limit: int, title: str | None = None) -> Table:
    """One group: its builds, a column per figure that changed among them, an ``[Other]`` row past ``limit``."""
    table = Table(title=Text(title or f"{mark.value} ({len(rows)})", style=_MARK_STYLE.get(mark, "")),
                  title_justify="left", header_style="bold", box=None, pad_edge=False)
    table.add_column("key", overflow="fold", min_width=12)
    table.add_column("target", no_wrap=True, min_width=6)
    table.add_column("kernel", overflow="fold", min_width=8)
    names = [] if mark in _STATUS_MARKS else changed_names(rows)
    for name in names:
        table.add_column(figure(name).label, justify="right", no_wrap=True)
    lint = any(r.lint_findings.changed for r in rows)
    if lint:
        table.add_column("kernarg lint", overflow="fold")
    status = mark in _STATUS_MARKS or mark is Mark.NOT_COMPARABLE
    if status:
        table.add_column("why" if mark is Mark.NOT_COMPARABLE else "error", overflow="fold")
    built = any(r.build_changes for r in rows)
    if built:
        table.add_column("built with", overflow="fold")
    shown = rows if limit <= 0 else rows[:limit]
    for r in shown:
        # Text, not markup: a build's name holds brackets (``matmul [launch 2]``).
        cells: list[Text | str] = [Text(r.key), r.target, Text(launch_text(r)), *[_figure_cell(r, n) for n in names]]
        if lint:
            style = "red" if r.lint_findings.new_errors else "green" if r.lint_findings.fixed_errors else ""
            cells.append(Text(lint_change_text(r), style=style))
        if status:
            cells.append(Text(status_text(r), style="red" if mark is not Mark.FIXED else ""))
        if built:
            cells.append(build_text(r))
        table.add_row(*cells)
    if len(rows) > len(shown):
        table.add_row(Text(f"[Other] {len(rows) - len(shown)} more", style="dim"), "", "",
                      *[""] * (len(names) + lint + status + built))
    return table


def rebuild_lines(check: RebuildCheck) -> list[Text]:
    """The determinism check's lines: one verdict, then each build that differed."""
    verdict = Text(f"rebuild check of {check.label}: {rebuild_verdict(check)} from a cold cache",
                   style="green" if check.deterministic else "bold red")
    return [verdict, *(Text(f"  {rebuild_difference(d)}") for d in check.differences)]


def _trimmed(text: str) -> str:
    # rich pads table titles to the table's width: trailing blanks only get in the way of a pipe.
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _vendor(target: str) -> str:
    known = TARGETS.get(target)
    return "AMD" if known is not None and known.is_amd else "NVIDIA" if known is not None else "other"


class TableFormat:
    """``--format table``: rich tables for a terminal (colour only when asked)."""

    name = "table"

    def __init__(self, color: bool = False, width: int = 140, limit: int = 50):
        self.color, self.width, self.limit = color, width, limit

    def _console(self) -> tuple[Console, io.StringIO]:
        buffer = io.StringIO()
        console = Console(file=buffer, width=self.width, force_terminal=self.color, no_color=not self.color,
                          color_system="standard" if self.color else None, highlight=False, emoji=False)
        return console, buffer

    def _render(self, console: Console, comparison: Comparison, title: str | None = None) -> None:
        console.print(Text(title or f"{comparison.base.label} → {comparison.head.label}", style="bold"))
        for change in comparison.toolchain_changes:
            console.print(Text(f"toolchain differs: {change.describe()}", style="yellow"))
        for line in summarize(comparison).lines:
            console.print(Text("- " + line.text, style=_TONE_STYLE.get(line.tone, "")))
            for where in line.where:
                console.print(Text(f"    where: {where}"))
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
                console.print(mark_table(tuple(part), mark, self.limit, title))
        console.print()
        unchanged = comparison.counts[Mark.UNCHANGED]
        console.print(Text(f"unchanged: {count(unchanged, 'build')}", style="dim"))
        if comparison.rebuild is not None:
            for text in rebuild_lines(comparison.rebuild):
                console.print(text)
        console.print(Text("TOTAL " + total_line(comparison), style="bold"))

    def format(self, comparison: Comparison) -> str:
        """The whole comparison as terminal text."""
        console, buffer = self._console()
        self._render(console, comparison)
        return _trimmed(buffer.getvalue())

    def format_stack(self, stack: Stack) -> str:
        """A line per commit, then each commit against its parent, then the head against the base."""
        console, buffer = self._console()
        table = Table(title=Text(f"{stack.base.short}..{stack.head.short}: {count(len(stack.steps), 'commit')}",
                                 style="bold"), title_justify="left", header_style="bold", box=None)
        for column in ("commit", "subject", "keys build", "worse", "mixed", "better", "newly failing", "fixed",
                       "spills", "lint"):
            table.add_column(column, no_wrap=column != "subject",
                             justify="right" if column not in ("commit", "subject", "spills") else "left")
        for step in stack.steps:
            counts = step.comparison.counts
            ok, total = step.keys_built
            marks = [str(counts[m]) for m in (Mark.WORSE, Mark.MIXED, Mark.BETTER, Mark.NEWLY_FAILING, Mark.FIXED)]
            table.add_row(step.commit[:10], step.subject, f"{ok}/{total}", *marks,
                          figure_total_delta(step.comparison), lint_counts_text(step.lint_findings))
        console.print(table)
        for step in stack.steps:
            console.print()
            self._render(console, step.comparison, title=f"{step.commit[:10]} {step.subject} (against its parent)")
        console.print()
        self._render(console, stack.overall,
                     title=f"{stack.head.short} against {stack.base.short} (the whole range)")
        return buffer.getvalue()
