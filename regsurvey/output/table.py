"""The terminal table of a survey: one table per vendor, since their figures differ, laid out for the
terminal's width (:mod:`regsurvey.output.terminal`)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.text import Text

from ..model.figures import AMD, LOOP_SPILL_OPS, NVIDIA, SPILL_FIGURES, Figure, figure, vendor_figures
from ..model.names import build_names
from ..model.no_effect import knobs_without_effect
from ..model.results import Row, Survey
from ..model.targets import get_target
from ..model.words import count, listing
from .no_effect_text import knob_lines, knob_notes
from .problems import SurveyReport, is_problem, problem_lines
from .terminal import NAME, UNDER, Column, Grid, hanging

_MESSAGE_WIDTH = 120  # the line for what a key's body said: its first message, cut (a terminal's width at most)


def _cell(row: Row, fig: Figure) -> Text:
    value = row.resources.get(fig.name)
    if value is None:
        return Text("")
    style = "bold red" if fig.spill and value else ""
    return Text(str(value), style=style)


def figure_column(fig: Figure) -> Column:
    """A figure's column in the survey table: fixed at its widest cell, never wrapped. Where the terminal
    is narrow, a figure that restates another (scratch, the unified VGPRs, spill loads, stack, blocks) or
    costs nothing (kernel arguments) is left out before a name folds further than it must, the least
    important first; the others only where the terminal is narrower still (under 70 columns)."""
    spare = fig.companion_of is not None or fig.worse == 0
    return Column(fig.label, justify="right", leave_out=fig.rank + 1, spare=spare)


def _status(row: Row) -> Text:
    """A failed or skipped row's line under it: its error's one line (the cause, not the location)."""
    if row.skipped:
        return Text(f"skipped: {row.skip_reason or ''}", style="dim")
    if row.is_flaky:
        return Text(f"flaky: {row.error_line or 'flaky'}", style="yellow")
    return Text(f"error: {row.error_line or 'error'}", style="red")


def survey_grids(survey: Survey, width: int) -> list[Grid]:
    """One table per vendor present in the survey, for a terminal of ``width`` columns. A row's error or
    skip reason is a line under it, and so is what a key's body said (its rows' ``messages``: the first,
    cut to one line, and how many more), under the key's last row: a message is as wide as it is (70 to
    100 characters from a serving engine's launcher), and in a cell it would widen its column for every
    row."""
    names = build_names(survey.rows)
    grids = []
    for vendor in (AMD, NVIDIA):
        figures = vendor_figures(vendor)
        rows = [r for r in survey.rows if (get_target(r.target).is_amd) == (vendor == AMD)]
        if not rows:
            continue
        # A key folds before a figure it cannot do without is left out, and not below 20 characters (it
        # would take a line per axis) before one it can do without is.
        grid = Grid([Column("key", NAME, min_width=20), Column("target", NAME),
                     Column("kernel", NAME, min_width=12), *(figure_column(fig) for fig in figures)],
                    title=Text(f"{vendor} — {survey.label}", style="bold"), figure_gap=1)
        for i, r in enumerate(rows):
            last_of_key = i + 1 == len(rows) or (rows[i + 1].key, rows[i + 1].target) != (r.key, r.target)
            under = [] if r.ok else [_status(r)]
            if r.messages and last_of_key:
                under.append(messages_text(r.messages, line_width=width - UNDER))
            # A build as every report names it (its kernel, and the launch's name or index); Text, not
            # markup: the name holds brackets.
            kernel = Text(names[(r.target, r.row_id)].text or "-")
            cells = [_cell(r, fig) if r.ok else Text("") for fig in figures]
            grid.add_row(Text(r.key), r.target, kernel, *cells, under=under)
        grid.footer.append(Text(units_caption(vendor), style="dim"))
        grids.append(grid)
    return grids


def units_caption(vendor: str) -> str:
    """The units of ``vendor``'s table, from the figure registry: its columns in bytes, and those per SIMD
    or per SM (``scratch, LDS and kernarg in bytes; waves per SIMD``); the others are counts."""
    figures = vendor_figures(vendor)
    in_bytes = [f.label for f in figures if f.unit.strip() == "B"]
    per: dict[str, list[str]] = {}  # "SIMD" -> ["waves"], from the unit " waves/SIMD"
    for f in figures:
        what, slash, of = f.unit.strip().partition("/")
        if slash:
            per.setdefault(of, []).append(what)
    parts = [f"{listing(in_bytes)} in bytes"] if in_bytes else []
    return "; ".join(parts + [f"{listing(whats)} per {of}" for of, whats in per.items()])


def messages_text(messages: list[str], width: int = _MESSAGE_WIDTH, line_width: int | None = None) -> Text:
    """The one line for what a key's body said: its first message (cut to ``width``, and so that the line
    fits ``line_width``), and how many more."""
    said = "said: "
    more = f" (+{len(messages) - 1} more)" if len(messages) > 1 else ""
    if line_width is not None:
        width = max(20, min(width, line_width - len(said) - len(more)))
    first = " ".join(messages[0].split())
    first = first if len(first) <= width else first[: width - 1] + "…"
    return Text(f"{said}{first}{more}", style="dim", no_wrap=True)


def said_once_text(survey: Survey) -> Text | None:
    """What kind bodies said once per process (a library's once-only log: the survey's, no one key's), a
    line each under a heading, whole (the end of a line names the file a launcher chose); None when they
    said nothing of the kind."""
    if not survey.said_once:
        return None
    lines = ["said once per process (by whichever key of the kind ran first in a worker):"]
    lines += [f"  {said.kind} on {said.target}: {said.text}" for said in survey.said_once]
    return Text("\n".join(lines), style="dim")


def summary_line(survey: Survey) -> str:
    """``12 keys on gfx950, sm90: 10 builds (4 ok, 6 failed), 2 keys skipped; VGPR spills in 1 build, SGPR
    spills in 0 builds, spill stores in 0 builds, spill instructions in loops in 1 build``: keys on each
    target, builds (a key's rows; a skipped key is no build), and the builds with each spill figure."""
    keys = {(r.key, r.target) for r in survey.rows}
    skipped = {(r.key, r.target) for r in survey.rows if r.skipped}
    builds = [r for r in survey.rows if not r.skipped]
    flaky = sum(r.is_flaky for r in builds)
    # Builds per spill figure (those that are not another's companion: scratch restates VGPR spills), and
    # the builds that spill inside loops, where either vendor's are.
    spills = ", ".join(
        f"{fig.noun} in {count(sum(1 for r in builds if r.resources.get(fig.name)), 'build')}"
        for fig in (figure(name) for name in (*SPILL_FIGURES, LOOP_SPILL_OPS)) if fig.companion_of is None)
    # Every build is linted (docs/commands.md, "The kernarg lint"): say so when one could not be.
    unlinted = sum(1 for r in builds if r.ok and r.lint is None)
    return (f"{count(len(keys), 'key')} on {', '.join(survey.targets)}: {count(len(builds), 'build')} "
            f"({sum(r.ok for r in builds)} ok, {sum(r.failed for r in builds)} failed"
            + (f", {flaky} flaky" if flaky else "") + ")"
            + (f", {count(len(skipped), 'key')} skipped" if skipped else "") + "; "
            + spills + (f"; {count(unlinted, 'build')} not linted" if unlinted else ""))


def timing_line(survey: Survey) -> str | None:
    """Where the survey's time went, when it says (``made ... on 2 workers in 48.0 s: ...``)."""
    t = survey.timing
    if not t or "wall_s" not in t:
        return None
    compiled = sum(1 for r in survey.rows if r.ok and not r.reused)
    reused = sum(1 for r in survey.rows if r.ok and r.reused)
    failed = sum(1 for r in survey.rows if not r.ok and not r.skipped)
    own = [(name, t.get(f"{name}_s", 0.0)) for name in ("analyze", "store", "pressure", "lint", "capture", "hash")]
    parts = ", ".join(f"{name.replace('_', ' and ')} {seconds:.1f}" for name, seconds in own if seconds >= 0.05)
    return (f"made {survey.created or 'earlier'} on {count(int(t.get('jobs', 1)), 'worker')} in {t['wall_s']:.1f} s: "
            f"{count(compiled, 'launch')} compiled in {t.get('compile_s', 0.0):.1f} s of compile time, "
            f"{reused} reused, {failed} failed"
            + (f", {count(int(t['keys_unchanged']), 'key')} not run (nothing they read changed)"
               if t.get("keys_unchanged") else "")
            + f"; regsurvey's own work {sum(s for _, s in own):.1f} s"
            + (f" ({parts})" if parts else ""))


def print_survey(survey: Survey, console: Console, whole: Survey | None = None) -> None:
    """Print the tables, laid out for the console's width, and a summary line; ``whole``: the survey the
    summary and timing lines count, where ``survey`` shows only some of its rows (``run --only``)."""
    for k, grid in enumerate(survey_grids(survey, console.width)):
        if k:
            console.print()
        for line in grid.lines(console.width):
            console.print(line)
    lines: list[Text] = []
    once = said_once_text(survey)
    if once is not None:
        heading, *said = once.split()
        lines += [heading, *(part for line in said for part in hanging(line, console.width, 4))]
    lines += hanging(Text(summary_line(whole or survey)), console.width)
    timing = timing_line(whole or survey)
    if timing:
        lines += hanging(Text(timing, style="dim"), console.width)
    for line in lines:
        console.print(line)


def print_lines(console: Console, lines: list[str]) -> None:
    """Lines of prose under the tables (``run``'s builds to look at), each wrapped to the console's width,
    its lines after the first indented."""
    for line in lines:
        for part in hanging(Text(line), console.width):
            console.print(part)


def survey_text(report: SurveyReport, *, color: bool = False, width: int = 120) -> str:
    """``run``'s report: the tables of the builds shown and the summary lines (:func:`print_survey`), then
    the builds to look at, for a terminal of ``width`` columns (colour only when asked, in the terminal's
    own colours)."""
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=True if color else None)
    survey = report.survey
    shown = report.shown
    print_survey(shown, console, whole=survey)
    said = problem_lines(survey)
    if report.only:
        builds = sum(not r.skipped for r in survey.rows)
        said.append(f"--only {report.only}: {len(shown.rows)} of {count(builds, 'build')} shown")
    elif any(is_problem(r) for r in survey.rows):
        said.append("(--only problems shows only these builds)")
    print_lines(console, said)
    # The knobs that did nothing, of the whole survey (a --only narrowing would compare fewer builds).
    knobs = knob_lines(knob_notes(knobs_without_effect(survey.rows)))
    if knobs:
        console.print(Text(knobs[0]))
        for line in knobs[1:]:
            for part in hanging(Text(line), console.width, 4):
                console.print(part)
    return out.getvalue()
