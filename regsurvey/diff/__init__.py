"""Comparing surveys: the engine (:mod:`.core`), its figure table (:mod:`.figures`) and the prose
summary (:mod:`.summary`). Presentation lives in :mod:`regsurvey.output`."""

from .core import Comparison, FigureDelta, Mark, RowComparison, Stack, StackStep, compare, stack
from .summary import Summary, SummaryLine, summarize

__all__ = ["Comparison", "FigureDelta", "Mark", "RowComparison", "Stack", "StackStep", "Summary", "SummaryLine",
           "compare", "stack", "summarize"]
