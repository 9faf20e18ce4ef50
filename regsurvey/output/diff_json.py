"""The comparison as schema-versioned JSON (documented in README, "The comparison JSON")."""

from __future__ import annotations

from ..diff.core import Comparison, Stack


class JsonFormat:
    """``--format json``: everything the comparison holds, both sides' rows included."""

    name = "json"

    def format(self, comparison: Comparison) -> str:
        """The comparison's JSON."""
        return comparison.to_json()

    def format_stack(self, stack: Stack) -> str:
        """The stack's JSON: each step's comparison and the overall one."""
        return stack.to_json()
