"""The one registry of report formats: every result a command shows (a survey, a lint run, a comparison, a
stack, a history, an explanation, a rebuild check, a bisect result, a coverage) is rendered through it, and every
command takes its ``--format`` choices from it (pip-audit keeps one format enum for its whole CLI).

A format is a renderer registered for a result type under a name: ``render(result, style) -> str``, a pure
function of the result. The built-in formats are registered below, each importing its module only when it
renders (a survey's start should not wait for the HTML report's templates). A format of its own is one
module ``output/<name>_format.py`` that calls :func:`register` for each result type it writes: such modules
are found and imported the first time the registry is asked (as asv finds its plug-ins), so adding one
touches nothing else (``csv_format.py`` is one).

:func:`get_format` is the older interface of the comparison formats alone (``format`` and
``format_stack``), kept for the renderers that build on it.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..model.bisect import BisectResult
from ..model.comparison import Comparison, Stack
from ..model.coverage import Coverage
from ..model.findings import LintReport
from ..model.fix import FixReport
from ..model.history import History
from ..model.rebuild import RebuildCheck
from .explain import Explanation
from .problems import SurveyReport

FORMAT_NAMES = ("table", "json", "markdown", "html")  # the comparison's built-in formats (get_format)

R = TypeVar("R")


@dataclass(frozen=True)
class Style:
    """How a report is laid out where its format has a say (the terminal's): colour, the width in columns
    (None: the renderer's own default), and rows shown per group of a comparison table."""

    color: bool = False
    width: int | None = None
    limit: int = 50


@dataclass(frozen=True)
class Format:
    """One format of one result type: its name (``--format NAME``), what it is (for ``--help``) and its
    renderer."""

    name: str
    help: str
    render: Callable[[Any, Style], str]


_REGISTRY: dict[type, dict[str, Format]] = {}
_PLUGINS_LOADED = False
PLUGIN_SUFFIX = "_format"  # output/<name>_format.py: a format module found at start-up


def register(result: type[R], name: str, help: str) -> Callable[[Callable[[R, Style], str]],
                                                                Callable[[R, Style], str]]:
    """Register the decorated ``render(result, style) -> str`` as format ``name`` of ``result``'s type;
    ``help`` says what it is, after ``name:`` in ``--format``'s help. A name registered twice for one
    type is a mistake (ValueError)."""
    def apply(render: Callable[[R, Style], str]) -> Callable[[R, Style], str]:
        formats = _REGISTRY.setdefault(result, {})
        if name in formats:
            raise ValueError(f"format {name!r} of {result.__name__} is registered twice")
        formats[name] = Format(name, help, render)
        return render
    return apply


def _load_plugins() -> None:
    """Import every ``output/*_format.py`` once, in name order (each registers its formats)."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    package = __name__.rpartition(".")[0]
    for module in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda m: m.name):
        if module.name.endswith(PLUGIN_SUFFIX):
            importlib.import_module(f"{package}.{module.name}")


def formats_of(result: type) -> tuple[Format, ...]:
    """The formats of ``result``'s type, the built-in ones first (the first is the default)."""
    _load_plugins()
    return tuple(_REGISTRY.get(result, {}).values())


def format_names(result: type) -> tuple[str, ...]:
    """The names of :func:`formats_of` ``result``: the choices of a command's ``--format``."""
    return tuple(f.name for f in formats_of(result))


def render(result: object, name: str, style: Style = Style()) -> str:
    """``result`` written in format ``name`` (ValueError for a format its type does not have)."""
    _load_plugins()
    for kind in type(result).__mro__:
        formats = _REGISTRY.get(kind)
        if formats is not None:
            if name not in formats:
                raise ValueError(f"unknown format {name!r} of {kind.__name__}; formats: {', '.join(formats)}")
            return formats[name].render(result, style)
    raise ValueError(f"no format renders a {type(result).__name__}")


# -- the comparison's formats as objects (the interface the table, Markdown and HTML classes implement) ----------

class ReportFormat(Protocol):
    """A way to write comparisons down."""

    name: str

    def format(self, comparison: Comparison) -> str:
        """One comparison (``diff``)."""
        ...

    def format_stack(self, stack: Stack) -> str:
        """A range of commits (``stack``)."""
        ...


def get_format(name: str, *, color: bool = False, width: int = 140, limit: int = 50) -> ReportFormat:
    """The comparison format called ``name`` (one of :data:`FORMAT_NAMES`); ``color``, ``width`` and
    ``limit`` (rows per group) only concern the terminal table."""
    if name == "table":
        from .diff_table import TableFormat

        return TableFormat(color=color, width=width, limit=limit)
    if name == "json":
        from .diff_json import JsonFormat

        return JsonFormat()
    if name == "markdown":
        from .markdown import MarkdownFormat

        return MarkdownFormat()
    if name == "html":
        from .html import HtmlFormat

        return HtmlFormat()
    raise ValueError(f"unknown format {name!r}; formats: {', '.join(FORMAT_NAMES)}")


def _comparison_format(name: str, style: Style) -> ReportFormat:
    return get_format(name, color=style.color, width=style.width or 140, limit=style.limit)


# -- built-in formats, by result type ------------------------------------------------------------------------------

_COMPARISON_HELP = {"table": "tables for a terminal", "json": "everything, for programs",
                    "markdown": "for a pull request", "html": "a page to open in a browser, written to a file (see -o)"}


def _comparison_renderer(name: str) -> Callable[[Comparison, Style], str]:
    return lambda comparison, style: _comparison_format(name, style).format(comparison)


def _stack_renderer(name: str) -> Callable[[Stack, Style], str]:
    return lambda stack, style: _comparison_format(name, style).format_stack(stack)


for _name in FORMAT_NAMES:
    register(Comparison, _name, _COMPARISON_HELP[_name])(_comparison_renderer(_name))
    register(Stack, _name, _COMPARISON_HELP[_name])(_stack_renderer(_name))


@register(SurveyReport, "table", "a table per vendor, then the counts and the builds to look at")
def _survey_table(report: SurveyReport, style: Style) -> str:
    from .table import survey_text

    return survey_text(report, color=style.color, width=style.width or 120)


@register(SurveyReport, "json", "the survey itself (diff and check take such a file in place of a revision)")
def _survey_json(report: SurveyReport, style: Style) -> str:
    from ..model.no_effect import knobs_without_effect

    # The knobs that did nothing, of the whole survey: --only narrows the rows, not what was compared.
    return report.shown.to_json(no_effect=knobs_without_effect(report.survey.rows))


@register(LintReport, "table", "the findings and a line counting them")
def _lint_table(report: LintReport, style: Style) -> str:
    from .findings import findings_table

    return findings_table(report.findings, kernels=report.kernels, color=style.color, width=style.width or 120)


@register(LintReport, "json", "a list of the findings")
def _lint_json(report: LintReport, style: Style) -> str:
    from .findings import findings_json

    return findings_json(report.findings)


@register(History, "html", "charts to open in a browser (written to a file, see -o)")
def _history_html(h: History, style: Style) -> str:
    from .history import format_html

    return format_html(h)


@register(History, "markdown", "a table per kind that moved")
def _history_markdown(h: History, style: Style) -> str:
    from .history import format_markdown

    return format_markdown(h)


@register(History, "json", "every series, for programs")
def _history_json(h: History, style: Style) -> str:
    from .history import format_json

    return format_json(h)


@register(Explanation, "text", "for a terminal")
def _explain_text(e: Explanation, style: Style) -> str:
    from .explain import format_text

    return format_text(list(e.items), e.paths, e.top, list(e.failed), style.width)


@register(Explanation, "json", "for programs")
def _explain_json(e: Explanation, style: Style) -> str:
    from .explain import format_json

    return format_json(list(e.items), list(e.failed))


@register(Explanation, "markdown", "for a pull request")
def _explain_markdown(e: Explanation, style: Style) -> str:
    from .explain import format_markdown

    return format_markdown(list(e.items), e.paths, e.top, list(e.failed))


@register(Explanation, "html", "the annotated source, written to a file (see -o)")
def _explain_html(e: Explanation, style: Style) -> str:
    from .explain import format_html

    return format_html(list(e.items), e.paths, e.top, list(e.failed))


@register(RebuildCheck, "table", "the verdict and each build that differs")
def _rebuild_table(check: RebuildCheck, style: Style) -> str:
    from .diff_table import rebuild_text

    return rebuild_text(check, color=style.color, width=style.width)


@register(RebuildCheck, "json", "the same, for programs")
def _rebuild_json(check: RebuildCheck, style: Style) -> str:
    return json.dumps(check.to_dict(), indent=1)


@register(Coverage, "table", "per kernel: the real launches the keys miss, and the keys no launch used")
def _coverage_table(result: Coverage, style: Style) -> str:
    from .coverage import coverage_text

    return coverage_text(result)


@register(Coverage, "json", "the same, with each side's specializations, for programs")
def _coverage_json(result: Coverage, style: Style) -> str:
    return result.to_json()


@register(BisectResult, "table", "the found commit, then its diff against its parent as tables")
def _bisect_table(result: BisectResult, style: Style) -> str:
    from .bisect import format_text

    return format_text(result, _comparison_format("table", style))


@register(BisectResult, "markdown", "the found commit, then its diff against its parent as Markdown")
def _bisect_markdown(result: BisectResult, style: Style) -> str:
    from .bisect import format_text

    return format_text(result, _comparison_format("markdown", style))


@register(BisectResult, "json", "the search and the diff, for programs")
def _bisect_json(result: BisectResult, style: Style) -> str:
    from .bisect import format_json

    return format_json(result)


@register(FixReport, "table", "each build's variants ranked, the control's verdict, and the options to use")
def _fix_table(result: FixReport, style: Style) -> str:
    from .fix import fix_text

    return fix_text(result)


@register(FixReport, "json", "the same, for programs")
def _fix_json(result: FixReport, style: Style) -> str:
    return result.to_json()
