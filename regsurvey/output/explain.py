"""``regsurvey explain``'s report: a build's register pressure as a profiler's annotate view, with the
lines that hold the most registers first, as text, Markdown or JSON (the HTML is the report page's)."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from typing import Any, Protocol

from ..model.names import BuildName
from ..model.pressure import LineStats, LoopSite, Pressure, Site, attribution
from ..model.results import Row
from ..model.words import count
from .markdown import escape as md_escape


class SourcePaths(Protocol):
    """How a report names a source file the object names, and reads its lines (None: not found):
    :class:`regsurvey.repo.sources.SourcePaths` for the surveyed revision."""

    def name(self, path: str) -> str: ...

    def where(self, frame: tuple[str, int] | None) -> str: ...

    def source_line(self, frame: tuple[str, int]) -> str: ...

    def read(self, path: str) -> list[str] | None: ...


_CLASS_LABEL = {"vgpr": "VGPR", "agpr": "AGPR", "sgpr": "SGPR", "gpr": "regs", "ugpr": "uniform"}


@dataclass(frozen=True)
class Explained:
    """One build, its name (as every report names it: :func:`regsurvey.model.names.build_names`) and its
    pressure."""

    row: Row
    pressure: Pressure
    name: BuildName


@dataclass(frozen=True)
class Explanation:
    """What ``regsurvey explain`` shows: the builds explained, those selected that did not build, where
    their source is read, and how many of the lines holding the most registers to list."""

    items: tuple[Explained, ...]
    failed: tuple[Row, ...]
    paths: SourcePaths
    top: int = 12


def failure_text(row: Row) -> str:
    """Why a selected build is not explained: the one line ``run`` shows for its error (a compile error's
    cause, not its location), else its status (``skipped: why``, or an object the store lacks)."""
    if row.skipped:
        return "skipped" + (f": {row.skip_reason}" if row.skip_reason else "")
    if row.ok:
        return "its object is not in the store"
    return ("flaky: " if row.is_flaky else "") + (row.error_line or row.status.value)


def _failed_lines(failed: list[Row]) -> list[str]:
    """``key launch N on target (kernel): error`` for each build that did not build."""
    return [f"{r.key}{f' launch {r.launch}' if r.launch else ''} on {r.target}"
            f"{f' ({r.kernel})' if r.kernel else ''}: {failure_text(r)}" for r in failed]


def class_label(name: str) -> str:
    return _CLASS_LABEL.get(name, name)


def site_text(site: Site, paths: SourcePaths) -> str:
    """``kern.py:7 (inlined at kern.py:15)``: the frame it is attributed to, and its call sites."""
    own, callers = attribution(site.frames)
    text = paths.where(own)
    if callers:
        text += " (inlined at " + ", ".join(paths.where(f) for f in callers) + ")"
    return text


def spill_summary(pressure: Pressure) -> str:
    """``52 spill stores, 58 reloads (168 dwords to scratch, 1 dword to AGPRs)``, or ``no spills``."""
    stores = [s for s in pressure.spills if s.kind == "store"]
    reloads = [s for s in pressure.spills if s.kind == "reload"]
    if not stores and not reloads:
        return "no spills"
    unit = "byte" if any(s.medium == "local" for s in pressure.spills) else "dword"
    media: dict[str, int] = {}
    for s in stores:
        media[s.medium] = media.get(s.medium, 0) + s.size
    where = {"scratch": "to scratch", "agpr": "to AGPRs", "vgpr-lane": "to VGPR lanes (SGPRs)", "local": "to local"}
    parts = ", ".join(f"{count(n, unit)} {where.get(m, m)}" for m, n in media.items())
    return f"{count(len(stores), 'spill store')}, {count(len(reloads), 'reload')}" + (f" ({parts})" if parts else "")


def loop_spill_summary(pressure: Pressure, paths: SourcePaths) -> str | None:
    """``120 of 332 spill instructions are in loops: 100 in the loop at kern.py:119 (depth 2), 20 in the loop
    at kern.py:117``; ``none of the 4 spill instructions is in a loop``; None for a kernel that does not spill.
    Each loop counts its own (not those of the loops nested in it), the deepest first."""
    if not pressure.spills:
        return None
    looped = [s for s in pressure.spills if s.loop is not None]
    if not looped:
        return f"none of the {count(len(pressure.spills), 'spill instruction')} is in a loop"
    loops = sorted((i for i, loop in enumerate(pressure.loops) if loop.stores or loop.reloads),
                   key=lambda i: (-pressure.loops[i].depth, -(pressure.loops[i].stores + pressure.loops[i].reloads)))
    parts = [f"{loop.stores + loop.reloads} in {loop_name(loop, paths)}"
             for loop in (pressure.loops[i] for i in loops)]
    verb = "is" if len(looped) == 1 else "are"
    return f"{len(looped)} of {count(len(pressure.spills), 'spill instruction')} {verb} in loops: {', '.join(parts)}"


def loop_name(loop: LoopSite, paths: SourcePaths) -> str:
    """``the loop at kern.py:119 (depth 2)`` (an outermost loop's depth is not said)."""
    at = f" at {paths.where(loop.line)}" if loop.line is not None else ""
    return f"the loop{at}" + (f" (depth {loop.depth})" if loop.depth > 1 else "")


def _peak_sentences(pressure: Pressure, row: Row, paths: SourcePaths) -> list[str]:
    """Per class its peak; where the kernel spills, the demand before spilling beside it, and what the
    peak is (registers after allocation and spilling: it can sit below the allocation beside many spills)."""
    out = []
    for c in pressure.classes:
        site = pressure.peaks.get(c)
        if site is None or site.live.get(c, 0) == 0:
            continue
        limit = _allocated(row, c)
        of = f" of {limit} allocated" if limit is not None else ""
        out.append(f"{class_label(c)} peak {site.live[c]}{of} at {site_text(site, paths)}: `{site.text}`")
        wanted = pressure.demand.get(c)
        if wanted is not None:
            out.append(f"{class_label(c)} demand before spilling: {wanted.live[c]} at {site_text(wanted, paths)}: "
                       f"`{wanted.text}` (the values live at once, those waiting in spill slots too; the peak "
                       "counts registers after allocation and spilling)")
        elif c == pressure.classes[0] and pressure.spills and not pressure.demand:
            # NVIDIA only: SASS that calls, returns or branches indirectly has no CFG for its local slots.
            out.append(f"{class_label(c)} demand before spilling: not known (the code calls, returns or branches "
                       "indirectly: its spill slots' lives cannot be followed)")
    return out


def _allocated(row: Row, name: str) -> int | None:
    """What the compiler allocated of class ``name``, from the row's resources."""
    key = {"vgpr": "vgpr", "agpr": "agpr", "sgpr": "sgpr", "gpr": "regs"}.get(name)
    value = row.resources.get(key) if key and row.resources else None
    return int(value) if isinstance(value, int) else None


def _title(item: Explained) -> str:
    row, p = item.row, item.pressure
    return f"{row.key} on {row.target}: kernel {item.name.text or p.kernel}, {count(p.instructions, 'instruction')}"


# -- text ---------------------------------------------------------------------------------------------

def format_text(items: list[Explained], paths: SourcePaths, top: int = 12, failed: list[Row] | None = None,
                width: int | None = None) -> str:
    """Per build: its peaks and spills, the lines holding the most registers, the annotated source; then
    the selected builds that did not build, with their error. For a terminal of ``width`` columns, where
    given: sentences wrap, and the tables' lines are cut at the width (their source text last)."""
    out: list[str] = []

    def say(*lines: str) -> None:
        out.extend(part for line in lines for part in _wrapped(line, width))

    def table(lines: list[str]) -> None:
        out.extend(_cut(line, width) for line in lines)

    for item in items:
        p = item.pressure
        say(_title(item) + f" ({p.method})")
        say(*(f"  {s}" for s in _peak_sentences(p, item.row, paths)))
        say(f"  {spill_summary(p)}")
        if (looped := loop_spill_summary(p, paths)) is not None:
            say(f"  {looped}")
        lines = p.top_lines(top)
        if lines:
            out.append("")
            say("  the lines holding the most registers:")
            table(_line_table(p, lines, paths))
        out.append("")
        table(_annotated(p, paths))
        out.append("")
    if failed:
        say(f"did not build ({len(failed)}):")
        say(*(f"  {line}" for line in _failed_lines(failed)))
    return "\n".join(out).rstrip() + "\n"


def _wrapped(line: str, width: int | None) -> list[str]:
    """A sentence in lines of ``width`` at most, the lines after its first indented two more."""
    if width is None or len(line) <= width:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")))
    return textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_on_hyphens=False) or [line[:width]]


