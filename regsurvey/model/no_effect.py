"""Knobs that did nothing: a constexpr, a launch option or a key axis that a kind's keys vary but that never
changes the compiled object on a target (fla's ``NB``, a constexpr its l2norm kernels take and never read,
which "fragments both the autotune and compilation caches": fla#1147).

:func:`knobs_without_effect` reads a survey's rows, each kind and target apart:

- a **constexpr** (``Row.build``) or **launch option** (``num_warps``, ``num_stages``) has no effect when
  builds of one kernel that differ in it alone give one object (the same sha256). Builds are compared where
  every other recorded value is equal (the other constexprs, set or not, and the options) and their keys
  differ in at most one axis (the one that moved the knob, if any; none between an autotuner's configs of
  one key): what the rows do not record (an argument's dtype, its divisibility by 16) is then the same but
  for what that one axis moves. A knob is reported where at least two of its values were compared and
  every such comparison gave one object; one comparison that differs and it changes the object.
- a key **axis** has no effect when keys that differ in it alone build the same kernels (by kernel, launch
  and config) into the same objects, and fail or build alike: an axis that only sizes the grid (a batch
  whose tensors keep their strides' divisibility). An axis that moves only a constexpr already reported is
  said with it (``NB ... (axis rows)``), not again.

A sha256 equal across builds is the whole claim: objects naming their source path in debug information
are compared within one survey of one checkout, where it is the same path. What the rows do not record
(``waves_per_eu``, ``maxnreg`` and other options) is not a knob here. ``output/no_effect_text`` says it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .enums import TextEnum

if TYPE_CHECKING:
    from .results import Row

OPTIONS = ("num_warps", "num_stages")  # the launch options a row records
# What a knob's comparisons found: its values compared, the builds compared, the axes that moved it.
_Compared = tuple[tuple[Any, ...], list["Row"], set[str]]


class KnobKind(TextEnum):
    """What the knob is: a constexpr argument, a launch option, or an axis of the kind's keys."""

    CONSTEXPR = "constexpr"
    OPTION = "option"
    AXIS = "axis"


@dataclass(frozen=True)
class NoEffect:
    """One knob of one kind that never changed the object on one target: its values, every one compared
    with another and giving the same object."""

    kind: str
    target: str
    knob: str  # the constexpr's, option's or axis's name
    what: KnobKind  # a plain string is taken and checked
    values: tuple[Any, ...]  # the values compared, in order (numbers by value); JSON scalars
    kernels: tuple[str, ...]  # the kernels whose builds were compared
    builds: int  # how many builds were compared
    # A constexpr's or option's: the key axes that moved it between the builds compared (none: an autotuner's
    # configs of one key moved it).
    axes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.what, KnobKind):
            object.__setattr__(self, "what", KnobKind(self.what))

    @property
    def ref(self) -> tuple[str, str, KnobKind, str]:
        """Which knob of which kind on which target: what a comparison matches the two sides' by."""
        return (self.kind, self.target, self.what, self.knob)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (the survey JSON's and the comparison JSON's ``no_effect`` lists)."""
        return {"kind": self.kind, "target": self.target, "knob": self.knob, "what": self.what.value,
                "values": list(self.values), "kernels": list(self.kernels), "builds": self.builds,
                "axes": list(self.axes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NoEffect:
        """Parse :meth:`to_dict`'s form; KeyError, TypeError or ValueError for anything else."""
        return cls(kind=str(data["kind"]), target=str(data["target"]), knob=str(data["knob"]),
                   what=KnobKind(data["what"]), values=tuple(data["values"]),
                   kernels=tuple(map(str, data["kernels"])), builds=int(data["builds"]),
                   axes=tuple(map(str, data.get("axes") or ())))


@dataclass(frozen=True)
class KnobsWithoutEffect:
    """A comparison's knobs that did nothing (``Comparison.no_effect``): the head's, and the base's, which
    tell the head's new ones. Told, never judged."""

    head: tuple[NoEffect, ...] = ()
    base: tuple[NoEffect, ...] = ()

    @property
    def new(self) -> tuple[NoEffect, ...]:
        """The head's that the base did not have (by kind, target and knob)."""
        before = {f.ref for f in self.base}
        return tuple(f for f in self.head if f.ref not in before)


