"""``--format csv``: every result that is a table, as CSV for a spreadsheet or pandas, one row per build (per
finding, per commit), the figure columns from the figure registry (:data:`regsurvey.model.figures.FIGURES`,
every vendor's, in its order; empty where a build has no such figure). The columns are in docs/schemas.md.

One module, registered for every result type it writes: the registry finds it (``*_format.py``), and every
command whose result is among them offers ``--format csv``; nothing else names it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from ..model.comparison import Comparison, RowComparison, Stack
from ..model.figures import FIGURES
from ..model.findings import LintReport
from ..model.history import History
from ..model.names import build_names
from ..model.rebuild import RebuildCheck
from ..model.results import Row
from ..model.words import ASCII_ARROW
from .formats import Style, register
from .problems import SurveyReport

FIGURE_NAMES = tuple(f.name for f in FIGURES)
# The columns naming a build, in every table of builds.
BUILD_COLUMNS = ("target", "key", "kind", "build", "kernel", "launch", "config")
SURVEY_COLUMNS = (*BUILD_COLUMNS, "status", "num_warps", "num_stages", *FIGURE_NAMES, "error")
# After the mark, the first compiler stage whose output differs (first_stage), then each side's compile time
# where that side measured its compile (Row.stage_s), and how many times as long it took where both did
# (diff.core.compile_time: not for one kernel on both sides).
COMPARISON_COLUMNS = (*BUILD_COLUMNS, "mark", "first_difference", "compile_s_before", "compile_s_after",
                      "compile_ratio", *(f"{name}_{side}" for name in FIGURE_NAMES for side in ("before", "after")))
STACK_COLUMNS = ("commit", "subject", *COMPARISON_COLUMNS)
HISTORY_COLUMNS = ("commit", "subject", "span", "kind", "target")  # then <figure>_max, <figure>_min, ...
# A history across toolchains (history --toolchains): a point is a toolchain of one revision's commit.
TOOLCHAIN_HISTORY_COLUMNS = ("toolchain", "python", "commit", "kind", "target")  # then the same
LINT_COLUMNS = ("key", "file", "target", "kernel", "arg_index", "arg_name", "arg_offset", "severity", "line", "load",
                "reason")
REBUILD_COLUMNS = ("target", "row_id", "key", "kernel", "section", "detail", "first_sha256", "second_sha256")

Cell = str | int | float | None


def _csv(header: Sequence[str], rows: Iterable[Sequence[Cell]]) -> str:
    """The table as CSV: a header line, fields quoted where needed, a line end of ``\n`` (a shell's, not
    RFC 4180's CRLF: what pipes and ``pandas.read_csv`` take alike); None is an empty cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(["" if cell is None else cell for cell in row] for row in rows)
    return out.getvalue()


@register(SurveyReport, "csv", "a row per build, a column per figure, for a spreadsheet")
def survey_csv(report: SurveyReport, style: Style) -> str:
    """A row per build shown (``run --only`` narrows it as it narrows the table)."""
    survey = report.shown
    names = build_names(survey.rows)
    return _csv(SURVEY_COLUMNS, [
        (r.target, r.key, r.kind, names[(r.target, r.row_id)].text, r.kernel, r.launch, r.config, r.status.value,
         r.num_warps, r.num_stages, *(r.resources.get(name) for name in FIGURE_NAMES), r.error_line or None)
        for r in survey.rows])


def _comparison_rows(comparison: Comparison) -> list[tuple[Cell, ...]]:
    def side(row: Row | None, name: str) -> int | None:
        return row.resources.get(name) if row is not None else None

    def seconds(row: Row | None) -> float | None:
        return row.compile_s if row is not None and row.stage_s is not None else None

    def ratio(r: RowComparison) -> float | None:
        return round(r.compile_time.ratio, 3) if r.compile_time is not None and r.compile_time.before > 0 else None

    def cells(r: RowComparison) -> tuple[Cell, ...]:
        stage = r.first_difference.value if r.first_difference is not None else None
        return (r.target, r.key, r.kind, r.name.label(ASCII_ARROW), r.kernel, r.launch, r.config, r.mark.value, stage,
                seconds(r.before), seconds(r.after), ratio(r),
                *(value for name in FIGURE_NAMES for value in (side(r.before, name), side(r.after, name))))

    return [cells(r) for r in comparison.rows]


@register(Comparison, "csv", "a row per build, each figure before and after, for a spreadsheet")
def comparison_csv(comparison: Comparison, style: Style) -> str:
    """A row per build of either side, with its mark and each figure before and after."""
    return _csv(COMPARISON_COLUMNS, _comparison_rows(comparison))


@register(Stack, "csv", "a row per build of each commit against its parent, for a spreadsheet")
def stack_csv(stack: Stack, style: Style) -> str:
    """Each commit's comparison against its parent, its rows led by the commit (the whole range's
    comparison is the diff of its ends: ``regsurvey diff BASE HEAD --format csv``)."""
    return _csv(STACK_COLUMNS, [(step.commit, step.subject, *cells) for step in stack.steps
                                for cells in _comparison_rows(step.comparison)])


@register(History, "csv", "a row per commit (or toolchain), kind and target, each figure's largest and smallest "
                          "value")
def history_csv(h: History, style: Style) -> str:
    """A row per commit (across toolchains: per toolchain, its name and interpreter, empty for the
    environment regsurvey ran in) and kind on a target: each figure drawn, its largest and smallest value
    over the kind's builds at that point."""
    figures = h.figures or tuple(dict.fromkeys(s.figure for s in h.series))
    groups: dict[tuple[str, str], dict[str, int]] = {}
    for k, s in enumerate(h.series):
        groups.setdefault((s.kind, s.target), {})[s.figure] = k
    rows = []
    for i, c in enumerate(h.commits):
        for (kind, target), by_figure in groups.items():
            values: list[Cell] = []
            for name in figures:
                point = h.series[by_figure[name]].points[i] if name in by_figure else None
                values += [point.max, point.min] if point is not None else [None, None]
            first = (c.toolchain, c.python, c.sha) if h.across_toolchains else (c.sha, c.subject, c.span)
            rows.append((*first, kind, target, *values))
    fixed = TOOLCHAIN_HISTORY_COLUMNS if h.across_toolchains else HISTORY_COLUMNS
    header = (*fixed, *(f"{name}_{end}" for name in figures for end in ("max", "min")))
    return _csv(header, rows)


@register(LintReport, "csv", "a row per finding, for a spreadsheet")
def lint_csv(report: LintReport, style: Style) -> str:
    """A row per finding, in the lint's order."""
    return _csv(LINT_COLUMNS, [(f.key, f.file, f.target, f.kernel, f.arg_index, f.arg_name, f.arg_offset,
                                f.severity.value, f.line, f.load, f.reason) for f in report.findings])


@register(RebuildCheck, "csv", "a row per build that differs, for a spreadsheet")
def rebuild_csv(check: RebuildCheck, style: Style) -> str:
    """A row per build whose second compile differed."""
    return _csv(REBUILD_COLUMNS, [(d.target, d.row_id, d.key, d.kernel, d.section, d.detail, d.first_sha256,
                                   d.second_sha256) for d in check.differences])
