"""Progress events of a survey, and of the work a command does after its surveys: the callbacks a front end
gives to follow them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .keys import Key
from .results import Row


@dataclass
class Progress:
    """Callbacks a front end can give to follow surveys: ``on_survey`` as a survey begins (before its keys
    are listed), with the name of what it surveys (a revision's label: ``HEAD~1 (abc1234567)``, ``working
    tree``); ``on_start`` once its keys are listed, with how many; ``on_key`` as each key finishes. A command
    that surveys several revisions gives one ``Progress`` to all of them: each survey says ``on_survey``
    first.

    Work after the surveys that takes a while before anything is shown (the changed builds' source-line
    pressure, an nvdisasm run per cubin): ``on_work`` as it begins, with what it does (``source-line
    pressure of 98 changed builds``), what it counts and how many (``cubin``, 196); ``on_item`` as each is
    done."""

    on_start: Callable[[int], None] = lambda total: None
    on_key: Callable[[Key, list[Row]], None] = lambda key, rows: None
    on_survey: Callable[[str], None] = lambda label: None
    on_work: Callable[[str, str, int], None] = lambda what, noun, total: None
    on_item: Callable[[], None] = lambda: None
    # The name its surveys are announced by, whatever the checkout's own (``named``); None: the checkout's.
    label: str | None = None

    def announce(self, checkout_label: str) -> None:
        """Say that a survey begins: ``on_survey`` with this progress's name for it, else the checkout's."""
        self.on_survey(self.label if self.label is not None else checkout_label)

    def named(self, label: str) -> Progress:
        """This progress, its surveys announced as ``label`` whatever the checkout's own name (a commit's
        short sha where the checkout is named by its full one); numbered before or after, alike."""
        return replace(self, label=label)

    def numbered(self, number: int, count: int, what: str = "revision") -> Progress:
        """This progress, its surveys announced as the ``number``-th of ``count``: ``HEAD~1 (abc1234567),
        revision 1 of 2``."""
        return replace(self, on_survey=lambda label: self.on_survey(f"{label}, {what} {number} of {count}"))
