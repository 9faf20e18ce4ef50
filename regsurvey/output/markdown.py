"""The comparison as Markdown for a pull request's "Registers" section: the summary in words and a
compact table of the builds that changed.

Everything that comes from a kernel or a compiler (keys, kernel names, errors) is escaped: GitHub
renders inline HTML and Markdown emphasis in table cells.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..diff.summary import summarize
from ..model.comparison import MARK_ORDER, Comparison, Mark, RowComparison, Stack, SurveyInfo
from ..model.words import ARROW, count
from .compile_text import compile_time_text, compile_times_heading
from .figure_text import (
    figure_total_delta,
    launch_text,
    lint_counts_text,
    rebuild_verdict,
    row_change_text,
    stage_text,
    total_line,
)
from .no_effect_text import HEADING, comparison_notes
from .where_text import line_where_sentences

if TYPE_CHECKING:
    from ..check.gate import GateResult

MAX_TABLE_ROWS = 60  # a PR description stays readable; the HTML report has every row

# Intraword underscores (mla_decode) never emphasise in GitHub Markdown: leave them readable.
_SPECIAL = re.compile(r"([\\`*\[\]|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def escape(text: str) -> str:
    """Plain text safe in Markdown prose and table cells: HTML characters as entities, emphasis,
    links, code and cell separators backslash-escaped, newlines as spaces."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", text)


def code(text: str) -> str:
    """A code span (no Markdown or HTML inside), fenced past any backticks it holds; ``|`` escaped,
    as GitHub tables require even inside code."""
    text = " ".join(str(text).split())
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def _rows_table(rows: list[RowComparison]) -> list[str]:
    # The first compiler stage that differs, where the store told it for any build listed.
    stages = any(r.first_difference is not None for r in rows[:MAX_TABLE_ROWS])
    lines = ["| | key | target | kernel | change |" + (" first differs |" if stages else ""),
             "| --- | --- | --- | --- | --- |" + (" --- |" if stages else "")]
    for r in rows[:MAX_TABLE_ROWS]:
        mark = f"**{r.mark.value}**" if r.mark in (Mark.WORSE, Mark.MIXED, Mark.NEWLY_FAILING) else r.mark.value
        lines.append(f"| {mark} | {code(r.key)} | {escape(r.target)} | {code(launch_text(r))} "
                     f"| {escape(row_change_text(r))} |" + (f" {escape(stage_text(r))} |" if stages else ""))
    if len(rows) > MAX_TABLE_ROWS:
        lines.append(f"| | {count(len(rows) - MAX_TABLE_ROWS, 'more changed build')}: see the HTML report | | | |"
                     + (" |" if stages else ""))
    return lines


def _comparison_lines(comparison: Comparison, heading: str, only_new_knobs: bool = False) -> list[str]:
    lines = [heading, ""]
    for change in comparison.toolchain_changes:
        lines.append(f"> toolchain differs: {escape(change.describe())}")
    if comparison.toolchain_changes:
        lines.append("")
    for line in summarize(comparison).lines:
        lines.append(f"- {escape(line.render())}")
        lines += [f"  - where: {escape(w)}" for w in line_where_sentences(line)]
    lines.append("")
    changed = [r for m in MARK_ORDER if m is not Mark.UNCHANGED for r in comparison.with_mark(m)]
    if changed:
        lines += _rows_table(changed)
        lines.append("")
    lines += _compile_time_lines(comparison)
    lines += _knob_lines(comparison, only_new_knobs)
    if comparison.rebuild is not None:
        check = comparison.rebuild
        if check.deterministic:
            lines.append(f"Rebuild check: {rebuild_verdict(check)} from a cold Triton cache.")
        else:
            lines.append(f"Rebuild check: **{rebuild_verdict(check)}** from a cold Triton cache:")
            lines += [f"- {code(d.key)} {escape(d.target)}: {code(d.section)}: {escape(d.detail)}"
                      for d in check.differences[:MAX_TABLE_ROWS]]
        lines.append("")
    lines.append(f"<sub>{escape(total_line(comparison))}</sub>")
    return lines


def _compile_time_lines(comparison: Comparison) -> list[str]:
    """The builds whose compile time moved notably, a line each (a pathological slowdown in bold), after a
    line saying how many; nothing where none moved."""
    heading = compile_times_heading(comparison)
    if not heading:
        return []
    lines = [escape(heading[0].upper() + heading[1:]) + ":", ""]
    moved = comparison.compile_time_changes
    for r in moved[:MAX_TABLE_ROWS]:
        assert r.compile_time is not None
        text = escape(compile_time_text(r.compile_time))
        lines.append(f"- {code(r.key)} {escape(r.target)} {code(launch_text(r))}: "
                     + (f"**{text}**" if r.compile_time.slowdown() else text))
    if len(moved) > MAX_TABLE_ROWS:
        lines.append(f"- {count(len(moved) - MAX_TABLE_ROWS, 'more build')}")
    return [*lines, ""]


