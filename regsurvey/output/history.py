"""``regsurvey history``'s reports: a self-contained HTML page (a chart per kind and target, drawn here as
inline SVG: no script, no network), Markdown and JSON with the same series.

The page leads with its verdict and the commits that changed builds; a kind on a target that did not move
along the range is a line of its values, not charts of flat lines (they were 87% of a whole suite's page).
A history across toolchains (``history --toolchains``: each point a toolchain surveying one revision) is
the same page, its points named by their Triton (``triton 3.8.0``), each step saying what differs in the
toolchain and the first compiler stage that differs, and each chart which toolchains moved its figure.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from html import escape

from ..model.figures import TIME, figure
from ..model.history import WORKING_TREE, History, HistoryCommit, Point, Series
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


def _anchor(h: History, i: int) -> str:
    """The id of the ``i``-th point's row in the page's table: its commit's sha, or its toolchain's index."""
    return f"t-{i}" if h.across_toolchains else f"c-{h.commits[i].sha}"


def _point_text(h: History, i: int, sha: Callable[[str], str]) -> str:
    """The ``i``-th point as a report names it: its toolchain (``triton 3.8.0``), or its commit
    (:func:`_span_text`)."""
    if h.across_toolchains:
        return h.commits[i].toolchain or ""
    return _span_text(h, i, sha)


def _point_moved(s: Series, i: int) -> bool:
    """Whether the series moved at its ``i``-th point from the one before: a value, the builds that built or
    failed, or a build within the spread (compile time: only builds moved notably, or came, went or failed)."""
    if i == 0:
        return False
    p, q = s.points[i], s.points[i - 1]
    if figure(s.figure).kind == TIME:
        return bool(p.moved) or p.built != q.built or p.failed != q.failed
    return bool(p.moved) or (p.max, p.min, p.built, p.failed) != (q.max, q.min, q.built, q.failed)


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
    if h.across_toolchains:
        sha = h.commits[0].sha[:10] if h.commits and h.commits[0].sha else ""
        out = [f"### Registers of {code(h.spec)} over {count(len(h.commits), 'toolchain')}", ""]
        out.append(f"{code(h.spec)}" + (f" ({code(sha)})" if sha else "") + " under each toolchain in turn ("
                   + ", ".join(md_escape(c.toolchain or "") for c in h.commits) + "), each judged against the one "
                   "before it across the toolchains; a figure is the largest over the kind's builds, with the smallest "
                   "in brackets where they differ, and how many builds moved where any did.")
    else:
        out = [f"### Registers over {code(h.spec)}", ""]  # a code span: no backslash escapes inside
        out.append(f"{len(h.commits)} commits" + (f" (one in {h.every})" if h.every > 1 else "")
                   + ", each against the one before it; a figure is the largest over the kind's builds, with the "
                   "smallest in brackets where they differ, and how many builds moved where any did."
                   + (" A change lies somewhere in the commits after the point before, up to the one it is shown at."
                      if h.every > 1 else ""))
    out.append("")

    def name(i: int) -> str:
        return md_escape(h.commits[i].toolchain or "") if h.across_toolchains else _span_text(h, i, code)

    for (kind, target), series in _grouped(h).items():
        if not any(s.changed for s in series):
            continue
        out.append(f"#### {kind} on {target}")
        out.append("")
        heads = [*(("toolchain", "environment") if h.across_toolchains else ("commit", "subject")),
                 *[figure(s.figure).label for s in series]]
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
                out.append(f"| | *{count(quiet, h.noun)} unchanged* |" + " |" * len(series))
                quiet = 0
            cells = [v + (f"; {m}" if m else "") for v, m in zip(values, moves)]
            out.append("| " + " | ".join([name(i), md_escape(c.subject), *cells]) + " |")
            previous = values
        out.append("")
    still = [f"{k} on {t}" for (k, t), series in _grouped(h).items() if not any(s.changed for s in series)]
    if still:
        out.append(f"Unchanged {_along(h)}: " + ", ".join(still) + ".")
        out.append("")
    if h.across_toolchains:
        return "\n".join([*out, *_toolchain_steps_markdown(h)]).rstrip() + "\n"
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


def _along(h: History) -> str:
    return "across the toolchains" if h.across_toolchains else "along the range"


def _toolchain_steps_markdown(h: History) -> list[str]:
    """Each toolchain against the one before it: its marks, what differs in the toolchain, the summary's
    sentences and a sentence per first differing compiler stage."""
    out = ["#### Toolchain by toolchain", ""]
    for i in range(1, len(h.commits)):
        step = h.commits[i]
        out.append(f"- {md_escape(h.commits[i - 1].toolchain or '')} {ARROW} {md_escape(step.toolchain or '')}: "
                   f"{_step_title(step)}")
        out.extend(f"  - toolchain differs: {md_escape(line)}" for line in step.toolchain_sentences())
        out.extend("  - " + f" {ARROW} ".join(md_escape(part) for part in segments) for segments in step.summary[:6])
        out.extend(f"  - {md_escape(line)}" for line in step.stages)
    return out


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
details.still{margin-top:16px}details.still summary{cursor:pointer}.moved-at{font-size:12px;max-width:420px}"""

