"""What each key's compile is expected to cost, from earlier surveys of the store (any commit): the order
keys are handed out in (the longest first) and how many workers each target gets before the keys are listed."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

from ..model.keys import Key
from ..model.results import Row
from ..model.targets import TARGETS
from ..store.files import MiB, atomic_write, read_regular

MAX_KEY_SECONDS = 1e7  # what costs.json may say a key took (a hundred days); anything else is damage


class KeyCosts:
    """Compile seconds per (key, target) from earlier surveys (of any commit), to schedule the slowest keys
    first.

    A long key started last is the tail that keeps every other worker idle; started first, it
    overlaps with the rest. A key never surveyed is estimated from what is known before compiling it
    (:meth:`estimate`): its kind's other keys, else nothing (a kind never surveyed goes first of all),
    and, within either, its axes (a bigger tile, width, more warps or stages, a path switched on: a bigger
    build).
    """

    def __init__(self, path: Path):
        self.path = path
        self.seconds: dict[str, float] = {}  # none yet, or damaged: scheduling order is only an optimisation
        self._means: tuple[tuple[int, int], dict[tuple[str, str], float]] | None = None
        try:
            known = json.loads(read_regular(path, 256 * MiB))
        except (OSError, ValueError):
            return
        if isinstance(known, dict):
            # Seconds only: Python's JSON reads NaN and Infinity, on which sorting and sharing workers out
            # fail (int(nan) raised); a negative time, or one that overflows a sum, is as damaged.
            self.seconds = {k: float(v) for k, v in known.items()
                            if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
                            and 0 <= v <= MAX_KEY_SECONDS}

    def estimate(self, key: Key) -> float:
        """The key's compile seconds last time. A key never surveyed: the mean of its kind's keys surveyed
        on its target (else on any target), scaled by :func:`axes_factor`; a key of a kind never surveyed:
        the longest key known (1 s when none is), so scaled, so that it starts before every known one."""
        known = self.seconds.get(f"{key.target}:{key.id}")
        if known is not None:
            return known
        means = self._kind_means()
        kind = means.get((key.target, key.kind), means.get(("", key.kind)))
        if kind is not None:
            return kind * axes_factor(key)
        return max(self.seconds.values(), default=1.0) * axes_factor(key)

    def _kind_means(self) -> dict[tuple[str, str], float]:
        """Mean seconds per (target, kind), and per ("", kind) over every target (a key id starts with its
        kind's name); computed once per state of :attr:`seconds`."""
        state = (id(self.seconds), len(self.seconds))
        if self._means is None or self._means[0] != state:
            totals: dict[tuple[str, str], list[float]] = {}
            for name, seconds in self.seconds.items():
                target, _, ident = name.partition(":")
                kind = ident.split("/", 1)[0]
                for group in ((target, kind), ("", kind)):
                    total = totals.setdefault(group, [0.0, 0.0])
                    total[0] += seconds
                    total[1] += 1
            self._means = (state, {group: t / n for group, (t, n) in totals.items()})
        return self._means[1]

    def usual_target(self) -> str | None:
        """The target with the most keys surveyed before in this store (None when none was)."""
        counts: dict[str, int] = {}
        for name in self.seconds:
            target = name.split(":", 1)[0]
            if target in TARGETS:
                counts[target] = counts.get(target, 0) + 1
        return max(counts, key=lambda t: counts[t]) if counts else None

    def workers_for(self, targets: list[str], jobs: int) -> list[str]:
        """The target of each of ``jobs`` workers started before the keys are listed, the first being
        ``targets[0]`` (the listing worker's): in proportion to the compile seconds this store knows of each
        target's keys (a target compiling 1.35x slower gets more workers, so that no target's workers run
        out of keys long before the others'), at least one each; in turn when a target has none known."""
        totals = [sum(v for k, v in self.seconds.items() if k.startswith(f"{t}:")) for t in targets]
        if jobs <= len(targets) or not all(totals):
            return [targets[i % len(targets)] for i in range(jobs)]
        spare = jobs - len(targets)
        shares = [spare * t / sum(totals) for t in totals]
        counts = [1 + int(share) for share in shares]
        for i in sorted(range(len(targets)), key=lambda i: int(shares[i]) - shares[i])[:jobs - sum(counts)]:
            counts[i] += 1  # the largest remainders
        return [t for t, n in zip(targets, counts) for _ in range(n)]

    def longest_first(self, keys: list[Key]) -> list[Key]:
        """``keys`` reordered by decreasing :meth:`estimate` (stable; at a tie, the key never surveyed first)."""
        return sorted(keys, key=lambda k: (-self.estimate(k), f"{k.target}:{k.id}" in self.seconds))

    def update(self, rows: Iterable[Row]) -> None:
        """Record the compile time of each key (all its launches together) and save."""
        totals: dict[str, float] = {}
        for r in rows:
            if r.ok and not r.reused:
                totals[f"{r.target}:{r.key}"] = totals.get(f"{r.target}:{r.key}", 0.0) + r.compile_s
        if not totals:
            return
        self.seconds.update({k: round(v, 3) for k, v in totals.items()})
        try:
            atomic_write(self.path, json.dumps(self.seconds, sort_keys=True).encode())
        except OSError:
            pass


def axes_factor(key: Key) -> float:
    """How much bigger a build a key's axes say it is, known before anything is compiled: 1, plus 5 %
    per doubling of each numeric axis value above 1 (tiles, widths, warps, stages, parallelism) and per
    boolean axis that is on (a path compiled in). Only an order among keys of one kind: strings say nothing."""
    extra = 0.0
    for _, value in key.axes:
        if isinstance(value, bool):
            extra += 1.0 if value else 0.0
        elif isinstance(value, (int, float)) and value > 1:
            extra += math.log2(value)
    return 1.0 + 0.05 * extra
