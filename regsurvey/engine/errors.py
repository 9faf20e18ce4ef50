"""The engine's one error for its callers: a survey that cannot start."""

from __future__ import annotations


class SurveyError(Exception):
    """A survey that cannot start (bad keys files, unknown target): a one-line message, but for a keys file
    that raised in a library (the frames down to the raising one follow); ``traceback``: Python's whole
    traceback, when there is one (``run --format json`` prints it)."""

    def __init__(self, message: str, traceback: str | None = None):
        super().__init__(message)
        self.traceback = traceback
