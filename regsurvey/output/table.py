"""The terminal table of a survey (rich): one table per vendor, since their figures differ."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model.figures import AMD, NVIDIA, SPILL, SPILL_FIGURES, Figure, figure, vendor_figures
from ..model.names import build_names
from ..model.results import Row, Survey
from ..model.targets import get_target
from ..model.words import count, listing

_MESSAGE_WIDTH = 120  # the line for what a key's body said: its first message, cut (a terminal's width at most)


def _cell(row: Row, fig: Figure) -> Text:
    value = row.resources.get(fig.name)
    if value is None:
        return Text("")
    style = "bold red" if fig.kind == SPILL and value else ""
    return Text(str(value), style=style)


def survey_tables(survey: Survey) -> list[Table]:
    """One rich Table per vendor present in the survey (what its kind bodies said: :func:`vendor_tables`)."""
    return [table for table, _ in vendor_tables(survey)]


def vendor_tables(survey: Survey, width: int | None = None) -> list[tuple[Table, list[Text]]]:
    """One rich Table per vendor present in the survey, and the lines to print under it: what each key's
    body said (its rows' ``messages``), a line per key, cut to ``width`` (a terminal's) where given. A
    message is as wide as it is (70 to 100 characters from a serving engine's launcher): in a cell it would
    widen its column for every row, so the table only counts a key's messages (a narrow ``said`` column, on
    the key's last row) and the lines under it say them."""
    names = build_names(survey.rows)
    out = []
    for vendor in (AMD, NVIDIA):
        figures = vendor_figures(vendor)
        rows = [r for r in survey.rows if (get_target(r.target).is_amd) == (vendor == AMD)]
        if not rows:
            continue
        table = Table(title=f"{vendor} — {survey.label}", title_justify="left", header_style="bold")
        # A build as every report names it (its kernel, and the launch's name or index); Text, not markup:
        # the name holds brackets.
        kernels = [Text(names[(r.target, r.row_id)].text or "-") for r in rows]
        said = any(r.messages for r in rows)
        # Never squeezed: a row's error or skip reason (in the first figure column, which wraps it) takes
        # what width is left.
        table.add_column("key", no_wrap=True, min_width=max(len(r.key) for r in rows))
        table.add_column("target", no_wrap=True, min_width=max(len(r.target) for r in rows))
        table.add_column("kernel", no_wrap=True, min_width=max(len(k) for k in kernels))
        for j, fig in enumerate(figures):
            table.add_column(fig.label, justify="right", no_wrap=j > 0, overflow="fold")
        if said:
            table.add_column("said", justify="right", no_wrap=True)
        table.caption = units_caption(vendor)
        table.caption_justify = "left"
        lines = []
        for i, (r, kernel) in enumerate(zip(rows, kernels)):
            last_of_key = i + 1 == len(rows) or (rows[i + 1].key, rows[i + 1].target) != (r.key, r.target)
            count = str(len(r.messages)) if r.messages and last_of_key else ""
            told = [Text(count, style="dim")] if said else []
            if r.ok:
                table.add_row(Text(r.key), r.target, kernel, *[_cell(r, fig) for fig in figures], *told)
            else:
                status = (Text(f"skipped: {r.skip_reason or ''}", style="dim", justify="left") if r.skipped
                          else Text(f"flaky: {r.error_line or 'flaky'}", style="yellow", justify="left") if r.is_flaky
                          else Text(f"error: {r.error_line or 'error'}", style="red", justify="left"))
                table.add_row(Text(r.key), r.target, kernel, status, *[""] * (len(figures) - 1), *told)
            if r.messages and last_of_key:
                lines.append(messages_text(r.messages, subject=f"{r.key} on {r.target}", line_width=width))
        out.append((table, lines))
    return out


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


def messages_text(messages: list[str], width: int = _MESSAGE_WIDTH, subject: str = "",
                  line_width: int | None = None) -> Text:
    """The one line for what a key's body said: the key (``subject``), its first message (cut to ``width``,
    and so that the line fits ``line_width``), and how many more."""
    said = f"{subject + ' ' if subject else ''}said: "
    more = f" (+{len(messages) - 1} more)" if len(messages) > 1 else ""
    if line_width is not None:
        width = max(20, min(width, line_width - len(said) - len(more)))
    first = messages[0] if len(messages[0]) <= width else messages[0][: width - 1] + "…"
    return Text(f"{said}{first}{more}", style="dim", justify="left")


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
    spills in 0 builds, spill stores in 0 builds``: keys on each target, builds (a key's rows; a skipped key
    is no build), and the builds with each spill figure."""
    keys = {(r.key, r.target) for r in survey.rows}
    skipped = {(r.key, r.target) for r in survey.rows if r.skipped}
    builds = [r for r in survey.rows if not r.skipped]
    flaky = sum(r.is_flaky for r in builds)
    # Builds per spill figure (those that are not another's companion: scratch restates VGPR spills).
    spills = ", ".join(
        f"{fig.noun} in {count(sum(1 for r in builds if r.resources.get(fig.name)), 'build')}"
        for fig in (figure(name) for name in SPILL_FIGURES) if fig.companion_of is None)
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
            f"{reused} reused, {failed} failed; regsurvey's own work {sum(s for _, s in own):.1f} s"
            + (f" ({parts})" if parts else ""))


def print_survey(survey: Survey, console: Console, whole: Survey | None = None) -> None:
    """Print the tables and a summary line (wide when piped, so no column is cut); ``whole``: the survey
    the summary and timing lines count, where ``survey`` shows only some of its rows (``run --only``)."""
    if not console.is_terminal:
        console = Console(width=220, file=console.file)
    for table, lines in vendor_tables(survey, console.width):
        console.print(table)
        for line in lines:
            console.print(line)
    once = said_once_text(survey)
    if once is not None:
        console.print(once)
    console.print(summary_line(whole or survey))
    timing = timing_line(whole or survey)
    if timing:
        console.print(timing, style="dim")
