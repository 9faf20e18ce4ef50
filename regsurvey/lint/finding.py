"""What the lint reports (:class:`~regsurvey.model.findings.Finding`): defined in ``model/``, where a
survey's rows carry findings; named here too, where the lint makes them."""

from __future__ import annotations

from ..model.findings import ERROR, NOTE, Finding, Severity

__all__ = ["ERROR", "NOTE", "Finding", "Severity"]