def _cut(line: str, width: int | None) -> str:
    """A table's line cut at ``width`` (its last column, the source text, is what goes)."""
    return line if width is None or len(line) <= width else line[: width - 1] + "…"


def _counts(p: Pressure, stats: LineStats | None) -> list[str]:
    """A line's cells: its loop depth (blank outside loops), its live registers per class, its spill stores
    and reloads (blank where none)."""
    if stats is None:
        return ["", *("" for _ in p.classes), "", ""]
    cells = [str(stats.depth) if stats.depth else "", *(str(stats.live.get(c, "")) for c in p.classes)]
    stores = stats.spill_stores + stats.inlined_stores
    reloads = stats.spill_reloads + stats.inlined_reloads
    cells += [str(stores) if stores else "", str(reloads) if reloads else ""]
    return cells


def _line_table(p: Pressure, lines: list[LineStats], paths: SourcePaths) -> list[str]:
    headers = ["line", "loop", *[class_label(c) for c in p.classes], "st", "ld", "source"]
    rows = []
    for stats in lines:
        label = paths.where(stats.frame) + (" *" if stats.inlined_instructions else "")
        rows.append([label, *_counts(p, stats), paths.source_line(stats.frame)])
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers) - 1)]
    text = []
    for r in [headers, *rows]:
        cells = [r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:-1], widths[1:]))]
        text.append("    " + "  ".join(cells) + "  " + r[-1])
    if any(s.inlined_instructions for s in lines):
        text.append("    * a call site: its figures include the helpers inlined there")
    return text