def _knob_lines(comparison: Comparison, only_new: bool) -> list[str]:
    """The head's knobs that did nothing, folded (told, never judged: a pull request's comment stays short);
    ``only_new``: those its base did not have."""
    notes = comparison_notes(comparison, only_new)
    if not notes:
        return []
    new = sum(note.new for note in notes)
    told = count(len(notes), "knob") + (f", {new} new" if new and not only_new else "")
    return ["<details><summary>" + escape(f"{HEADING[0].upper()}{HEADING[1:]}: {told}") + "</summary>", "",
            *(f"- {escape(note.kind)}: {escape(note.text)}" + (" **(new)**" if note.new else "") for note in notes),
            "", "</details>", ""]


def _name(info: SurveyInfo) -> str:
    short, commit = info.short, info.commit
    return code(short) + (f" ({commit[:10]})" if commit and not short.startswith(commit[:7]) else "")


class MarkdownFormat:
    """``--format markdown``: paste into a pull request description."""

    name = "markdown"

    def format(self, comparison: Comparison) -> str:
        """A "Registers" section: summary sentences, then the changed builds."""
        heading = f"### Registers: {_name(comparison.base)} {ARROW} {_name(comparison.head)}"
        return "\n".join(_comparison_lines(comparison, heading)) + "\n"

    def format_stack(self, stack: Stack) -> str:
        """A table of the commits, then each commit against its parent, then the whole range."""
        lines = [f"### Registers, commit by commit: {_name(stack.base)}.."
                 f"{_name(stack.head)}", "",
                 "| commit | subject | keys build | worse | mixed | better | newly failing | fixed | spills | lint |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for step in stack.steps:
            counts = step.comparison.counts
            ok, total = step.keys_built
            lint = escape(lint_counts_text(step.lint_findings))
            marks = " | ".join(str(counts[m]) for m in (Mark.WORSE, Mark.MIXED, Mark.BETTER, Mark.NEWLY_FAILING,
                                                        Mark.FIXED))
            lines.append(f"| {step.commit[:10]} | {escape(step.subject)} | {ok}/{total} | {marks} "
                         f"| {escape(figure_total_delta(step.comparison))} | {lint} |")
        lines.append("")
        for step in stack.steps:
            lines += _comparison_lines(step.comparison, f"#### {step.commit[:10]} {escape(step.subject)}",
                                       only_new_knobs=True)
            lines.append("")
        lines += _comparison_lines(stack.overall, "#### The whole range")
        return "\n".join(lines) + "\n"


def _gate_name(info: SurveyInfo) -> str:
    return _name(info) if info.commit or info.short != "worktree" else "the working tree"


def format_gate(result: GateResult) -> str:
    """``regsurvey check``'s report: the verdict, each problem under its rule, the worse figures the
    baseline allows (and why), then the comparison's "Registers" section."""
    from ..check.gate import RULES, Allowed
    from .gate_text import build_subject, figure_change, problem_message

    comparison = result.comparison
    against = f"{_gate_name(comparison.head)} against {_gate_name(comparison.base)}"
    n = len(result.problems)
    verdict = "passed" if result.passed else f"failed, {count(n, 'problem')}"
    lines = [f"### regsurvey check {verdict}: {against}", ""]
    if result.baseline.found and result.baseline.path is not None:
        entries = count(len(result.baseline.allow), "entry")
        lines += [f"Baseline: {code(result.baseline.path.name)} ({entries}).", ""]
    for rule in RULES:
        problems = [p for p in result.problems if p.rule is rule]
        if not problems:
            continue
        lines.append(f"**{escape(rule.title)}** ({code(rule.id)})")
        lines += [f"- {escape(problem_message(p))}" for p in problems[:MAX_TABLE_ROWS]]
        if len(problems) > MAX_TABLE_ROWS:
            lines.append(f"- {len(problems) - MAX_TABLE_ROWS} more")
        lines.append("")
    if result.allowed:
        # One line per build and entry: the figures it allows, and the entry's reason.
        grouped: dict[tuple[str, int], list[Allowed]] = {}
        for a in result.allowed:
            grouped.setdefault((a.row.ref, a.entry.number), []).append(a)
        lines.append("**allowed by the baseline**")
        for group in list(grouped.values())[:MAX_TABLE_ROWS]:
            row, entry = group[0].row, group[0].entry
            build = build_subject(row)
            told = ", ".join(figure_change(a.figure) for a in group)
            lines.append(f"- {escape(build)}: {escape(told)}, by {escape(entry.describe())}: {escape(entry.reason)}")
        if len(grouped) > MAX_TABLE_ROWS:
            lines.append(f"- {len(grouped) - MAX_TABLE_ROWS} more")
        lines.append("")
    return "\n".join(lines) + "\n" + MarkdownFormat().format(comparison)
