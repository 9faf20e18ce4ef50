"""Register pressure for the commands: a build's, computed once per object and kept beside the object in
the store (``<sha>.pressure.gz``; content-addressed like the object, so a survey of an old commit needs no
recompile to be explained, and a second ``explain`` reads it back); and, for a comparison, where on the
source lines each changed build's registers and spills moved.

When it is computed: an AMD build's in the survey's finishing step (:func:`keep_pressure`, from the amdgcn
text the worker holds: about 30 ms an object, 2% of the demo suite's compile time); a cubin's at first need
(:func:`pressure_of`), because nvdisasm's life ranges take a run of their own per cubin (0.57 s of CPU
each on the demo suite, a third of its compile time), which nvdisasm cannot batch: it reads one cubin a
run, and prints no life ranges for a raw instruction stream (``--binary``)."""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from .errors import CorruptObjectError
from .model.comparison import AnnotatedFile, Comparison, HotLine, RowComparison
from .model.figures import BY_IMPORTANCE, REGISTER, SPILL
from .model.pressure import Pressure, attribution
from .model.results import Row
from .model.targets import get_target
from .model.words import count
from .repo.checkout import repo_root
from .repo.sources import NO_LINE, SourcePaths
from .store.files import WriteError
from .store.objectstore import ObjectStore

TEXT_NAME = "pressure"


def pressure_of(row: Row, objects: ObjectStore) -> Pressure:
    """The pressure of ``row``'s object (a build that built): stored, or computed and stored.

    CorruptObjectError when the object or the text it is read from is missing or damaged (the caller
    may survey again), ValueError when the text holds no kernel."""
    if row.object is None:
        raise ValueError(f"{row.row_id} ({row.target}) has no object: it did not build")
    rel = row.object.path
    with contextlib.suppress(CorruptObjectError):  # a damaged entry is computed again
        kept = objects.text(rel, TEXT_NAME)
        if kept is not None:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return Pressure.from_dict(json.loads(kept))
    target = get_target(row.target)
    if target.is_amd:
        from .pressure.amd import amd_pressure

        text = objects.text(rel, "amdgcn")
        if text is None:
            raise CorruptObjectError(f"stored object {rel} has no amdgcn text beside it")
        pressure = amd_pressure(text, target.name)
    else:
        from .pressure.nvidia import nvidia_pressure

        pressure = nvidia_pressure(objects.get(rel, row.object.sha256), target.name, objects.text(rel, "ptx"))
    _keep(objects, rel, pressure)
    return pressure


def keep_pressure(objects: ObjectStore, rel: str, target_name: str, amdgcn: str | None) -> bool:
    """The finishing step's part: the pressure of a just-stored AMD object (at ``rel``), computed from its
    amdgcn text and kept beside it. False, computing nothing, for a cubin (see the module's note) or a
    text that holds no kernel; a full disk leaves it to be computed at first need."""
    if amdgcn is None or not get_target(target_name).is_amd:
        return False
    from .pressure.amd import amd_pressure

    try:
        pressure = amd_pressure(amdgcn, target_name)
    except ValueError:
        return False
    return _keep(objects, rel, pressure)


def _keep(objects: ObjectStore, rel: str, pressure: Pressure) -> bool:
    try:
        objects.put_text(rel, TEXT_NAME, json.dumps(pressure.to_dict(), separators=(",", ":")))
    except WriteError:  # a full disk: computed again next time
        return False
    return True


# -- where a comparison's registers changed -------------------------------------------------------------

# The figures whose change is explained on the source lines.
_EXPLAINED = frozenset(f.name for f in BY_IMPORTANCE if f.kind in (REGISTER, SPILL))
_CLASS_NOUN = {"vgpr": "VGPR", "agpr": "AGPR", "sgpr": "SGPR", "gpr": "register", "ugpr": "uniform register"}
MAX_SPILL_LINES = 3  # per build and kind of change


