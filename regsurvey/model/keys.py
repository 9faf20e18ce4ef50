"""Keys: one build configuration each (a kind at one value of each of its axes, on one target), and how
an axis value is spelled in a key id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .fix import Variant

AxisValue = Any  # int, str or bool: whatever the project's axis takes


@dataclass(frozen=True)
class Key:
    """One build configuration: a kind at one value of each of its axes, on one target."""

    kind: str
    axes: tuple[tuple[str, AxisValue], ...]  # (axis name, value) in the kind's axis order
    target: str
    id: str  # stable, readable: "mla_decode/tp4/w2/e4m3/stop"
    # ``regsurvey fix``: the key compiled with a kernel's launch options and constexprs changed (its id
    # then names them after a "~"); None for every key a survey lists.
    variant: Variant | None = None

    @property
    def axes_dict(self) -> dict[str, AxisValue]:
        """The key's axis values by axis name."""
        return dict(self.axes)


def axis_label(axis: str, value: AxisValue, labels: dict[str, str]) -> str:
    """Spell one axis value as a key-id segment: ``tp8``, ``w4``, ``e4m3``, ``stop`` / ``nostop``."""
    prefix = labels.get(axis, axis)
    if isinstance(value, bool):
        return prefix if value else f"no{prefix}"
    if isinstance(value, int):
        return f"{prefix}{value}"
    return str(value)
