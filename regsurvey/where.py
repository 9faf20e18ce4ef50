"""Where a comparison's changed builds moved on their source lines: for each build whose registers or
spills changed, the peak's line and the lines that gained, lost or changed spills (``RowComparison.where``,
typed :class:`~regsurvey.model.comparison.WhereChange` facts that ``output.where_text`` says), the lines
holding the most registers and each side's annotated source (the HTML report's detail).

From each side's pressure, kept beside its object (:mod:`regsurvey.kept_pressure`), its lines named for
that side's revision (:class:`regsurvey.repo.sources.SourcePaths`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from .errors import CorruptObjectError
from .kept_pressure import is_kept, pressure_of
from .model.comparison import Comparison, RowComparison
from .model.figures import BY_IMPORTANCE, LOOP_SPILL, REGISTER, SPILL
from .model.pressure import NO_LINE, Frame, Pressure, attribution, class_noun
from .model.progress import Progress
from .model.results import Row
from .model.targets import get_target
from .model.where import AnnotatedFile, HotLine, WhereChange, WhereKind
from .model.words import count
from .repo.checkout import repo_root
from .repo.sources import SourcePaths
from .store.objectstore import ObjectStore

# The figures whose change is explained on the source lines.
_EXPLAINED = frozenset(f.name for f in BY_IMPORTANCE if f.kind in (REGISTER, SPILL, LOOP_SPILL))
MAX_SPILL_LINES = 3  # lines told per build, kind of spill and kind of change (new, more or fewer, gone)


def where_changed(comparison: Comparison, objects: ObjectStore, start: Path, jobs: int = 1,
                  progress: Progress | None = None,
                  nvdisasm: tuple[str | None, str | None] = (None, None)) -> Comparison:
    """``comparison`` with the ``where`` of every build whose registers or spills changed: where the peak
    moved, which source lines gained or lost spills. A build whose objects the store does not hold (a
    survey read from a file made elsewhere) is left without.

    Each side's pressure is computed where none is kept (:mod:`.kept_pressure`: a cubin's at first need,
    one nvdisasm run each), ``jobs`` at a time, said to ``progress`` (``on_work``, ``on_item``); a side's
    cubins with ``nvdisasm``'s entry for it, the nvdisasm of the toolchain that built them (None: this
    Triton's)."""
    chosen = [r for r in comparison.rows if _explained(r)]
    if not chosen:
        return comparison
    root = repo_root(start)
    base_paths, head_paths = SourcePaths(root, comparison.base.commit), SourcePaths(root, comparison.head.commit)
    pressures = _pressures(chosen, objects, jobs, progress or Progress(), nvdisasm)
    out = []
    for r in comparison.rows:
        if r in chosen:
            assert r.before is not None and r.after is not None and r.before.object and r.after.object
            before, after = pressures.get(r.before.object.sha256), pressures.get(r.after.object.sha256)
            if before is not None and after is not None:
                r = replace(r, where=where_changes(before, after, base_paths, head_paths),
                            hot_before=hot_lines(before, base_paths), hot_after=hot_lines(after, head_paths),
                            source_before=annotated_files(before, base_paths),
                            source_after=annotated_files(after, head_paths))
        out.append(r)
    return replace(comparison, rows=tuple(out))


def _pressures(chosen: list[RowComparison], objects: ObjectStore, jobs: int, progress: Progress,
               nvdisasm: tuple[str | None, str | None]) -> dict[str, Pressure | None]:
    """The pressure of each object of both sides of the ``chosen`` builds, by sha256 (None: it cannot be
    had), ``jobs`` at a time; those not kept, which take a computation, counted on ``progress``."""
    sides: dict[str, tuple[Row, str | None]] = {}  # each object once, with its side's nvdisasm
    for c in chosen:
        for row, tool in ((c.before, nvdisasm[0]), (c.after, nvdisasm[1])):
            if row is not None and row.object is not None:
                sides.setdefault(row.object.sha256, (row, tool))
    missing = {sha for sha, (row, _) in sides.items() if not is_kept(row, objects)}
    if missing:
        builds = sum(1 for c in chosen if {_sha(c.before), _sha(c.after)} & missing)
        noun = "cubin" if all(get_target(sides[sha][0].target).is_nvidia for sha in missing) else "object"
        progress.on_work(f"source-line pressure of {count(builds, 'changed build')}", noun, len(missing))

    def compute(sha: str) -> Pressure | None:
        row, tool = sides[sha]
        try:
            return pressure_of(row, objects, tool)
        except (CorruptObjectError, ValueError):
            return None
        finally:
            if sha in missing:
                progress.on_item()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(zip(sides, pool.map(compute, sides)))


