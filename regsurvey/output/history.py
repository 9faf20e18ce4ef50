"""``regsurvey history``'s reports: a self-contained HTML page (a chart per kind and target, drawn here as
inline SVG: no script, no network), Markdown and JSON with the same series.

The page leads with its verdict and the commits that changed builds; a kind on a target that did not move
along the range is a line of its values, not charts of flat lines (they were 87% of a whole suite's page).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from html import escape

from ..model.figures import figure
from ..model.history import History, HistoryCommit, Point, Series
from ..model.words import ARROW, agree, count
from .markdown import code
from .markdown import escape as md_escape


def format_json(h: History) -> str:
    return json.dumps(h.to_dict(), indent=1)


def _value(p: Point) -> str:
    if p.max is None:
        return f"{p.failed} failed" if p.failed else "-"
    text = str(p.max) if p.min == p.max else f"{p.max} ({p.min}-{p.max})"
    return text + (f" ({p.failed} failed)" if p.failed else "")


def _grouped(h: History) -> dict[tuple[str, str], list[Series]]:
    out: dict[tuple[str, str], list[Series]] = {}
    for s in h.series:
        out.setdefault((s.kind, s.target), []).append(s)
    return out


def _tone(c: HistoryCommit) -> str:
    """``worse`` when its diff made any build worse or failing (mixed builds, worse in some figures, too),
    ``better`` when it only improved some, else empty."""
    counts = c.counts or {}
    if counts.get("worse") or counts.get("newly failing") or counts.get("mixed"):
        return "worse"
    return "better" if counts.get("better") or counts.get("fixed") else ""


def _point_tone(p: Point) -> str:
    """How a point's builds moved from the point before: ``worse`` where any got worse in its figure
    (by the figure registry's verdict), ``better`` where some only got better, else empty. Per build: the
    largest and smallest value may stay while builds between them move."""
    return "worse" if p.worse else "better" if p.better else ""


def _moves_text(p: Point) -> str:
    """``2 builds worse``, ``3 builds moved: 2 worse, 1 better``: the builds the figure moved since the
    point before (empty when none did)."""
    if not p.moved:
        return ""
    parts = [(n, word) for n, word in ((p.worse, "worse"), (p.better, "better"),
                                        (p.moved - p.worse - p.better, "changed")) if n]
    builds = count(p.moved, "build")
    if len(parts) == 1:
        return f"{builds} {parts[0][1]}"
    return f"{builds} moved: " + ", ".join(f"{n} {word}" for n, word in parts)


def _span_text(h: History, i: int, sha: Callable[[str], str]) -> str:
    """Where the change the ``i``-th point shows lies: the commit itself, or under --every ``between A and
    B (N commits)``, A the point before (excluded) and B this one, each sha drawn by ``sha``."""
    c = h.commits[i]
    if c.span <= 1:
        return sha(c.sha[:10])
    return f"between {sha(h.commits[i - 1].sha[:10])} and {sha(c.sha[:10])} ({c.span} commits)"


def _moved(c: HistoryCommit) -> bool:
    """Whether its diff changed anything (a build's figures, status or presence)."""
    return c.counts is not None and any(n for mark, n in c.counts.items() if mark != "unchanged")


def _step_title(c: HistoryCommit) -> str:
    counts = c.counts or {}
    marks = ", ".join(f"{n} {mark}" for mark, n in counts.items() if mark != "unchanged" and n)
    return marks or ("every build unchanged" if c.counts is not None else "the base")


# -- Markdown -----------------------------------------------------------------------------------------------

def format_markdown(h: History) -> str:
    """The kinds that changed, a table each (every requested figure a column, a row where a value or a
    build moved), the unchanged ones named, then each commit's diff summarized."""
    out = [f"### Registers over {code(h.spec)}", ""]  # a code span: no backslash escapes inside
    out.append(f"{len(h.commits)} commits" + (f" (one in {h.every})" if h.every > 1 else "")
               + ", each against the one before it; a figure is the largest over the kind's builds, with the "
               "smallest in brackets where they differ, and how many builds moved where any did."
               + (" A change lies somewhere in the commits after the point before, up to the one it is shown at."
                  if h.every > 1 else ""))
    out.append("")
    for (kind, target), series in _grouped(h).items():
        if not any(s.changed for s in series):
            continue
        out.append(f"#### {kind} on {target}")
        out.append("")
        heads = ["commit", "subject", *[figure(s.figure).label for s in series]]
        out.append("| " + " | ".join(heads) + " |")
        out.append("|" + "|".join(["---", "---", *["---:"] * len(series)]) + "|")
        # The commits where a value or a build moved (and the ends): an unchanged stretch is one line.
        previous: list[str] | None = None
        quiet = 0
        for i, c in enumerate(h.commits):
            values = [_value(s.points[i]) for s in series]
            moves = [_moves_text(s.points[i]) for s in series]
            if values == previous and not any(moves) and i != len(h.commits) - 1:
                quiet += 1
                continue
            if quiet:
                out.append(f"| | *{count(quiet, 'commit')} unchanged* |" + " |" * len(series))
                quiet = 0
            cells = [v + (f"; {m}" if m else "") for v, m in zip(values, moves)]
            out.append("| " + " | ".join([_span_text(h, i, code), md_escape(c.subject), *cells]) + " |")
            previous = values
        out.append("")
    still = [f"{k} on {t}" for (k, t), series in _grouped(h).items() if not any(s.changed for s in series)]
    if still:
        out.append("Unchanged along the range: " + ", ".join(still) + ".")
        out.append("")
    out.append("#### Commit by commit")
    out.append("")
    run: list[int] = []
    for i in [*range(1, len(h.commits)), None]:
        step = h.commits[i] if i is not None else None
        if i is not None and step is not None and not _moved(step):
            run.append(i)
            continue
        if len(run) == 1:
            quiet_step = h.commits[run[0]]
            out.append(f"- {_span_text(h, run[0], code)} {md_escape(quiet_step.subject)}: {_step_title(quiet_step)}")
        elif run:
            commits = sum(max(1, h.commits[j].span) for j in run)
            first = (f"between {code(h.commits[run[0] - 1].sha[:10])} and" if h.commits[run[0]].span > 1
                     else f"{code(h.commits[run[0]].sha[:10])} to")
            out.append(f"- {first} {code(h.commits[run[-1]].sha[:10])}: {commits} commits, every build unchanged")
        run = []
        if i is not None and step is not None:
            out.append(f"- {_span_text(h, i, code)} {md_escape(step.subject)}: {_step_title(step)}")
            out.extend("  - " + f" {ARROW} ".join(md_escape(part) for part in segments)
                       for segments in step.summary[:6])
    return "\n".join(out).rstrip() + "\n"


# -- HTML -----------------------------------------------------------------------------------------------------

_STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#101828}
header{padding:16px 24px;border-bottom:1px solid #e4e7ec}h1{font-size:20px;margin:0}
main{padding:8px 24px 40px}h2{font-size:16px;margin:24px 0 4px}.muted{color:#667085}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #e4e7ec;border-radius:6px;padding:6px 8px}
.chart h3{font-size:13px;margin:0 0 2px;font-weight:600}svg{display:block}
svg .band{fill:#d1e0ff}svg .line{fill:none;stroke:#175cd3;stroke-width:1.5}svg .min{fill:none;stroke:#84adff;
stroke-width:1;stroke-dasharray:3 2}svg circle{fill:#175cd3}svg circle.worse{fill:#b42318}
svg circle.better{fill:#067647}svg a:hover circle{stroke:#101828;stroke-width:2}svg .tick{stroke:#d0d5dd}
tr.quiet td{color:#98a2b3;padding-top:1px;padding-bottom:1px}
svg .fail{stroke:#b42318;stroke-width:2}svg .axis{stroke:#98a2b3;stroke-width:1}svg text{font-size:10px;fill:#667085}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid #e4e7ec;
vertical-align:top;text-align:left}tr:target td{background:#fef0c7}.mono{font-family:ui-monospace,monospace}
.worse{color:#b42318}.better{color:#067647}ul{margin:2px 0;padding-left:18px}
.verdict{font-size:16px;font-weight:600;margin:6px 0 2px}ul.summary{margin:6px 0 0}ul.summary a{color:inherit}
details.still{margin-top:16px}details.still summary{cursor:pointer}"""

_W, _H, _PAD = 420, 124, 30
_SUMMARY_LINES = 10  # commits named at the top of the page; the table below has every one


def _chart(s: Series, h: History) -> str:
    """One figure's chart: the largest value over the kind's builds (line), the spread to the smallest
    (band), each commit a point linking to its diff; a red cross where builds failed."""
    f = figure(s.figure)
    values = [v for p in s.points for v in (p.max, p.min) if v is not None]
    top, bottom = max(values, default=1), min(values, default=0)
    if top == bottom:
        top, bottom = top + 1, max(0, bottom - 1)
    n = len(s.points)

    def x(i: int) -> float:
        return _PAD + (i * (_W - _PAD - 8) / (n - 1) if n > 1 else (_W - _PAD) / 2)

    def y(v: float) -> float:
        return 8 + (top - v) * (_H - 26) / (top - bottom)

    parts = [f"<svg width={_W} height={_H} role=img aria-label='{escape(f.noun)} of {escape(s.kind)} on "
             f"{escape(s.target)} over {n} commits'>",
             f"<line class=axis x1={_PAD} y1={_H - 18} x2={_W - 4} y2={_H - 18} />",
             f"<text x=2 y={y(top) + 4:.1f}>{top}</text><text x=2 y={y(bottom) + 4:.1f}>{bottom}</text>"]
    # The commits that changed a build: a guide line and their number under the axis (and the ends').
    for i, c in enumerate(h.commits):
        if _moved(c) or i in (0, n - 1):
            if _moved(c):
                parts.append(f"<line class=tick x1={x(i):.1f} y1=6 x2={x(i):.1f} y2={_H - 18} />")
            parts.append(f"<text x={min(x(i) - 3, _W - 6 * len(str(i))):.1f} y={_H - 5}>{i}</text>")
    built = [(i, p) for i, p in enumerate(s.points) if p.max is not None]
    if built:
        upper = [(x(i), y(p.max)) for i, p in built if p.max is not None]
        lower = [(x(i), y(p.min)) for i, p in reversed(built) if p.min is not None]
        parts.append("<polygon class=band points='" + " ".join(f"{a:.1f},{b:.1f}" for a, b in upper + lower)
                     + "' />")
        parts.append("<polyline class=min points='" + " ".join(f"{a:.1f},{b:.1f}" for a, b in reversed(lower))
                     + "' />")
        parts.append("<polyline class=line points='" + " ".join(f"{a:.1f},{b:.1f}" for a, b in upper) + "' />")
    for i, p in enumerate(s.points):
        c = h.commits[i]
        moves = _moves_text(p)
        tip = f"{_span_text(h, i, str)} {c.subject}: {f.label} {_value(p)}" + (f"; {moves}" if moves else "")
        if p.failed:
            cx, cy = x(i), _H - 12
            parts.append(f"<a href='#c-{c.sha}'><path class=fail d='M{cx - 4:.1f},{cy - 4:.1f}l8,8m0,-8l-8,8'>"
                         f"<title>{escape(tip)}</title></path></a>")
        if p.max is not None:
            tone = _point_tone(p)
            tone = f" class={tone}" if tone else ""
            parts.append(f"<a href='#c-{c.sha}'><circle{tone} cx={x(i):.1f} cy={y(p.max):.1f} r={4 if tone else 3}>"
                         f"<title>{escape(tip)}</title></circle></a>")
    parts.append("</svg>")
    last = s.points[-1]
    return (f"<div class=chart><h3>{escape(f.noun)}{escape(f.unit)} <span class=muted>now {escape(_value(last))}"
            f"</span></h3>{''.join(parts)}</div>")


def _verdict(h: History) -> tuple[str, str]:
    """The page's first line and its tone: how many commits changed builds (``worse`` where any made a
    build worse or failing), or that nothing changed."""
    steps = h.commits[1:]
    moved = [c for c in steps if _moved(c)]
    if not moved:
        return f"Nothing changed: every build the same at each of the {len(h.commits)} commits", ""
    tones = {_tone(c) for c in moved}
    tone = "worse" if "worse" in tones else "better" if "better" in tones else ""
    return f"{len(moved)} of {len(steps)} commits changed builds", tone


def _summary_html(h: History) -> str:
    """The commits that changed builds, a line each linking to its row of the table (the first
    :data:`_SUMMARY_LINES`)."""
    moved = [i for i, c in enumerate(h.commits) if i and _moved(c)]
    items = [f"<li><a href='#c-{h.commits[i].sha}'><span class=mono>{escape(_span_text(h, i, str))}</span> "
             f"{escape(h.commits[i].subject)}</a>: <span class='{_tone(h.commits[i])}'>"
             f"{escape(_step_title(h.commits[i]))}</span></li>" for i in moved[:_SUMMARY_LINES]]
    if len(moved) > _SUMMARY_LINES:
        items.append(f"<li class=muted>{len(moved) - _SUMMARY_LINES} more in the table below</li>")
    return f"<ul class=summary>{''.join(items)}</ul>" if items else ""


def _still_html(still: dict[tuple[str, str], list[Series]]) -> str:
    """The kinds on targets that did not move, folded: a line each with its figures' values, the same
    at every commit (charts of flat lines said no more, at 5 KB each)."""
    rows = "".join(f"<tr><td class=mono>{escape(kind)} on {escape(target)}</td><td>"
                   + " · ".join(f"{escape(figure(s.figure).noun)} {escape(_value(s.points[-1]))}"
                                f"{escape(figure(s.figure).unit)}" for s in series)
                   + "</td></tr>" for (kind, target), series in still.items())
    return (f"<details class=still><summary><h2 style='display:inline'>Unchanged along the range ({len(still)})"
            f"</h2></summary><table>{rows}</table></details>")


def format_html(h: History) -> str:
    """The page a kernel engineer opens first: the verdict and the commits that changed builds, what
    moved as charts, the kinds that did not named with their values, then each commit's diff."""
    groups = _grouped(h)
    moved = {k: v for k, v in groups.items() if any(s.changed for s in v)}
    still = {k: v for k, v in groups.items() if k not in moved}
    failing = sum(1 for c in h.commits if c.failed)
    verdict, tone = _verdict(h)
    out = ["<!doctype html><html lang=en><meta charset=utf-8>",
           f"<title>Registers over {escape(h.spec)}</title><style>{_STYLE}</style>",
           f"<header><h1>Registers over {escape(h.spec)}</h1>"
           f"<div id=verdict class='verdict {tone}'>{escape(verdict)}</div><div class=muted>{len(h.commits)} commits"
           + (f", one in {h.every}" if h.every > 1 else "")
           + f" · {len(moved)} of {len(groups)} kinds×targets moved"
           + (f" · {count(failing, 'commit')} with failing builds" if failing else "")
           + " · the line is the largest value over a kind's builds, the band the spread to the smallest;"
           " a point links to the commit's diff against the one before it, coloured where builds got worse or"
           " better" + ("; a change lies in the commits after the point before, up to the one it is shown at"
                        if h.every > 1 else "") + "</div>" + _summary_html(h) + "</header><main>"]
    if moved:
        out.append("<h2>What moved</h2>")
    for (kind, target), series in moved.items():
        out.append(f"<section class=kind data-kind='{escape(kind)}' data-target='{escape(target)}'>"
                   f"<h2 class=mono>{escape(kind)} on {escape(target)}</h2><div class=charts>")
        out.extend(_chart(s, h) for s in series)
        out.append("</div></section>")
    if still:
        out.append(_still_html(still))
    out.append("<h2>Commit by commit</h2><table><tr><th>#</th><th>commit</th><th>subject</th><th>against the one "
               "before</th></tr>")
    for i, c in enumerate(h.commits):
        step_moved = _moved(c)
        items = "".join(f"<li>{escape(line)}</li>" for line in c.sentences()) if step_moved else ""
        failed = f" · {c.failed} of {count(c.builds, 'build')} {agree(c.failed, 'fails', 'fail')}" if c.failed else ""
        out.append(f"<tr id='c-{c.sha}'" + ("" if step_moved or i == 0 else " class=quiet") + f"><td>{i}</td>"
                   f"<td class=mono>{escape(_span_text(h, i, str))}</td><td>{escape(c.subject)}</td>"
                   f"<td><span class='{_tone(c)}'>{escape(_step_title(c))}{failed}</span>"
                   + (f"<ul>{items}</ul>" if items else "")
                   + (f"<div class='muted mono'>regsurvey diff {h.commits[i - 1].sha[:10]} {c.sha[:10]}</div>"
                      if step_moved else "") + "</td></tr>")
    out.append("</table></main></html>")
    return "\n".join(out) + "\n"