_W, _H, _PAD = 420, 124, 30
_SUMMARY_LINES = 10  # commits named at the top of the page; the table below has every one
_VERSION_LABELS = 8  # across toolchains, up to this many points each say their Triton under the axis


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
             f"{escape(s.target)} over {count(n, h.noun)}'>",
             f"<line class=axis x1={_PAD} y1={_H - 18} x2={_W - 4} y2={_H - 18} />",
             f"<text x=2 y={y(top) + 4:.1f}>{top}</text><text x=2 y={y(bottom) + 4:.1f}>{bottom}</text>"]
    # The commits that changed a build: a guide line and their number under the axis (and the ends'); across
    # toolchains, every point's Triton version (a few points).
    for i, c in enumerate(h.commits):
        if _moved(c):
            parts.append(f"<line class=tick x1={x(i):.1f} y1=6 x2={x(i):.1f} y2={_H - 18} />")
        if h.across_toolchains and n <= _VERSION_LABELS:
            label = escape((c.toolchain or str(i)).removeprefix("triton ").split(" at ")[0])
            middle = min(max(x(i), _PAD + 3 * len(label)), _W - 4 - 3 * len(label))
            parts.append(f"<text x={middle:.1f} y={_H - 5} text-anchor=middle>{label}</text>")
        elif _moved(c) or i in (0, n - 1):
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
        where = f"{c.toolchain} ({c.subject})" if h.across_toolchains else f"{_span_text(h, i, str)} {c.subject}"
        tip = f"{where}: {f.label} {_value(p)}" + (f"; {moves}" if moves else "")
        if p.failed:
            cx, cy = x(i), _H - 12
            parts.append(f"<a href='#{_anchor(h, i)}'><path class=fail d='M{cx - 4:.1f},{cy - 4:.1f}l8,8m0,-8l-8,8'>"
                         f"<title>{escape(tip)}</title></path></a>")
        if p.max is not None:
            tone = _point_tone(p)
            tone = f" class={tone}" if tone else ""
            parts.append(f"<a href='#{_anchor(h, i)}'><circle{tone} cx={x(i):.1f} cy={y(p.max):.1f} "
                         f"r={4 if tone else 3}><title>{escape(tip)}</title></circle></a>")
    parts.append("</svg>")
    last = s.points[-1]
    moved_at = ""
    if h.across_toolchains:  # which release moved it, said in words as well as drawn
        at = [f"{h.commits[i].toolchain}" + (f" ({_moves_text(s.points[i])})" if s.points[i].moved else "")
              for i in range(1, n) if _point_moved(s, i)]
        moved_at = f"<div class='muted moved-at'>moved at {escape(', '.join(at))}</div>" if at else ""
    return (f"<div class=chart><h3>{escape(f.noun)}{escape(f.unit)} <span class=muted>now {escape(_value(last))}"
            f"</span></h3>{moved_at}{''.join(parts)}</div>")


def _verdict(h: History) -> tuple[str, str]:
    """The page's first line and its tone: how many commits changed builds (``worse`` where any made a
    build worse or failing), or that nothing changed."""
    steps = h.commits[1:]
    moved = [c for c in steps if _moved(c)]
    if not moved:
        return (f"Nothing changed: every build the same {'under' if h.across_toolchains else 'at'} each of the "
                f"{len(h.commits)} {h.noun}s"), ""
    tones = {_tone(c) for c in moved}
    tone = "worse" if "worse" in tones else "better" if "better" in tones else ""
    return f"{len(moved)} of {len(steps)} {h.noun}s changed builds", tone


def _summary_html(h: History) -> str:
    """The commits that changed builds, a line each linking to its row of the table (the first
    :data:`_SUMMARY_LINES`)."""
    moved = [i for i, c in enumerate(h.commits) if i and _moved(c)]
    items = [f"<li><a href='#{_anchor(h, i)}'><span class=mono>{escape(_point_text(h, i, str))}</span> "
             + (f"({escape(h.commits[i].subject)})" if h.across_toolchains else escape(h.commits[i].subject))
             + f"</a>: <span class='{_tone(h.commits[i])}'>"
             f"{escape(_step_title(h.commits[i]))}</span></li>" for i in moved[:_SUMMARY_LINES]]
    if len(moved) > _SUMMARY_LINES:
        items.append(f"<li class=muted>{len(moved) - _SUMMARY_LINES} more in the table below</li>")
    return f"<ul class=summary>{''.join(items)}</ul>" if items else ""


