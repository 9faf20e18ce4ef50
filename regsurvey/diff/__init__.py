"""Comparing surveys: the engine (:mod:`.core`: ``compare``, ``stack``) and the prose summary
(:mod:`.summary`). What a comparison is lives in :mod:`regsurvey.model.comparison`; presentation in
:mod:`regsurvey.output`."""

from .core import compare, stack
from .summary import Summary, SummaryLine, summarize

__all__ = ["Summary", "SummaryLine", "compare", "stack", "summarize"]