def _annotated(p: Pressure, paths: SourcePaths) -> list[str]:
    """Each user source file the kernel came from, from its first to its last line with code, every
    line with its figures (blank where it made no instruction)."""
    by_file = p.by_file()
    out: list[str] = []
    headers = ["loop", *[class_label(c) for c in p.classes], "st", "ld"]
    for path, lines in by_file.items():
        source = paths.read(path)
        first, last = min(lines), max(lines)
        width = len(str(last))
        cells = [[*_counts(p, lines.get(n))] for n in range(first, last + 1)]
        widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
        out.append(f"  {paths.name(path)}" + ("" if source is not None else " (source not found)"))
        out.append("    " + " " * width + "  " + "  ".join(h.rjust(w) for h, w in zip(headers, widths)))
        for n, row in zip(range(first, last + 1), cells):
            text = source[n - 1].rstrip() if source is not None and 0 < n <= len(source) else ""
            out.append(f"    {str(n).rjust(width)}  " + "  ".join(c.rjust(w) for c, w in zip(row, widths))
                       + f"  {text}")
        out.append("")
    return out


# -- Markdown -------------------------------------------------------------------------------------------

def format_markdown(items: list[Explained], paths: SourcePaths, top: int = 12,
                    failed: list[Row] | None = None) -> str:
    """The text report's first part per build (peaks, spills, the hottest lines' table), and the builds
    that did not build."""
    out: list[str] = []
    for item in items:
        p = item.pressure
        out.append(f"#### `{item.row.key}` on {item.row.target}: `{item.name.text or p.kernel}`")
        out.append("")
        out.extend(f"- {s}" for s in _peak_sentences(p, item.row, paths))
        out.append(f"- {spill_summary(p)}")
        if (looped := loop_spill_summary(p, paths)) is not None:
            out.append(f"- {looped}")
        out.append("")
        lines = p.top_lines(top)
        if lines:
            heads = ["line", "loop", *[class_label(c) for c in p.classes], "spill stores", "reloads", "source"]
            out.append("| " + " | ".join(heads) + " |")
            out.append("|" + "|".join(["---", *["---:"] * (len(heads) - 2), "---"]) + "|")
            for stats in lines:
                source = paths.source_line(stats.frame).replace("|", "\\|")
                label = f"`{paths.where(stats.frame)}`" + (" (call site)" if stats.inlined_instructions else "")
                cells = [label, *_counts(p, stats), f"`{source}`" if source else ""]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    if failed:
        out.append(f"Did not build ({len(failed)}):")
        out.append("")
        out.extend(f"- {md_escape(line)}" for line in _failed_lines(failed))  # compiler text: escaped
    return "\n".join(out).rstrip() + "\n"



# -- JSON -------------------------------------------------------------------------------------------------

def explained_dict(item: Explained) -> dict[str, Any]:
    row = item.row
    return {"key": row.key, "target": row.target, "kernel": row.kernel, "launch": row.launch,
            "label": item.name.text, "object": row.object.sha256 if row.object else None,
            "resources": row.resources.to_json(), "pressure": item.pressure.to_dict()}


