"""A build's compile time: the seconds of each stage of its compile (:class:`StageTimes`, ``Row.stage_s``),
and one build's compile time on both sides of a comparison (:class:`CompileTime`).

The worker measures the stages of every compile it makes (``compile.toolchain``: Triton's compile listener,
the assembler and linker timed inside their stages) and the result cache keeps them with the build's
result, so a build reused from an earlier compile carries that compile's measurement (``Row.reused`` says
so). A measurement is the machine's as much as the compiler's: another load on the machine moves it by
tens of percent. So compile time never makes a build worse or better in a comparison; a report tells it
where it moved notably (:attr:`CompileTime.notable`), and ``check`` fails only a pathological slowdown
(:meth:`CompileTime.slowdown`: by default 10 times slower and over 30 s).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .frozen_mapping import FrozenMapping

# Notable: the compile took at least twice (or half) as long, and a second or more longer (shorter).
NOTABLE_FACTOR = 2.0
NOTABLE_S = 1.0
# Pathological, the gate's default (check.baseline.CheckRules): at least 10 times as long, and over 30 s.
SLOWDOWN_FACTOR = 10.0
SLOWDOWN_OVER_S = 30.0
# The ratio a slowdown is judged on, rounded: 10 times 2.9 s is 29 s whatever the floating point says.
_RATIO_SLACK = 1e-9


class StageTimes(FrozenMapping[float]):
    """The seconds of each stage of one compile, in the order they ran: a frozen, hashable mapping of
    stage name to seconds (a finite number of zero or more).

    The names are Triton's stages (``frontend`` for its Python-to-TTIR code generation and cache look-up,
    ``ttir``, ``ttgir``, ``llir``, ``amdgcn`` or ``ptx``, ``hsaco`` or ``cubin``, ``store`` for the
    metadata written to Triton's cache) and the tools timed inside one (``ptxas`` inside ``cubin``;
    ``assembler`` and ``lld`` inside ``hsaco``): the entries do not overlap, a tool's stage holding what
    is left of it (temporary files), so that their :attr:`total` is the compile's time in Triton.
    Its JSON form is the mapping itself (``{"frontend": 0.0123, "ttir": 0.004, ...}``)."""

    __slots__ = ()

    def __init__(self, seconds: Mapping[str, float] | Iterable[tuple[str, float]]) -> None:
        """ValueError for a name that is not a non-empty string, or seconds that are not a finite number of
        zero or more (a bool is not one)."""
        pairs = list(seconds.items() if isinstance(seconds, Mapping) else seconds)
        for name, value in pairs:
            if not isinstance(name, str) or not name:
                raise ValueError(f"stage name {name!r} is not a name")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise ValueError(f"stage {name} took {value!r}, not a number of seconds of zero or more")
        self._freeze({name: float(value) for name, value in pairs})

    @property
    def total(self) -> float:
        """The seconds of every stage together."""
        return sum(self._items.values())

    @classmethod
    def from_json(cls, data: Any) -> StageTimes:
        """Parse :meth:`to_json`'s form; ValueError naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"stage times are {type(data).__name__} {str(data)[:40]!r}, not a map of stages "
                             "to seconds")
        return cls(data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (StageTimes, (self._items,))  # pickled from workers and Ray actors

    def __repr__(self) -> str:
        return f"StageTimes({self._items!r})"


@dataclass(frozen=True)
class StageGrowth:
    """The stage of a build's compile whose seconds grew most between two measurements."""

    stage: str
    before: float  # 0 where the stage did not run before
    after: float


@dataclass(frozen=True)
class CompileTime:
    """One build's compile time on both sides of a comparison (``RowComparison.compile_time``), made where
    both sides measured a compile of their own build (see ``diff.core``): the seconds of each side
    (``Row.compile_s``) and their stages. ``reused_*``: that side's measurement came with its result from
    an earlier compile of the same kernel (the build's measurement, taken when it was compiled)."""

    before: float
    after: float
    stages_before: StageTimes
    stages_after: StageTimes
    reused_before: bool = False
    reused_after: bool = False

    @property
    def ratio(self) -> float:
        """after / before (infinite where before took no measurable time)."""
        return self.after / self.before if self.before > 0 else math.inf

    @property
    def notable(self) -> bool:
        """True when it moved past the noise of a loaded machine: at least twice or half as long, and by a
        second or more (:data:`NOTABLE_FACTOR`, :data:`NOTABLE_S`)."""
        low, high = sorted((self.before, self.after))
        return high - low >= NOTABLE_S and high >= NOTABLE_FACTOR * low

    def slowdown(self, factor: float = SLOWDOWN_FACTOR, over_s: float = SLOWDOWN_OVER_S) -> bool:
        """True for a pathological slowdown: at least ``factor`` times as long as before, and over ``over_s``
        seconds now."""
        return self.after > over_s and self.ratio >= factor * (1 - _RATIO_SLACK)

    @property
    def grew_most(self) -> StageGrowth | None:
        """The stage whose seconds grew most, for a compile that took longer (None where it did not: a stage
        that grew by a millisecond in a compile 20 times faster explains nothing; or where none grew)."""
        if self.after <= self.before:
            return None
        names = dict.fromkeys([*self.stages_before, *self.stages_after])
        growth = [StageGrowth(name, self.stages_before.get(name, 0.0), self.stages_after.get(name, 0.0))
                  for name in names]
        grown = max(growth, key=lambda g: g.after - g.before, default=None)
        return grown if grown is not None and grown.after > grown.before else None

    def to_dict(self) -> dict[str, Any]:
        """The comparison JSON's ``compile_time`` of a row (docs/schemas.md)."""
        grown = self.grew_most
        return {"before": self.before, "after": self.after,
                "ratio": round(self.ratio, 3) if math.isfinite(self.ratio) else None,
                "notable": self.notable, "pathological": self.slowdown(),
                "grew_most": None if grown is None else {"stage": grown.stage, "before": grown.before,
                                                         "after": grown.after},
                "stages": {"before": self.stages_before.to_json(), "after": self.stages_after.to_json()},
                "reused": {"before": self.reused_before, "after": self.reused_after}}


__all__ = ["NOTABLE_FACTOR", "NOTABLE_S", "SLOWDOWN_FACTOR", "SLOWDOWN_OVER_S", "CompileTime", "StageGrowth",
           "StageTimes"]
