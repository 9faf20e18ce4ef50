"""Progress events of a survey: the callbacks a front end gives to follow it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .keys import Key
from .results import Row


@dataclass
class Progress:
    """Callbacks a front end can give to follow a survey."""

    on_start: Callable[[int], None] = lambda total: None
    on_key: Callable[[Key, list[Row]], None] = lambda key, rows: None
