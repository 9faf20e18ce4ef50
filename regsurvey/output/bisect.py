"""``regsurvey bisect``'s report: the commit found, its message, the verdicts of the search, and its diff
against its parent in the comparison's own format (table, Markdown), or all of it as JSON; the lines said
when nothing is found, the same in every format. And the line each verdict is told on stderr."""

from __future__ import annotations

import json
from typing import Any

from ..model.bisect import SKIP, BisectResult, Verdict
from ..model.words import ARROW, ASCII_ARROW
from .diff_json import comparison_dict
from .formats import ReportFormat


def verdict_line(sha: str, verdict: Verdict, arrow: str = ARROW) -> str:
    """``regsurvey: bisect: 0123456789 bad: sm90:k/0 0 → 12``: one commit judged, for stderr."""
    why = verdict.why(arrow)
    detail = f": {why}" if why else ""
    return f"regsurvey: bisect: {sha[:10]} {verdict.verdict}{detail}"


def _not_found(result: BisectResult) -> str:
    """Nothing found: no commit shows the change, or skipped commits leave it open among some."""
    if not result.candidates:
        return f"no commit of {result.good}..{result.bad} shows {result.what}: {result.bad} itself does not. " \
               f"{result.tally}\n"
    verdicts = result.verdicts
    listed = "\n".join(f"  {result.commits[i].sha[:10]} {result.commits[i].subject}"
                       + (f" (skipped: {verdicts[i].why()})" if i in verdicts and verdicts[i].verdict == SKIP
                          else "") for i in result.candidates)
    return f"skipped commits leave it open: the first commit showing {result.what} is one of\n{listed}\n" \
           f"{result.tally}\n"


def format_text(result: BisectResult, diff_format: ReportFormat) -> str:
    """The commit found, its message, the commit it shows in, the verdicts, the tally, then its diff
    against its parent written by ``diff_format`` (the table's or Markdown's ``format``)."""
    if result.first is None or result.comparison is None:
        return _not_found(result)
    commit = result.commits[result.first]
    shown = result.verdicts.get(result.first)
    lines = [f"first commit where {result.what}: {commit.sha}", "",
             "\n".join(f"    {line}" for line in result.message.splitlines()) or "    (no message)", ""]
    if shown and shown.why():
        lines.append(f"it shows in: {shown.why()}")
    lines.append(", ".join(f"{result.commits[i].sha[:10]} {result.verdicts[i].verdict}" for i in result.probes))
    lines += [result.tally, "", diff_format.format(result.comparison).rstrip()]
    return "\n".join(lines) + "\n"


def bisect_dict(result: BisectResult) -> dict[str, Any]:
    """A found commit's JSON-ready data (docs/schemas.md): the commit, the search's steps and the diff."""
    assert result.first is not None and result.comparison is not None
    commit = result.commits[result.first]
    shown = result.verdicts.get(result.first)
    return {"commit": commit.sha, "subject": commit.subject, "message": result.message, "figure": result.figure,
            "key": result.key, "above": result.above, "shows": shown.why(ASCII_ARROW) if shown else "",
            "surveyed": result.surveyed, "surveyed_now": result.surveyed_now,
            "steps": [{"commit": result.commits[i].sha, "verdict": result.verdicts[i].verdict,
                       "why": result.verdicts[i].why(ASCII_ARROW)} for i in result.probes],
            "diff": comparison_dict(result.comparison)}


def format_json(result: BisectResult) -> str:
    """:func:`bisect_dict` as JSON; when nothing was found, the same lines as the other formats."""
    if result.first is None or result.comparison is None:
        return _not_found(result)
    return json.dumps(bisect_dict(result), indent=1)