def format_json(items: list[Explained], failed: list[Row] | None = None) -> str:
    """``{"builds": [...], "failed": [...]}``: each explained build, and each selected build that did not
    build with its one-line error."""
    return json.dumps({"builds": [explained_dict(i) for i in items],
                       "failed": [{"key": r.key, "target": r.target, "kernel": r.kernel, "launch": r.launch,
                                   "status": r.status.value, "error": failure_text(r)} for r in failed or ()]},
                      indent=1)


# -- HTML ---------------------------------------------------------------------------------------------------

_STYLE = """body{font:14px system-ui,sans-serif;margin:2em;color:#222}h2{font-size:1.1em;margin-top:2em}
table{border-collapse:collapse;font:12px ui-monospace,monospace}td,th{padding:1px 8px;text-align:right}
td.src,th:last-child{text-align:left}td.src{white-space:pre}th{border-bottom:1px solid #999}
tr.hot td{background:#fde2e1}tr.spill td.sp{color:#b00;font-weight:bold}
svg{background:#f6f6f6;margin:.5em 0}.note{color:#666}"""


def format_html(items: list[Explained], paths: SourcePaths, top: int = 12, failed: list[Row] | None = None) -> str:
    """One self-contained page: per build, the pressure along the code (a line per class), the peaks and
    spills, the lines holding the most registers, and the annotated source."""
    from html import escape

    parts = [f"<!doctype html><meta charset=utf-8><title>regsurvey explain</title><style>{_STYLE}</style>"]
    for item in items:
        p = item.pressure
        parts.append(f"<h2>{escape(_title(item))}</h2><p class=note>{escape(p.method)}</p><ul>")
        parts.extend(f"<li>{escape(s)}</li>" for s in _peak_sentences(p, item.row, paths))
        parts.append(f"<li>{escape(spill_summary(p))}</li>")
        if (looped := loop_spill_summary(p, paths)) is not None:
            parts.append(f"<li>{escape(looped)}</li>")
        parts.append("</ul>")
        parts.append(_series_svg(p))
        hot = {id(s) for s in p.top_lines(top)}
        by_file = p.by_file()
        heads = "".join(f"<th>{escape(h)}</th>" for h in ["line", "loop", *[class_label(c) for c in p.classes],
                                                          "spill st", "ld", "source"])
        for path, lines in by_file.items():
            source = paths.read(path)
            parts.append(f"<h3>{escape(paths.name(path))}</h3><table><tr>{heads}</tr>")
            for n in range(min(lines), max(lines) + 1):
                line = lines.get(n)
                cells = _counts(p, line)
                text = source[n - 1] if source is not None and 0 < n <= len(source) else ""
                classes = " ".join(c for c, on in (("hot", line is not None and id(line) in hot),
                                                   ("spill", bool(cells[-1] or cells[-2]))) if on)
                row = "".join(f"<td>{escape(c)}</td>" for c in cells[:-2])
                row += "".join(f"<td class=sp>{escape(c)}</td>" for c in cells[-2:])
                parts.append(f"<tr class='{classes}'><td>{n}</td>{row}<td class=src>{escape(text)}</td></tr>")
            parts.append("</table>")
    if failed:
        parts.append(f"<h2>did not build ({len(failed)})</h2><ul>")
        parts.extend(f"<li>{escape(line)}</li>" for line in _failed_lines(failed))
        parts.append("</ul>")
    return "\n".join(parts) + "\n"


def _series_svg(p: Pressure, width: int = 900, height: int = 120) -> str:
    """The live count of each class along the code, as polylines (at most ``width`` points each)."""
    colors = ["#c0392b", "#2980b9", "#27ae60"]
    top = max([1, *(max(v, default=0) for v in p.series.values())])
    lines = []
    for color, c in zip(colors, p.classes):
        values = p.series.get(c, [])
        if not values:
            continue
        step = max(1, len(values) // width)
        points = [max(values[i:i + step]) for i in range(0, len(values), step)]
        xs = [i * width / max(1, len(points) - 1) for i in range(len(points))]
        coords = " ".join(f"{x:.1f},{height - v * (height - 10) / top:.1f}" for x, v in zip(xs, points))
        lines.append(f"<polyline fill=none stroke='{color}' stroke-width=1 points='{coords}'><title>{c}</title>"
                     "</polyline>")
    legend = ", ".join(f"{class_label(c)} ({color})" for color, c in zip(["red", "blue", "green"], p.classes))
    return (f"<svg width={width} height={height} role=img aria-label='live registers along the code'>"
            + "".join(lines) + f"</svg><div class=note>live registers along the code, peak {top}: {legend}</div>")
