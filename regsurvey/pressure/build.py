"""From per-instruction facts (text, source frames, live counts, spill) to a :class:`.Pressure`: the
peaks, the per-line table and the spill list, the same way for both vendors."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.pressure import Frame, LineStats, Pressure, Site, Spill, attribution


@dataclass(frozen=True)
class Step:
    """One instruction as an analysis saw it. ``spill``: (kind, medium, size) when it is a spill store
    or reload. ``demand``: where the kernel spills, the values live there per class, those held in spill
    slots included (None where the analysis cannot tell)."""

    text: str
    frames: tuple[Frame, ...]
    live: dict[str, int]
    spill: tuple[str, str, int] | None = None
    demand: dict[str, int] | None = None


def build(kernel: str, target: str, method: str, classes: tuple[str, ...], steps: list[Step]) -> Pressure:
    peaks: dict[str, Site] = {}
    demand: dict[str, Site] = {}
    series: dict[str, list[int]] = {c: [] for c in classes}
    lines: dict[Frame, LineStats] = {}
    spills: list[Spill] = []
    files: dict[str, None] = {}
    for index, step in enumerate(steps):
        for c in classes:
            count = step.live.get(c, 0)
            series[c].append(count)
            if c not in peaks or count > peaks[c].live[c]:
                peaks[c] = Site(index, step.text, step.frames, dict(step.live))
            wanted = step.demand.get(c) if step.demand is not None else None
            if wanted is not None and (c not in demand or wanted > demand[c].live[c]):
                demand[c] = Site(index, step.text, step.frames, dict(step.demand or {}))
        for path, _ in step.frames:
            files.setdefault(path)
        own, callers = attribution(step.frames)
        if step.spill is not None:
            kind, medium, size = step.spill
            spills.append(Spill(kind, medium, size, Site(index, step.text, step.frames, dict(step.live))))
        if own is None:
            continue
        _count(lines.setdefault(own, LineStats(own)), step, inlined=False)
        for frame in callers:
            _count(lines.setdefault(frame, LineStats(frame)), step, inlined=True)
    ordered = tuple(sorted(lines.values(), key=lambda s: (s.frame[0], s.frame[1])))
    return Pressure(kernel, target, method, classes, len(steps), peaks, series, ordered, tuple(spills),
                    tuple(files), demand)


def _count(stats: LineStats, step: Step, inlined: bool) -> None:
    """Count ``step`` on a line: as its own instruction, or as one of a helper inlined there."""
    for c, n in step.live.items():
        if n > stats.live.get(c, -1):
            stats.live[c] = n
    store = step.spill is not None and step.spill[0] == "store"
    reload = step.spill is not None and not store
    if inlined:
        stats.inlined_instructions += 1
        stats.inlined_stores += store
        stats.inlined_reloads += reload
    else:
        stats.instructions += 1
        stats.spill_stores += store
        stats.spill_reloads += reload
