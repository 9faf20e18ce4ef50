"""Key definitions: a matrix of axes, kinds that use some of its axes, and the keys they expand to.

A keys file in ``keys/`` builds one or more :class:`Matrix` objects and decorates kind bodies with
:meth:`Matrix.kind`. One key is one kind at one value of each of its axes, on one target.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.keys import AxisValue, Key, axis_label
from ..model.targets import get_target
from ..model.words import agree


def _sort_token(value: AxisValue) -> tuple[int, Any]:
    # Numbers sort numerically (tp4 before tp16), strings alphabetically, False before True.
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, (int, float)):
        return (0, value)
    return (1, str(value))


def key_sort_token(kind_index: int, axes: Sequence[tuple[str, AxisValue]], target: str) -> tuple:
    """Sort order for keys: kind in definition order, then axis values in natural order, then target."""
    return (kind_index, tuple(_sort_token(v) for _, v in axes), target)


@dataclass
class Kind:
    """A kernel kind: a body that launches one or more kernels, and the matrix axes it varies over."""

    name: str
    body: Callable[..., Any]
    axes: tuple[str, ...]
    matrix: Matrix
    targets: tuple[str, ...] | None = None  # None: the matrix's targets
    # Axes this kind takes only some values of (``@matrix.kind(width=[2, 8])``), in the matrix's order.
    values: dict[str, list[AxisValue]] = field(default_factory=dict)

    @property
    def source(self) -> tuple[str, int]:
        """(file, first line) of the kind body, for error messages."""
        code = self.body.__code__
        return code.co_filename, code.co_firstlineno

    def keys(self, targets: Sequence[str] | None = None) -> Iterator[Key]:
        """Expand this kind into its keys, for ``targets`` or the matrix's own."""
        chosen = list(targets) if targets is not None else list(self.targets or self.matrix.targets)
        values = [self.values.get(a, self.matrix.axes[a]) for a in self.axes]
        for combo in itertools.product(*values):
            axes = tuple(zip(self.axes, combo))
            segments = [axis_label(a, v, self.matrix.labels) for a, v in axes]
            key_id = "/".join([self.name, *segments])
            for t in chosen:
                yield Key(kind=self.name, axes=axes, target=t, id=key_id)


@dataclass
class Matrix:
    """The axes of a suite and the targets it is built for.

    ``Matrix(targets=["gfx950", "sm90"], tp=[4, 8], width=[2, 4, 8], labels={"width": "w"})``:
    every keyword other than ``targets`` and ``labels`` is an axis with its list of values. ``labels``
    gives the prefix an integer or boolean axis gets in key ids (default: the axis name).
    """

    targets: list[str]
    axes: dict[str, list[AxisValue]]
    labels: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, Kind] = field(default_factory=dict)

    def __init__(self, targets: Sequence[str], labels: dict[str, str] | None = None,
                 **axes: Sequence[AxisValue]):
        for t in targets:
            get_target(t)  # fail early, naming the known targets
        self.targets = [get_target(t).name for t in targets]
        self.labels = dict(labels or {})
        self.axes = {}
        for name, values in axes.items():
            values = list(values)
            if not values:
                raise ValueError(f"axis {name!r} has no values")
            if len(set(map(repr, values))) != len(values):
                raise ValueError(f"axis {name!r} repeats a value: {values}")
            # Each value is one segment of a key id: it may not hold the separator, and two values
            # may not be spelled alike (2 and "w2" under the label "w"), or their keys would be one.
            spelled: dict[str, AxisValue] = {}
            for value in values:
                label = axis_label(name, value, self.labels)
                if "/" in label:
                    raise ValueError(f"axis {name!r} value {value!r} holds '/', which separates a key id's parts")
                if label in spelled:
                    raise ValueError(f"axis {name!r} values {spelled[label]!r} and {value!r} are both spelled "
                                     f"{label!r} in key ids")
                spelled[label] = value
            self.axes[name] = values
        self.kinds = {}

    def kind(self, axes: Sequence[str] | None = None, name: str | None = None,
             targets: Sequence[str] | None = None,
             **values: Sequence[AxisValue]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorate a kind body. ``axes`` lists the matrix axes it varies over (default: its parameters).

        Any other keyword narrows one of those axes to some of the matrix's values:
        ``@matrix.kind(axes=["tp", "width"], width=[2, 8])``.
        """

        def register(body: Callable[..., Any]) -> Callable[..., Any]:
            kind_name = name or body.__name__
            params = list(inspect.signature(body).parameters)
            chosen = tuple(axes) if axes is not None else tuple(params)
            for a in chosen:
                if a not in self.axes:
                    raise ValueError(
                        f"kind {kind_name!r} uses axis {a!r}, which the matrix does not define "
                        f"(axes: {', '.join(self.axes)})")
            missing = [a for a in chosen if a not in params]
            if missing and not any(
                    p.kind == inspect.Parameter.VAR_KEYWORD
                    for p in inspect.signature(body).parameters.values()):
                raise ValueError(f"kind {kind_name!r} does not take {agree(len(missing), 'axis parameter')} {missing}")
            if kind_name in self.kinds:
                raise ValueError(f"kind {kind_name!r} is defined twice")
            if "/" in kind_name or not kind_name:
                raise ValueError(f"kind name {kind_name!r} must be non-empty and without '/' (it starts key ids)")
            kind_targets = tuple(get_target(t).name for t in targets) if targets else None
            subsets = {axis: self._subset(kind_name, chosen, axis, taken) for axis, taken in values.items()}
            self.kinds[kind_name] = Kind(kind_name, body, chosen, self, kind_targets, subsets)
            return body

        return register

    def _subset(self, kind: str, chosen: tuple[str, ...], axis: str, taken: Sequence[AxisValue]) -> list[AxisValue]:
        """The values of ``axis`` a kind takes, checked against the matrix's (in the matrix's order)."""
        if axis not in chosen:
            raise ValueError(f"kind {kind!r} narrows axis {axis!r}, which is not one of its axes "
                             f"({', '.join(chosen) or 'none'})")
        if isinstance(taken, (str, bytes)) or not isinstance(taken, Sequence):
            raise ValueError(f"kind {kind!r}: {axis}= takes a list of values, not {taken!r}")
        known = self.axes[axis]

        def among(value: AxisValue, values: Sequence[AxisValue]) -> bool:
            # By type too: True is not the int 1 of a numeric axis.
            return any(type(value) is type(v) and value == v for v in values)

        unknown = [v for v in taken if not among(v, known)]
        if unknown:
            raise ValueError(f"kind {kind!r} takes {axis}={', '.join(map(repr, unknown))}, not among the "
                             f"matrix's {axis} values {known}")
        if not taken:
            raise ValueError(f"kind {kind!r} takes no value of axis {axis!r}")
        return [v for v in known if among(v, taken)]

    def keys(self, targets: Sequence[str] | None = None) -> list[Key]:
        """All keys of all kinds, in definition order."""
        return [k for kind in self.kinds.values() for k in kind.keys(targets)]
