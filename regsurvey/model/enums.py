"""An enum whose members are their text: ``str(Status.OK) == "ok"``, f-strings and JSON show the value,
and ``row.status == "ok"`` holds (``enum.StrEnum`` from Python 3.11 on; regsurvey runs on 3.10 too)."""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """A ``str`` enum shown as its value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)
