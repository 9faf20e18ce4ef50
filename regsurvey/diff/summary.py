"""A comparison in a kernel engineer's words: one line per change that a group of builds shares.

How lines are made (nothing here knows any project's kinds or axes):

1. Each changed build yields **effects**: a status change (``breaks``, ``fixes``, new or dropped
   builds), a lint change (a miscompile suspect or a lint note added or removed: kernel arguments
   loaded and never read) or, per changed figure, ``adds``/``removes`` (a spill-like figure from or to
   zero) or ``raises``/``lowers``. A companion figure (scratch beside VGPR spills, spill loads beside
   spill stores, blocks beside warps) rides in its parent's line instead of making its own.
2. Builds with the same effect are grouped per kind and kernel; groups of different kinds merge when
   each is complete for its own description and the merged group keeps every axis value that
   described either (``tp8 w8`` of ``mla_decode`` and of ``q_b``).
3. A group is described by what all its builds share: kinds, the axis values that are constant
   (spelled as in key ids), targets; "N of M builds" when the description covers builds that did not
   change. Its values are ranges (``20-24 -> 0``); when one varying axis splits the builds into parts
   with clearly different ranges, each part gets its own range (``tp8 0 -> 3, tp4 0 -> 16-17``).

Then, where the builds' first differing compiler stage is known, a line per stage groups them by it
(:mod:`.stage_summary`: ``11 builds: Triton's lowering changed (TTGIR differs first: ...)``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..model.comparison import FIGURE_MARKS, Comparison, FigureDelta, Mark, RowComparison
from ..model.figures import BY_IMPORTANCE, FIGURE_ORDER, REGISTER, SPILL, figure
from ..model.words import ARROW, agree, count
from .shared_where import SharedWhere, shared_where
from .stage_summary import stage_sentences

# Shown beside a companion's values in its parent's line.
_COMPANION_NOUN = {"scratch_bytes": "scratch", "spill_load_bytes": "loads", "stack_bytes": "stack",
                   "occupancy_blocks": "", "vgpr_total": "unified"}
_TOLD_WHEN_DIFFERENT = {"vgpr_total"}  # companions told only where they moved otherwise than their figure
MAX_BREAKDOWN_PARTS = 4
# Where a sentence has an arrow (before -> after): SummaryLine keeps the words between, a report draws it.
_ARROW_MARK = "\x00"
ARROW_GAP = f" {_ARROW_MARK} "
MAX_KINDS_NAMED, MAX_BUILD_CHANGES = 5, 3  # kinds, and build changes, named per line


@dataclass(frozen=True)
class SummaryLine:
    """One sentence about a group of builds that share a change, as the words between its arrows
    (``removes VGPR spills from attn on gfx950 (20-24`` | ``0)``): each report draws its own arrow."""

    segments: tuple[str, ...]
    tone: str  # "worse", "better" or "neutral"
    rows: tuple[str, ...]  # RowComparison.ref of every build it speaks of
    where: tuple[SharedWhere, ...] = ()  # where on the source lines its builds' registers moved, most builds first

    @classmethod
    def of(cls, text: str, tone: str, rows: tuple[str, ...]) -> SummaryLine:
        """A line from text whose arrows are :data:`ARROW_GAP`."""
        return cls(tuple(text.split(ARROW_GAP)), tone, rows)

    def render(self, arrow: str = ARROW) -> str:
        """The sentence, with ``arrow`` between a before and an after."""
        return f" {arrow} ".join(self.segments)

    @property
    def text(self) -> str:
        """The sentence as a person reads it (:data:`regsurvey.model.words.ARROW`; the JSON's are ASCII)."""
        return self.render()


@dataclass(frozen=True)
class Summary:
    """The sentences describing a comparison, most important first."""

    lines: tuple[SummaryLine, ...]

    @property
    def texts(self) -> tuple[str, ...]:
        """Just the sentences."""
        return tuple(line.text for line in self.lines)


@dataclass(frozen=True)
class _Effect:
    verb: str  # adds, removes, raises, lowers (figures); breaks, fixes, new, dropped, still fails
    figure: str | None  # None for a build-status effect
    tone: str

    @property
    def order(self) -> tuple[int, int, int]:
        """Worse before better before neutral; status changes first, then lint changes, then figures by
        importance."""
        tone = {"worse": 0, "better": 1}.get(self.tone, 2)
        if self.verb in _LINT_VERBS:
            return (tone, 1, _LINT_VERBS.index(self.verb))
        if self.figure is None:
            return (tone, 0, _STATUS_ORDER.index(self.verb))
        return (tone, 2, FIGURE_ORDER.get(self.figure, len(FIGURE_ORDER)))


_STATUS_ORDER = ("breaks", "fixes", "still fails", "new", "dropped")
# Lint effects: a new or fixed miscompile suspect (severity error), or lint note.
_LINT_VERBS = ("adds suspect", "removes suspect", "adds note", "removes note")
_LINT_EFFECTS = {
    ("adds", True): _Effect("adds suspect", None, "worse"),
    ("removes", True): _Effect("removes suspect", None, "better"),
    ("adds", False): _Effect("adds note", None, "neutral"),
    ("removes", False): _Effect("removes note", None, "neutral"),
}
_STATUS_EFFECTS = {
    Mark.NEWLY_FAILING: _Effect("breaks", None, "worse"),
    Mark.FIXED: _Effect("fixes", None, "better"),
    Mark.STILL_FAILING: _Effect("still fails", None, "neutral"),
    Mark.ADDED: _Effect("new", None, "neutral"),
    Mark.REMOVED: _Effect("dropped", None, "neutral"),
}


def _lint_effects(row: RowComparison) -> list[_Effect]:
    lint = row.lint_findings
    effects = []
    for verb, found in (("adds", lint.new), ("removes", lint.fixed)):
        for error in (True, False):
            if any(f.is_error == error for f in found):
                effects.append(_LINT_EFFECTS[(verb, error)])
    return effects


def _effects(row: RowComparison) -> list[_Effect]:
    lint = _lint_effects(row)
    if row.mark in _STATUS_EFFECTS:
        return [_STATUS_EFFECTS[row.mark], *lint]
    if row.mark not in FIGURE_MARKS:
        return lint
    changed = {f.name: f for f in row.changed_figures}
    effects = []
    for f in changed.values():
        fig = figure(f.name)
        if fig.companion_of is not None and fig.companion_of in changed:
            continue  # told in the parent's line
        assert f.before is not None and f.after is not None
        if fig.spill and f.before == 0:
            verb = "adds"
        elif fig.spill and f.after == 0:
            verb = "removes"
        else:
            verb = "raises" if f.after > f.before else "lowers"
        effects.append(_Effect(verb, f.name, {"worse": "worse", "better": "better"}.get(f.verdict, "neutral")))
    return effects + lint


# ---- describing a group of builds -------------------------------------------------------------

_TARGET = "\0target"  # a pseudo-axis: targets are described like axis values


def _values(row: RowComparison) -> dict[str, str]:
    return {**row.segments, _TARGET: row.target}


def _constants(rows: list[RowComparison]) -> dict[str, str]:
    """Axes (and the target) that every build having them shares one value of."""
    seen: dict[str, set[str]] = {}
    for row in rows:
        for axis, value in _values(row).items():
            seen.setdefault(axis, set()).add(value)
    return {axis: next(iter(v)) for axis, v in seen.items() if len(v) == 1}


def _axis_order(rows: Iterable[RowComparison]) -> list[str]:
    order: dict[str, None] = {}
    for row in rows:
        order.update(dict.fromkeys(row.segments))
    return list(order)


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _natural(value: str) -> tuple[Any, ...]:
    # tp4 before tp16, nostop before stop: digits compare as numbers.
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", value))


class _Describer:
    """What one comparison knows that descriptions need: every build, and each kind's kernels."""

    def __init__(self, comparison: Comparison):
        self.comparison = comparison
        self.rows = comparison.rows
        self.kernels_of: dict[str, set[str]] = {}  # by the kernel and launch ("": a key's own row)
        for row in self.rows:
            self.kernels_of.setdefault(row.kind, set()).add(row.name.kernel_text)
        self.target_order = {t: i for i, t in enumerate(comparison.targets)}

    def candidates(self, rows: list[RowComparison], effect: _Effect) -> list[RowComparison]:
        """Every build the description of ``rows`` covers, changed or not: the same kernels of the same
        kinds, with the same constant axis values and targets (and, for a figure, built on both sides)."""
        constants = _constants(rows)
        pairs = {(r.kind, r.name.kernel_text) for r in rows}
        out = []
        for row in self.rows:
            if (row.kind, row.name.kernel_text) not in pairs:
                continue
            if effect.figure is not None and not _comparable(row, effect.figure):
                continue
            values = _values(row)
            if all(values.get(axis, value) == value for axis, value in constants.items()):
                out.append(row)
        return out

    def complete(self, rows: list[RowComparison], effect: _Effect) -> bool:
        """True when every build the description covers is in ``rows``."""
        return len(self.candidates(rows, effect)) == len(rows)

    def subject(self, rows: list[RowComparison], effect: _Effect, omit: str | None = None
                ) -> tuple[str, str | None]:
        """``mla_decode and q_b tp8 w8 on gfx950``, and ``5 of 8 builds`` when the description covers
        builds that did not change (else None)."""
        kinds = list(dict.fromkeys(r.kind for r in rows))
        named = []
        for kind in kinds[:MAX_KINDS_NAMED]:
            kernels = sorted({k for r in rows if r.kind == kind and (k := r.name.kernel_text)}, key=str)
            qualify = len(self.kernels_of[kind]) > 1 and set(kernels) != self.kernels_of[kind]
            named.append(f"{kind} ({', '.join(kernels)})" if qualify and kernels else kind)
        if len(kinds) > MAX_KINDS_NAMED:
            named.append(count(len(kinds) - MAX_KINDS_NAMED, "more kind"))
        words = [_join(named)]
        constants = _constants(rows)
        words += [constants[a] for a in _axis_order(rows) if a in constants and a != omit]
        if omit != _TARGET:
            targets = sorted({r.target for r in rows}, key=lambda t: self.target_order.get(t, 99))
            words.append("on " + _join(targets))
        total = len(self.candidates(rows, effect))
        return " ".join(words), (f"{len(rows)} of {total} builds" if total > len(rows) else None)


def _built_with(rows: list[RowComparison]) -> str:
    """What the line's builds were made with that differs: ``; built with num_warps 4 -> 8 in 2 of 3``."""
    told = Counter(c.describe(_ARROW_MARK) for r in rows for c in r.build_changes)
    parts = [d if n == len(rows) else f"{d} in {n} of {len(rows)}" for d, n in told.most_common(MAX_BUILD_CHANGES)]
    more = f" and {len(told) - MAX_BUILD_CHANGES} more" if len(told) > MAX_BUILD_CHANGES else ""
    return "; built with " + ", ".join(parts) + more if told else ""


def _comparable(row: RowComparison, name: str) -> bool:
    f = row.figure(name)
    return (row.mark not in (Mark.NOT_COMPARABLE,) and row.before is not None and row.after is not None
            and row.before.ok and row.after.ok and f is not None and f.before is not None
            and f.after is not None)


# ---- ranges ---------------------------------------------------------------------------------------


def _span(values: list[int]) -> tuple[int, int]:
    return min(values), max(values)


def _fmt_span(span: tuple[int, int]) -> str:
    return str(span[0]) if span[0] == span[1] else f"{span[0]}-{span[1]}"


def _deltas(rows: list[RowComparison], name: str) -> list[FigureDelta]:
    return [f for r in rows if (f := r.figure(name)) is not None and f.before is not None and f.after is not None]


def _arrow(deltas: list[FigureDelta], unit: str) -> str:
    before = _span([d.before for d in deltas if d.before is not None])
    after = _span([d.after for d in deltas if d.after is not None])
    return f"{_fmt_span(before)}{ARROW_GAP}{_fmt_span(after)}{unit}"


def _spread(deltas: list[FigureDelta]) -> int:
    before = _span([d.before for d in deltas if d.before is not None])
    after = _span([d.after for d in deltas if d.after is not None])
    return (before[1] - before[0]) + (after[1] - after[0])


def _values_text(rows: list[RowComparison], name: str) -> tuple[str, str | None]:
    """The range of ``name`` and, for the companions that changed too, theirs (``scratch 0 -> 228 B``)."""
    main_deltas = _deltas(rows, name)
    main = _arrow(main_deltas, figure(name).unit)
    told = []
    for companion in (f for f in BY_IMPORTANCE if f.companion_of == name):
        deltas = _deltas(rows, companion.name)
        # The unified VGPRs of a kernel without AGPRs are its VGPRs: moving exactly as they did, they
        # say nothing more.
        same = (companion.name in _TOLD_WHEN_DIFFERENT
                and [(d.before, d.after) for d in deltas] == [(d.before, d.after) for d in main_deltas])
        if any(d.changed for d in deltas) and not same:
            noun = _COMPANION_NOUN.get(companion.name, companion.noun)
            told.append((f"{noun} " if noun else "") + _arrow(deltas, companion.unit))
    return main, (", ".join(told) or None)


def _segment_of(axis: str) -> Callable[[RowComparison], str]:
    return lambda r: r.segments[axis]


def _breakdown(rows: list[RowComparison], name: str, describer: _Describer
               ) -> tuple[str, list[tuple[str, list[RowComparison]]]] | None:
    """The varying dimension whose parts have clearly different ranges, with the parts; or None."""
    whole = _spread(_deltas(rows, name))
    if whole == 0:
        return None
    constants = _constants(rows)
    dims: list[tuple[str, Callable[[RowComparison], str]]] = []
    common = [a for a in _axis_order(rows) if all(a in r.segments for r in rows) and a not in constants]
    dims += [(a, _segment_of(a)) for a in common]
    dims.append(("\0kind", lambda r: r.kind))
    dims.append((_TARGET, lambda r: r.target))
    best: tuple[tuple[int, int, int], str, list[tuple[str, list[RowComparison]]]] | None = None
    for rank, (dim, value_of) in enumerate(dims):
        parts: dict[str, list[RowComparison]] = {}
        for row in rows:
            parts.setdefault(value_of(row), []).append(row)
        if not 2 <= len(parts) <= MAX_BREAKDOWN_PARTS:
            continue
        texts = [_values_text(p, name) for p in parts.values()]
        if len(set(texts)) < len(texts):
            continue  # two parts read the same: the axis does not explain the spread
        spread = sum(_spread(_deltas(p, name)) for p in parts.values())
        if spread * 2 > whole:
            continue
        if dim == _TARGET:
            ordered = sorted(parts.items(), key=lambda kv: describer.target_order.get(kv[0], 99))
        elif dim == "\0kind":
            ordered = list(parts.items())
        else:
            ordered = sorted(parts.items(), key=lambda kv: _natural(kv[0]))
        score = (spread, len(parts), rank)
        if best is None or score < best[0]:
            best = (score, dim, ordered)
    return None if best is None else (best[1], best[2])


# ---- sentences -------------------------------------------------------------------------------------


_FIGURE_VERB = {"adds": ("adds", "to"), "removes": ("removes", "from"), "raises": ("raises", "of"),
                "lowers": ("lowers", "of")}


def _figure_sentence(rows: list[RowComparison], effect: _Effect, describer: _Describer) -> str:
    assert effect.figure is not None
    verb, prep = _FIGURE_VERB[effect.verb]
    noun = figure(effect.figure).noun
    split = _breakdown(rows, effect.figure, describer)
    if split is None:
        subject, coverage = describer.subject(rows, effect)
        told = "; ".join(t for t in (*_values_text(rows, effect.figure), coverage) if t)
        return f"{verb} {noun} {prep} {subject} ({told})"
    dim, parts = split
    subject, coverage = describer.subject(rows, effect, omit=dim if dim != "\0kind" else None)
    described = []
    shared = _constants(rows)
    for label, part in parts:
        # A part is named by its value of the axis, plus whatever else all its builds share.
        own = _constants(part)
        extra = [own[a] for a in _axis_order(part) if a in own and a not in shared and a != dim]
        main, companion = _values_text(part, effect.figure)
        described.append(" ".join([label, *extra, main]) + (f" ({companion})" if companion else ""))
    return f"{verb} {noun} {prep} {subject}{f' ({coverage})' if coverage else ''}: {', '.join(described)}"


def _first_error(rows: list[RowComparison], side: str) -> str:
    lines = []
    for r in rows:
        row = r.after if side == "after" else r.before
        if row is not None and row.error:
            lines.append(row.error_line[:120])
    if not lines:
        return ""
    (common, _), *rest = Counter(lines).most_common()
    others = f" (and {count(len(rest), 'other error')})" if rest else ""
    return f": {common}{others}"


def _status_sentence(rows: list[RowComparison], effect: _Effect, describer: _Describer) -> str:
    subject, coverage = describer.subject(rows, effect)
    if coverage:
        subject += f" ({coverage})"
    builds = count(len(rows), "build")
    if effect.verb == "breaks":
        return f"breaks {subject}{_first_error(rows, 'after')}"
    if effect.verb == "fixes":
        return f"fixes {subject}"
    if effect.verb == "still fails":
        return f"still fails: {subject}{_first_error(rows, 'after')}"
    if effect.verb == "new":
        return f"adds {builds}: {subject}"
    return f"drops {builds}: {subject}"


def _lint_sentence(rows: list[RowComparison], effect: _Effect, describer: _Describer) -> str:
    subject, coverage = describer.subject(rows, effect)
    if coverage:
        subject += f" ({coverage})"
    verb, kind = effect.verb.split()
    error = kind == "suspect"
    found = [f for r in rows for f in (r.lint_findings.new if verb == "adds" else r.lint_findings.fixed)
             if f.is_error == error]
    names = list(dict.fromkeys(f.argument for f in found))
    what = ("a " if len(names) == 1 else "") + agree(len(names), "miscompile suspect" if error else "kernarg lint note")
    arguments = f"{agree(len(names), 'argument')} {', '.join(names)}"
    if verb == "adds":
        return f"adds {what} to {subject}: {arguments} ({'never read' if error else 'loaded, never read'})"
    return f"removes {what} from {subject}: {arguments}"


def _groups(rows: list[RowComparison], effect: _Effect, describer: _Describer) -> list[list[RowComparison]]:
    # Per kind and kernel first; then merge units whose union keeps every describing value.
    units: dict[tuple[str, str], list[RowComparison]] = {}
    for row in rows:
        units.setdefault((row.kind, row.name.kernel_text), []).append(row)
    merged: list[list[RowComparison]] = []
    mergeable: list[bool] = []
    for unit in units.values():
        complete = describer.complete(unit, effect)
        for i, group in enumerate(merged):
            if not (complete and mergeable[i]):
                continue
            union = group + unit
            if set(_constants(union)) == set(_constants(group)) | set(_constants(unit)):
                merged[i] = union
                break
        else:
            merged.append(list(unit))
            mergeable.append(complete)
    return merged


def summarize(comparison: Comparison) -> Summary:
    """The comparison's sentences: worse changes first, then better, then neutral ones, then a line per
    compiler stage that first differs (:mod:`.stage_summary`), and the totals (a mixed build speaks in a
    worse line and a better one)."""
    describer = _Describer(comparison)
    by_effect: dict[_Effect, list[RowComparison]] = {}
    for row in comparison.rows:
        for effect in _effects(row):
            by_effect.setdefault(effect, []).append(row)
    lines = []
    for effect in sorted(by_effect, key=lambda e: e.order):
        for group in _groups(by_effect[effect], effect, describer):
            if effect.verb in _LINT_VERBS:
                text = _lint_sentence(group, effect, describer)
            elif effect.figure is None:
                text = _status_sentence(group, effect, describer)
            else:
                text = _figure_sentence(group, effect, describer) + _built_with(group)
            line = SummaryLine.of(text, effect.tone, tuple(r.ref for r in group))
            if effect.figure is not None and figure(effect.figure).kind in (REGISTER, SPILL):
                line = replace(line, where=shared_where(group, effect.figure))
            lines.append(line)
    lines += [SummaryLine.of(text, "neutral", rows) for text, rows in stage_sentences(comparison)]
    lines += _closing_lines(comparison)
    return Summary(tuple(lines))


def _closing_lines(comparison: Comparison) -> list[SummaryLine]:
    lines = []
    failing_before, failing_after = comparison.failing_builds
    if not failing_before and not failing_after and comparison.rows:
        both = "with both toolchains" if comparison.across_toolchains else "on both commits"
        lines.append(SummaryLine.of(f"every key builds {both}", "neutral", ()))
    unchanged = comparison.with_mark(Mark.UNCHANGED)
    total = len(comparison.rows)
    if unchanged and len(unchanged) == total:
        lines.append(SummaryLine.of("no figure changed in the one build" if total == 1 else
                                    f"no figure changed in any of the {total} builds", "neutral", ()))
    elif unchanged:
        lines.append(SummaryLine.of(f"{len(unchanged)} of {total} builds unchanged", "neutral",
                                 tuple(r.ref for r in unchanged)))
    not_comparable = comparison.with_mark(Mark.NOT_COMPARABLE)
    if not_comparable:
        n, targets = len(not_comparable), _join(sorted({r.target for r in not_comparable}))
        why = "; ".join(c.describe(_ARROW_MARK) for c in comparison.toolchain_changes)
        lines.append(SummaryLine.of(
            f"{count(n, 'build')} on {targets} {agree(n, 'is')} not comparable: the toolchain differs ({why})",
            "neutral", tuple(r.ref for r in not_comparable)))
    return lines