def where_changed(comparison: Comparison, objects: ObjectStore, start: Path, jobs: int = 1) -> Comparison:
    """``comparison`` with the ``where`` of every build whose registers or spills changed: where the peak
    moved, which source lines gained or lost spills. A build whose objects the store does not hold (a
    survey read from a file made elsewhere) is left without."""
    chosen = [r for r in comparison.rows if _explained(r)]
    if not chosen:
        return comparison
    root = repo_root(start)
    base_paths, head_paths = SourcePaths(root, comparison.base.commit), SourcePaths(root, comparison.head.commit)
    rows = {r.object.sha256: r for c in chosen for r in (c.before, c.after) if r is not None and r.object is not None}

    def compute(row: Row) -> Pressure | None:
        try:
            return pressure_of(row, objects)
        except (CorruptObjectError, ValueError):
            return None

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        pressures = dict(zip(rows, pool.map(compute, rows.values())))
    out = []
    for r in comparison.rows:
        if r in chosen:
            assert r.before is not None and r.after is not None and r.before.object and r.after.object
            before, after = pressures.get(r.before.object.sha256), pressures.get(r.after.object.sha256)
            if before is not None and after is not None:
                r = replace(r, where=where_sentences(before, after, base_paths, head_paths),
                            hot_before=hot_lines(before, base_paths), hot_after=hot_lines(after, head_paths),
                            source_before=annotated_files(before, base_paths),
                            source_after=annotated_files(after, head_paths))
        out.append(r)
    return replace(comparison, rows=tuple(out))


HOT_LINES = 5  # per side of a changed build, in the HTML report's detail and the JSON


def hot_lines(pressure: Pressure, paths: SourcePaths, count: int = HOT_LINES) -> tuple[HotLine, ...]:
    """The lines of ``pressure`` holding the most registers, with their text at the revision."""
    c = pressure.classes[0]
    out = []
    for stats in pressure.top_lines(count):
        out.append(HotLine(paths.where(stats.frame), stats.live.get(c, 0),
                           _CLASS_NOUN.get(c, c), stats.spill_stores + stats.inlined_stores,
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
            tuple(sorted(n for (f, n) in hottest if f == path and first <= n <= last)), source is not None))
    return tuple(out)


def _explained(r: RowComparison) -> bool:
    return (r.before is not None and r.after is not None and r.before.ok and r.after.ok
            and r.before.object is not None and r.after.object is not None
            and r.before.object.sha256 != r.after.object.sha256
            and any(f.name in _EXPLAINED for f in r.changed_figures))


def where_sentences(before: Pressure, after: Pressure, base: SourcePaths, head: SourcePaths) -> tuple[str, ...]:
    """What moved between two pressures of one build, in words: the first class's peak, then the source
    lines that gained, lost or changed spills (lines named for each side's revision)."""
    out = []
    c = after.classes[0]
    noun = _CLASS_NOUN.get(c, c)
    if c in before.peaks and c in after.peaks:
        was, now = before.peaks[c], after.peaks[c]
        was_at, now_at = _line(was.frames, base), _line(now.frames, head)
        delta = now.live[c] - was.live[c]
        if was_at != now_at:
            change = f" ({delta:+d} live {noun}s)" if delta else ""
            out.append(f"the {noun} peak moved from {was_at} to {now_at}{change}")
        elif delta:
            out.append(f"the {noun} peak at {now_at} {'rose' if delta > 0 else 'fell'} from {was.live[c]} to "
                       f"{now.live[c]} live {noun}s")
    for what, sgpr in (("spills", False), ("SGPR spills", True)):
        was_spills, now_spills = _spills_by_line(before, base, sgpr), _spills_by_line(after, head, sgpr)
        new = sorted((line for line in now_spills if line not in was_spills), key=lambda x: -sum(now_spills[x]))
        gone = sorted((line for line in was_spills if line not in now_spills), key=lambda x: -sum(was_spills[x]))
        moved = sorted((line for line in now_spills if line in was_spills and now_spills[line] != was_spills[line]),
                       key=lambda x: -abs(sum(now_spills[x]) - sum(was_spills[x])))
        for line in new[:MAX_SPILL_LINES]:
            out.append(f"new {what} {_at(line)} ({_counts(now_spills[line])})")
        for line in moved[:MAX_SPILL_LINES]:
            (st0, ld0), (st1, ld1) = was_spills[line], now_spills[line]
            more = "more" if st1 + ld1 > st0 + ld0 else "fewer"
            out.append(f"{more} {what} {_at(line)} ({st0} to {count(st1, 'store')}, {ld0} to {count(ld1, 'reload')})")
        for line in gone[:MAX_SPILL_LINES]:
            out.append(f"no {what} left {_at(line)} (were {_counts(was_spills[line])})")
    return tuple(out)


def _at(line: str) -> str:
    return "where the compiler gave no source line" if line == NO_LINE else f"at {line}"


def _line(frames: tuple, paths: SourcePaths) -> str:
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


def _counts(counts: tuple[int, int]) -> str:
    stores, reloads = counts
    return f"{count(stores, 'store')}, {count(reloads, 'reload')}"