def _sha(row: Row | None) -> str | None:
    return row.object.sha256 if row is not None and row.object is not None else None


HOT_LINES = 5  # per side of a changed build, in the HTML report's detail and the JSON


def hot_lines(pressure: Pressure, paths: SourcePaths, count: int = HOT_LINES) -> tuple[HotLine, ...]:
    """The lines of ``pressure`` holding the most registers, with their text at the revision."""
    c = pressure.classes[0]
    out = []
    for stats in pressure.top_lines(count):
        out.append(HotLine(paths.where(stats.frame), stats.live.get(c, 0),
                           class_noun(c), stats.spill_stores + stats.inlined_stores,
                           stats.spill_reloads + stats.inlined_reloads, paths.source_line(stats.frame)))
    return tuple(out)


MAX_ANNOTATED_LINES = 400  # per file and side: a longer stretch keeps the lines around the hot ones


def annotated_files(pressure: Pressure, paths: SourcePaths, hot: int = HOT_LINES) -> tuple[AnnotatedFile, ...]:
    """Each user source file of ``pressure``, annotated from its first to its last line with code (as
    ``explain`` shows it), its ``hot`` lines holding the most registers marked. A stretch longer than
    MAX_ANNOTATED_LINES is cut to the lines around the hottest one."""
    c = pressure.classes[0]
    hottest = {s.frame for s in pressure.top_lines(hot)}
    out = []
    for path, lines in pressure.by_file().items():
        source = paths.read(path)
        first, last = min(lines), max(lines)
        if last - first + 1 > MAX_ANNOTATED_LINES:
            centre = max(lines.values(), key=lambda s: s.live.get(c, 0)).frame[1]
            first = max(first, centre - MAX_ANNOTATED_LINES // 2)
            last = first + MAX_ANNOTATED_LINES - 1
        numbers = range(first, last + 1)
        stats = [lines.get(n) for n in numbers]
        out.append(AnnotatedFile(
            paths.name(path), first,
            tuple(source[n - 1].rstrip() if source is not None and 0 < n <= len(source) else "" for n in numbers),
            tuple(None if s is None else s.live.get(c, 0) for s in stats),
            tuple(0 if s is None else s.spill_stores + s.inlined_stores for s in stats),
            tuple(0 if s is None else s.spill_reloads + s.inlined_reloads for s in stats),
            tuple(sorted(n for (f, n) in hottest if f == path and first <= n <= last)), source is not None,
            tuple(0 if s is None else s.depth for s in stats)))
    return tuple(out)


def _explained(r: RowComparison) -> bool:
    return (r.before is not None and r.after is not None and r.before.ok and r.after.ok
            and r.before.object is not None and r.after.object is not None
            and r.before.object.sha256 != r.after.object.sha256
            and any(f.name in _EXPLAINED for f in r.changed_figures))


def where_changes(before: Pressure, after: Pressure, base: SourcePaths,
                  head: SourcePaths) -> tuple[WhereChange, ...]:
    """What moved between two pressures of one build: the first class's peak, then the source lines that
    gained, changed or lost spills, the others' then the SGPR spills', those that changed most first (at
    most MAX_SPILL_LINES of each), lines named for each side's revision."""
    out = []
    c = after.classes[0]
    noun = class_noun(c)
    if c in before.peaks and c in after.peaks:
        was, now = before.peaks[c], after.peaks[c]
        was_at, now_at = _line(was.frames, base), _line(now.frames, head)
        if was_at != now_at or now.live[c] != was.live[c]:
            what = WhereKind.PEAK_MOVED if was_at != now_at else WhereKind.PEAK_CHANGED
            out.append(WhereChange(what, was_at, now_at, noun=noun, live_before=was.live[c], live_after=now.live[c]))
    for sgpr in (False, True):
        was_spills, now_spills = _spills_by_line(before, base, sgpr), _spills_by_line(after, head, sgpr)
        new = sorted((line for line in now_spills if line not in was_spills), key=lambda x: -sum(now_spills[x]))
        gone = sorted((line for line in was_spills if line not in now_spills), key=lambda x: -sum(was_spills[x]))
        moved = sorted((line for line in now_spills if line in was_spills and now_spills[line] != was_spills[line]),
                       key=lambda x: -abs(sum(now_spills[x]) - sum(was_spills[x])))
        for line in new[:MAX_SPILL_LINES]:
            out.append(_spill_change(WhereKind.NEW_SPILLS, line, sgpr, (0, 0), now_spills[line]))
        for line in moved[:MAX_SPILL_LINES]:
            more = sum(now_spills[line]) > sum(was_spills[line])
            out.append(_spill_change(WhereKind.MORE_SPILLS if more else WhereKind.FEWER_SPILLS, line, sgpr,
                                     was_spills[line], now_spills[line]))
        for line in gone[:MAX_SPILL_LINES]:
            out.append(_spill_change(WhereKind.SPILLS_GONE, line, sgpr, was_spills[line], (0, 0)))
    out.extend(loop_changes(before, after, base, head))
    return tuple(out)


def loop_changes(before: Pressure, after: Pressure, base: SourcePaths, head: SourcePaths) -> list[WhereChange]:
    """The loops (by source line) whose own spill stores and reloads changed between two pressures of one
    build, those that changed most first (at most MAX_SPILL_LINES)."""
    was, now = _loop_spills(before, base), _loop_spills(after, head)
    empty = (0, 0, 0)
    changed = [line for line in dict.fromkeys([*now, *was]) if was.get(line, empty)[:2] != now.get(line, empty)[:2]]
    changed.sort(key=lambda line: -abs(sum(now.get(line, empty)[:2]) - sum(was.get(line, empty)[:2])))
    out = []
    for line in changed[:MAX_SPILL_LINES]:
        (s0, r0, d0), (s1, r1, d1) = was.get(line, empty), now.get(line, empty)
        what = WhereKind.LOOP_SPILLS_UP if s1 + r1 > s0 + r0 else WhereKind.LOOP_SPILLS_DOWN
        out.append(WhereChange(what, line, line, stores_before=s0, reloads_before=r0, stores_after=s1,
                               reloads_after=r1, depth=d1 or d0))
    return out


def _loop_spills(pressure: Pressure, paths: SourcePaths) -> dict[str, tuple[int, int, int]]:
    """A loop's source line -> (its own spill stores, reloads, its depth); loops on one line (a loop the
    compiler made twice) counted together, at the deepest's depth."""
    out: dict[str, tuple[int, int, int]] = {}
    for loop in pressure.loops:
        if not loop.stores and not loop.reloads:
            continue
        line = paths.where(loop.line) if loop.line is not None else NO_LINE
        s, r, d = out.get(line, (0, 0, 0))
        out[line] = (s + loop.stores, r + loop.reloads, max(d, loop.depth))
    return out


def _spill_change(what: WhereKind, line: str, sgpr: bool, was: tuple[int, int], now: tuple[int, int]) -> WhereChange:
    return WhereChange(what, line, line, sgpr=sgpr, stores_before=was[0], reloads_before=was[1],
                       stores_after=now[0], reloads_after=now[1])


def _line(frames: tuple[Frame, ...], paths: SourcePaths) -> str:
    return paths.where(attribution(frames)[0])


def _spills_by_line(pressure: Pressure, paths: SourcePaths, sgpr: bool) -> dict[str, tuple[int, int]]:
    """Source line -> (spill stores, reloads) of the instructions attributed to it: SGPR spills (to VGPR
    lanes) when ``sgpr``, else the others."""
    out: dict[str, list[int]] = {}
    for spill in pressure.spills:
        if (spill.medium == "vgpr-lane") != sgpr:
            continue
        counts = out.setdefault(_line(spill.site.frames, paths), [0, 0])
        counts[0 if spill.kind == "store" else 1] += 1
    return {line: (c[0], c[1]) for line, c in out.items()}
