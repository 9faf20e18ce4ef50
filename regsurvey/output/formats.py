"""The report formats of comparisons, behind one small interface (as pip-audit's output formats).

Each format renders a :class:`~regsurvey.diff.core.Comparison` (``diff``) or a
:class:`~regsurvey.diff.core.Stack` (``stack``) to a string; none compiles or reads objects.
"""

from __future__ import annotations

from typing import Protocol

from ..model.comparison import Comparison, Stack

FORMAT_NAMES = ("table", "json", "markdown", "html")


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
    """The format called ``name`` (one of :data:`FORMAT_NAMES`); ``color``, ``width`` and ``limit``
    (rows per group) only concern the terminal table."""
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