def value_order(value: Any) -> tuple[int, float, str]:
    """How a knob's values sort: numbers by value, then anything else by its text (``None``, strings)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, repr(value))


def knobs_without_effect(rows: Iterable[Row]) -> tuple[NoEffect, ...]:
    """Every knob of every kind that never changed the object on a target (see the module's docstring), in
    the survey's order of kinds and targets, each kind's constexprs and options first, then its axes."""
    by_kind: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if not row.skipped:
            by_kind[(row.kind, row.target)].append(row)
    found: list[NoEffect] = []
    for (kind, target), kind_rows in by_kind.items():
        knobs = _knob_facts(kind, target, kind_rows)
        told = {k.axes[0] for k in knobs if len(k.axes) == 1}
        found += knobs + [a for a in _axis_facts(kind, target, kind_rows) if a.knob not in told]
    return tuple(found)


def _settings(row: Row) -> dict[tuple[KnobKind, str], Any]:
    """What a build was built with, as the rows record it: its options and its constexprs."""
    options = {(KnobKind.OPTION, name): getattr(row, name) for name in OPTIONS if getattr(row, name) is not None}
    return options | {(KnobKind.CONSTEXPR, name): value for name, value in (row.build or {}).items()}


def _knob_facts(kind: str, target: str, rows: list[Row]) -> list[NoEffect]:
    """The constexprs and options of ``rows`` (one kind on one target) that never changed an object."""
    built = [(r, _settings(r)) for r in rows if r.ok and r.object is not None and r.build is not None]
    # Each build is compared in a group per axis left free (or in one group, where the keys have no axis).
    free_axes: list[str | None] = [*sorted({a for r, _ in built for a in r.axes})] or [None]
    knobs = list(dict.fromkeys(k for _, s in built for k in s))
    facts = []
    for knob in knobs:
        # Builds of one kernel alike in every other recorded value, then in every axis but one (or all).
        groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
        for row, settings in built:
            if knob not in settings:
                continue  # not a constexpr of this build (an argument Triton specialized only when it was 1)
            others = frozenset((k, _hashable(v)) for k, v in settings.items() if k != knob)
            for free in free_axes:
                fixed = tuple(sorted((a, _hashable(v)) for a, v in row.axes.items() if a != free))
                groups[(row.kernel, others, free, fixed)].append(row)
        fact = _judged(groups.values(), _setting(knob))
        if fact is not None:
            values, compared, moved_by = fact
            facts.append(NoEffect(kind, target, knob[1], knob[0], values, _kernels(compared), len(compared),
                                  tuple(a for a in free_axes if a is not None and a in moved_by)))
    return facts


def _setting(knob: tuple[KnobKind, str]) -> Callable[[Row], Any]:
    """A build's value of ``knob``."""
    return lambda row: _settings(row)[knob]


def _judged(groups: Iterable[list[Row]], value_of: Callable[[Row], Any]) -> _Compared | None:
    """The values a knob took in the groups where it took two or more, the builds compared and the axes that
    moved it; None where no group compared two values, or one group's builds are not one object."""
    values: set[Any] = set()
    compared: dict[int, Row] = {}
    moved_by: set[str] = set()
    for group in groups:
        taken = {_hashable(value_of(r)) for r in group}
        if len(taken) < 2:
            continue
        if len({r.object.sha256 for r in group if r.object is not None}) != 1:
            return None
        values |= taken
        compared.update((id(r), r) for r in group)
        moved_by |= _moving_axes(group, value_of)
    if not compared:
        return None
    return tuple(sorted(values, key=value_order)), list(compared.values()), moved_by


def _moving_axes(group: list[Row], value_of: Callable[[Row], Any]) -> set[str]:
    """The axes whose values differ between two builds of ``group`` that differ in the knob."""
    moved = set()
    for i, a in enumerate(group):
        for b in group[i + 1:]:
            if _hashable(value_of(a)) != _hashable(value_of(b)):
                moved |= {name for name in a.axes if a.axes.get(name) != b.axes.get(name)}
    return moved


def _axis_facts(kind: str, target: str, rows: list[Row]) -> list[NoEffect]:
    """The axes of ``rows`` (one kind on one target) whose values give the same objects."""
    axis_names = list(dict.fromkeys(a for r in rows for a in r.axes))
    facts = []
    for axis in axis_names:
        # Per key of the other axes' values: each value of this axis, its builds by kernel, launch and config.
        keys: dict[tuple[Any, ...], dict[Any, dict[tuple[Any, ...], str | None]]] = defaultdict(
            lambda: defaultdict(dict))
        for row in rows:
            if axis not in row.axes:
                continue
            fixed = tuple(sorted((a, _hashable(v)) for a, v in row.axes.items() if a != axis))
            build = (row.kernel, row.name, row.launch, row.config)
            keys[fixed][_hashable(row.axes[axis])][build] = row.object.sha256 if row.ok and row.object else None
        values: set[Any] = set()
        compared: list[tuple[Any, ...]] = []
        same = True
        for by_value in keys.values():
            if len(by_value) < 2:
                continue
            objects = list(by_value.values())
            if any(None in o.values() for o in objects) or any(o != objects[0] for o in objects):
                same = False
                break
            values |= set(by_value)
            compared += [build for o in objects for build in o]
        if same and compared:
            kernels = tuple(dict.fromkeys(str(b[0]) for b in compared if b[0] is not None))
            facts.append(NoEffect(kind, target, axis, KnobKind.AXIS, tuple(sorted(values, key=value_order)),
                                  kernels, len(compared)))
    return facts


def _kernels(rows: list[Row]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(r.kernel for r in rows if r.kernel is not None))


def _hashable(value: Any) -> Any:
    """A JSON value as a dict key: lists as tuples (an axis may hold a list of sizes)."""
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value
