"""The shapes of regsurvey's progress lines outside a terminal (what :mod:`regsurvey.output.progress` prints
on stderr for a CI log), made here and recognised here: ``ci/regsurvey_check.py`` loads this module by its
path (standard library only, importing nothing of regsurvey's) to keep the lines out of the report of a
check that could not judge. A new line shape is added here, so both stay in step."""

from __future__ import annotations

import re

PREFIX = "regsurvey: "


def surveying(label: str) -> str:
    """``regsurvey: surveying HEAD~1 (abc1234567), revision 1 of 2``: a survey begins."""
    return f"{PREFIX}surveying {label}"


def listing(label: str, elapsed: str) -> str:
    """Its keys are being listed."""
    return f"{PREFIX}{label}: listing keys; {elapsed} elapsed"


def to_survey(label: str, keys: str, elapsed: str) -> str:
    """Its keys are listed (``keys``: ``40 keys``), none finished yet."""
    return f"{PREFIX}{label}: {keys} to survey; {elapsed} elapsed"


def finished_keys(label: str, done: str, tail: str) -> str:
    """Keys finished (``done``: ``3/40 keys, 5 builds compiled, ...``) and the time (``tail``: ``42s elapsed,
    about 2m20s left`` or ``done in 1m02s``)."""
    return f"{PREFIX}{label}: {done}; {tail}"


def working(what: str, total: str) -> str:
    """``regsurvey: source-line pressure of 98 changed builds (196 cubins)``: work after the surveys begins
    (``what``, no colon in it), ``total`` what it counts (``196 cubins``)."""
    return f"{PREFIX}{what} ({total})"


def finished_items(what: str, done: str, tail: str) -> str:
    """That work's items done (``done``: ``80/196 cubins``) and the time (``tail``, as :func:`finished_keys`'s)."""
    return f"{PREFIX}{what}: {done}; {tail}"


_LINE = re.compile(
    rf"{re.escape(PREFIX)}(surveying .*|.*: (listing keys; .* elapsed|\d+ keys? to survey; .* elapsed"
    r"|\d+/\d+ keys?, .*; (.* elapsed.*|done in .*))"
    r"|[^:\n]+ \(\d+ [\w -]+\)|[^:\n]+: \d+/\d+ [\w -]+; (.* elapsed.*|done in .*))\n?")


def is_progress_line(line: str) -> bool:
    """Whether ``line`` (with or without its newline) is one of the shapes above."""
    return _LINE.fullmatch(line) is not None
