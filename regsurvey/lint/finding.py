"""What the lint reports (:class:`~regsurvey.model.findings.Finding`): defined in ``model/``, where a
survey's rows carry findings; named here too, where the lint makes them."""

from __future__ import annotations

from ..model.findings import ERROR, NOTE, Finding, Severity

__all__ = ["ERROR", "NOTE", "Finding", "LintInputError", "Severity"]


class LintInputError(ValueError):
    """Input the lint cannot work on (no kernel, no layout, a disassembly without its object, PTX without
    an entry); one line. Defined here, beside the findings, so that every lint module can raise it; the
    package exports it as ``regsurvey.lint.LintInputError``."""