def _still_html(h: History, still: dict[tuple[str, str], list[Series]]) -> str:
    """The kinds on targets that did not move, folded: a line each with its figures' values, the same
    at every commit (charts of flat lines said no more, at 5 KB each)."""
    rows = "".join(f"<tr><td class=mono>{escape(kind)} on {escape(target)}</td><td>"
                   + " · ".join(f"{escape(figure(s.figure).noun)} {escape(_value(s.points[-1]))}"
                                f"{escape(figure(s.figure).unit)}" for s in series)
                   + "</td></tr>" for (kind, target), series in still.items())
    return (f"<details class=still><summary><h2 style='display:inline'>Unchanged {_along(h)} ({len(still)})"
            f"</h2></summary><table>{rows}</table></details>")


def format_html(h: History) -> str:
    """The page a kernel engineer opens first: the verdict and the commits that changed builds, what
    moved as charts, the kinds that did not named with their values, then each commit's diff."""
    groups = _grouped(h)
    moved = {k: v for k, v in groups.items() if any(s.changed for s in v)}
    still = {k: v for k, v in groups.items() if k not in moved}
    failing = sum(1 for c in h.commits if c.failed)
    verdict, tone = _verdict(h)
    title = (f"Registers of {h.spec} over {count(len(h.commits), 'toolchain')}" if h.across_toolchains
             else f"Registers over {h.spec}")
    points = (f"{escape(h.spec)} ({escape(h.commits[0].sha[:10])}) under "
              + ", ".join(escape(c.toolchain or "") for c in h.commits) if h.across_toolchains and h.commits
              else f"{len(h.commits)} commits" + (f", one in {h.every}" if h.every > 1 else ""))
    out = ["<!doctype html><html lang=en><meta charset=utf-8>",
           f"<title>{escape(title)}</title><style>{_STYLE}</style>",
           f"<header><h1>{escape(title)}</h1>"
           f"<div id=verdict class='verdict {tone}'>{escape(verdict)}</div><div class=muted>{points}"
           + f" · {len(moved)} of {len(groups)} kinds×targets moved"
           + (f" · {count(failing, h.noun)} with failing builds" if failing else "")
           + " · the line is the largest value over a kind's builds, the band the spread to the smallest;"
           f" a point links to the {h.noun}'s diff against the one before it"
           + (", judged across the toolchains" if h.across_toolchains else "")
           + ", coloured where builds got worse or better"
           + ("; a change lies in the commits after the point before, up to the one it is shown at"
              if h.every > 1 else "") + "</div>" + _summary_html(h) + "</header><main>"]
    if moved:
        out.append("<h2>What moved</h2>")
    for (kind, target), series in moved.items():
        out.append(f"<section class=kind data-kind='{escape(kind)}' data-target='{escape(target)}'>"
                   f"<h2 class=mono>{escape(kind)} on {escape(target)}</h2><div class=charts>")
        out.extend(_chart(s, h) for s in series)
        out.append("</div></section>")
    if still:
        out.append(_still_html(h, still))
    heads = ("toolchain", "environment") if h.across_toolchains else ("commit", "subject")
    out.append(f"<h2>{h.noun.capitalize()} by {h.noun}</h2><table><tr><th>#</th><th>{heads[0]}</th><th>{heads[1]}"
               "</th><th>against the one before</th></tr>")
    for i, c in enumerate(h.commits):
        step_moved = _moved(c)
        lines = [*(f"toolchain differs: {line}" for line in c.toolchain_sentences()), *c.sentences(), *c.stages]
        items = "".join(f"<li>{escape(line)}</li>" for line in lines) if step_moved else ""
        failed = f" · {c.failed} of {count(c.builds, 'build')} {agree(c.failed, 'fails', 'fail')}" if c.failed else ""
        out.append(f"<tr id='{_anchor(h, i)}'" + ("" if step_moved or i == 0 else " class=quiet") + f"><td>{i}</td>"
                   f"<td class=mono>{escape(_point_text(h, i, str))}</td><td>{escape(c.subject)}</td>"
                   f"<td><span class='{_tone(c)}'>{escape(_step_title(c))}{failed}</span>"
                   + (f"<ul>{items}</ul>" if items else "")
                   + (f"<div class='muted mono'>{escape(_step_command(h, i))}</div>" if step_moved else "")
                   + "</td></tr>")
    out.append("</table></main></html>")
    return "\n".join(out) + "\n"


def _step_command(h: History, i: int) -> str:
    """The command that shows the ``i``-th point's diff against the one before in full: ``regsurvey diff A
    B``, or across toolchains ``regsurvey upgrade --from A --to B [REV]``."""
    if not h.across_toolchains:
        return f"regsurvey diff {h.commits[i - 1].sha[:10]} {h.commits[i].sha[:10]}"
    before, after = (h.commits[j].python or "current" for j in (i - 1, i))
    rev = [] if h.spec == WORKING_TREE else [h.spec]
    return shlex.join(["regsurvey", "upgrade", "--from", before, "--to", after, *rev])
