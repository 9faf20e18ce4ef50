"""From per-instruction facts (text, source frames, live counts, spill, loop) to a :class:`.Pressure`: the
peaks, the per-line table, the spill list and the loops, the same way for both vendors."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..model.pressure import Frame, LineStats, LoopSite, Pressure, Site, Spill, attribution
from ..objects.loop_spills import InstructionLoops


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


def build(kernel: str, target: str, method: str, classes: tuple[str, ...], steps: list[Step],
          loops: InstructionLoops | None = None) -> Pressure:
    """The pressure of the instructions ``steps``, in code order; ``loops``: the code's loops, per instruction
    as ``steps`` are (None: not known, no loops told)."""
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
        loop = loops.innermost[index] if loops is not None else None
        depth = loops.depth[index] if loops is not None else 0
        if step.spill is not None:
            kind, medium, size = step.spill
            spills.append(Spill(kind, medium, size, Site(index, step.text, step.frames, dict(step.live)), loop))
        if own is None:
            continue
        _count(lines.setdefault(own, LineStats(own)), step, inlined=False, depth=depth)
        for frame in callers:
            _count(lines.setdefault(frame, LineStats(frame)), step, inlined=True, depth=depth)
    ordered = tuple(sorted(lines.values(), key=lambda s: (s.frame[0], s.frame[1])))
    sites = _loop_sites(loops, steps, spills) if loops is not None else ()
    return Pressure(kernel, target, method, classes, len(steps), peaks, series, ordered, tuple(spills),
                    tuple(files), demand, sites)


def _loop_sites(loops: InstructionLoops, steps: list[Step], spills: list[Spill]) -> tuple[LoopSite, ...]:
    """Each loop with its source line and its own spill stores and reloads. The line is :func:`loop_line` of
    the instructions of its header and latch blocks (where its step, trip test and branch are), else of all
    the instructions it holds."""
    held: list[list[tuple[Frame, ...]]] = [[] for _ in loops.loops]
    for index, step in enumerate(steps):
        loop = loops.innermost[index]
        while loop is not None:  # an instruction of a nested loop is one of each loop around it too
            held[loop].append(step.frames)
            loop = loops.loops[loop].parent
    own = [[0, 0] for _ in loops.loops]
    for spill in spills:
        if spill.loop is not None:
            own[spill.loop][0 if spill.kind == "store" else 1] += 1
    out = []
    for i, span in enumerate(loops.loops):
        line = loop_line([steps[k].frames for k in span.control]) or loop_line(held[i])
        out.append(LoopSite(span.depth, span.parent, line, own[i][0], own[i][1]))
    return tuple(out)


def loop_line(frames: Sequence[tuple[Frame, ...]]) -> Frame | None:
    """The source line of a loop, from the frames of some of its instructions (innermost frame first, as each
    instruction carries them): where the instructions' call chains part ways (below the calls they share:
    a loop inside an inlined helper is the helper's), the first line among the frames there, in the file
    most of them are in. A ``for`` statement comes before its body, and its own instructions (the induction
    variable's step, the trip test) are in the loop. The loop's branch alone names no line reliably: LLVM
    often gives it none (it keeps the location of the instruction before). A value the compiler recomputes
    in the loop rather than keep (a rematerialized address) can name an earlier line."""
    chains = [tuple(reversed(f)) for f in frames if f]  # outermost frame first
    if not chains:
        return None
    shared = 0
    while all(len(c) > shared for c in chains) and len({c[shared] for c in chains}) == 1:
        shared += 1
    level = [c[shared] for c in chains if len(c) > shared]
    if not level:
        return chains[0][shared - 1]  # every instruction on one line (a loop of one statement)
    file = Counter(path for path, _ in level).most_common(1)[0][0]
    return min((f for f in level if f[0] == file), key=lambda f: f[1])


def _count(stats: LineStats, step: Step, inlined: bool, depth: int) -> None:
    """Count ``step`` on a line: as its own instruction, or as one of a helper inlined there (at loop depth
    ``depth``)."""
    stats.depth = max(stats.depth, depth)
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
