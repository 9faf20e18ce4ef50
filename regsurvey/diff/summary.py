"""A comparison in a kernel engineer's words: one line per change that a group of builds shares.

How lines are made (nothing here knows any project's kinds or axes):

1. Each changed build yields **effects**: a status change (``breaks``, ``fixes``, new or dropped
   builds; a build that can no longer launch: its occupancy fell to 0, told by the figure over its
   target's limit, ``model.launch_limit``, rather than as lower occupancy), a lint change (a miscompile
   suspect or a lint note added or removed: kernel arguments loaded and never read) or, per changed
   figure, ``adds``/``removes`` (a spill-like figure from or to zero) or ``raises``/``lowers``. A
   companion figure (scratch beside VGPR spills, spill loads beside spill stores, blocks beside warps)
   rides in its parent's line instead of making its own.
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

from ..model.comparison import FIGURE_MARKS, Comparison, Mark, RowComparison
from ..model.figures import FIGURE_ORDER, OCCUPANCY, REGISTER, SPILL, figure
from ..model.words import ARROW, agree, count
from .ranges import ARROW_GAP, ARROW_MARK, figure_deltas, range_spread, span, span_text, values_text
from .shared_where import SharedWhere, shared_where
from .stage_summary import stage_sentences

MAX_BREAKDOWN_PARTS = 4
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
    # adds, removes, raises, lowers (figures); breaks, cannot launch, fixes, new, dropped, still fails
    verb: str
    # None for a build-status effect; a build that can no longer launch: the figure over its target's limit
    # (model.launch_limit), else its occupancy figure
    figure: str | None
    tone: str
    bound: str = ""  # a build that can no longer launch: the limit its figure is above (LaunchLimit.bound)

    @property
    def order(self) -> tuple[int, int, int]:
        """Worse before better before neutral; status changes first, then lint changes, then figures by
        importance."""
        tone = {"worse": 0, "better": 1}.get(self.tone, 2)
        if self.verb in _LINT_VERBS:
            return (tone, 1, _LINT_VERBS.index(self.verb))
        if self.verb in _STATUS_ORDER:
            return (tone, 0, _STATUS_ORDER.index(self.verb))
        return (tone, 2, FIGURE_ORDER.get(self.figure or "", len(FIGURE_ORDER)))


_NO_LAUNCH = "cannot launch"
_STATUS_ORDER = ("breaks", _NO_LAUNCH, "fixes", "still fails", "new", "dropped")
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
    effects = [_no_launch_effect(row)] if row.no_longer_launches else []
    for f in changed.values():
        fig = figure(f.name)
        if fig.companion_of is not None and fig.companion_of in changed:
            continue  # told in the parent's line
        if fig.kind == OCCUPANCY and row.no_longer_launches:
            continue  # told as the build that can no longer launch
        assert f.before is not None and f.after is not None
        if fig.spill and f.before == 0:
            verb = "adds"
        elif fig.spill and f.after == 0:
            verb = "removes"
        else:
            verb = "raises" if f.after > f.before else "lowers"
        effects.append(_Effect(verb, f.name, {"worse": "worse", "better": "better"}.get(f.verdict, "neutral")))
    return effects + lint


def _no_launch_effect(row: RowComparison) -> _Effect:
    """A build that can no longer launch: by the figure over its target's limit, where its figures show
    one, else by its occupancy."""
    limit = row.launch_limit
    if limit is not None:
        return _Effect(_NO_LAUNCH, limit.figure, "worse", limit.bound)
    fallen = [f.name for f in row.figures if figure(f.name).kind == OCCUPANCY and f.after == 0]
    # Waves per SIMD or warps per SM, not blocks per SM (which fall with warps).
    return _Effect(_NO_LAUNCH, next((n for n in fallen if figure(n).worse), fallen[0]), "worse")


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
    told = Counter(c.describe(ARROW_MARK) for r in rows for c in r.build_changes)
    parts = [d if n == len(rows) else f"{d} in {n} of {len(rows)}" for d, n in told.most_common(MAX_BUILD_CHANGES)]
    more = f" and {len(told) - MAX_BUILD_CHANGES} more" if len(told) > MAX_BUILD_CHANGES else ""
    return "; built with " + ", ".join(parts) + more if told else ""


def _comparable(row: RowComparison, name: str) -> bool:
    f = row.figure(name)
    return (row.mark not in (Mark.NOT_COMPARABLE,) and row.before is not None and row.after is not None
            and row.before.ok and row.after.ok and f is not None and f.before is not None
            and f.after is not None)


# ---- ranges split by an axis --------------------------------------------------------------------


def _segment_of(axis: str) -> Callable[[RowComparison], str]:
    return lambda r: r.segments[axis]


def _breakdown(rows: list[RowComparison], name: str, describer: _Describer
               ) -> tuple[str, list[tuple[str, list[RowComparison]]]] | None:
    """The varying dimension whose parts have clearly different ranges, with the parts; or None."""
    whole = range_spread(figure_deltas(rows, name))
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
        texts = [values_text(p, name) for p in parts.values()]
        if len(set(texts)) < len(texts):
            continue  # two parts read the same: the axis does not explain the spread
        spread = sum(range_spread(figure_deltas(p, name)) for p in parts.values())
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
        told = "; ".join(t for t in (*values_text(rows, effect.figure), coverage) if t)
        return f"{verb} {noun} {prep} {subject} ({told})"
    dim, parts = split
    subject, coverage = describer.subject(rows, effect, omit=dim if dim != "\0kind" else None)
    described = []
    shared = _constants(rows)
    for label, part in parts:
        # A part is named by its value of the axis, plus whatever else all its builds share.
        own = _constants(part)
        extra = [own[a] for a in _axis_order(part) if a in own and a not in shared and a != dim]
        main, companion = values_text(part, effect.figure)
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


def _no_launch_sentence(rows: list[RowComparison], effect: _Effect, describer: _Describer) -> str:
    """``2 of 6 builds of mm bf16 on gfx950 can no longer launch (LDS 168880-236976 B, above the CU's
    163840 B)``; where the figures show no limit, its occupancy: ``(occupancy 2-6 -> 0 waves/SIMD)``."""
    assert effect.figure is not None
    subject, coverage = describer.subject(rows, effect)
    builds = coverage or count(len(rows), "build")
    limits = [limit for r in rows if (limit := r.launch_limit) is not None]
    if effect.bound and limits:
        told = limits[0].describe(span_text(span([limit.value for limit in limits])))
    else:
        told = f"{figure(effect.figure).noun} {values_text(rows, effect.figure)[0]}"
    return f"{builds} of {subject} can no longer launch ({told})"


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
            elif effect.verb == _NO_LAUNCH:
                text = _no_launch_sentence(group, effect, describer) + _built_with(group)
            elif effect.figure is None:
                text = _status_sentence(group, effect, describer)
            else:
                text = _figure_sentence(group, effect, describer) + _built_with(group)
            line = SummaryLine.of(text, effect.tone, tuple(r.ref for r in group))
            if (effect.figure is not None and effect.verb not in _STATUS_ORDER
                    and figure(effect.figure).kind in (REGISTER, SPILL)):
                line = replace(line, where=shared_where(group, effect.figure))
            lines.append(line)
    lines += [SummaryLine.of(text, "neutral", rows) for text, rows in stage_sentences(comparison)]
    lines += _closing_lines(comparison)
    return Summary(tuple(lines))


def _both_sides(comparison: Comparison) -> str:
    """What the two sides are, for the closing lines: commits, a revision's two toolchains (``upgrade``), or
    two revisions each with its own toolchain (``check --base-toolchain``)."""
    if not comparison.across_toolchains:
        return "on both commits"
    same = comparison.base.commit == comparison.head.commit and comparison.base.dirty == comparison.head.dirty
    return "with both toolchains" if same else "on both sides"


def _closing_lines(comparison: Comparison) -> list[SummaryLine]:
    lines = []
    failing_before, failing_after = comparison.failing_builds
    if not failing_before and not failing_after and comparison.rows:
        lines.append(SummaryLine.of(f"every key builds {_both_sides(comparison)}", "neutral", ()))
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
        why = "; ".join(c.describe(ARROW_MARK) for c in comparison.toolchain_changes)
        lines.append(SummaryLine.of(
            f"{count(n, 'build')} on {targets} {agree(n, 'is')} not comparable: the toolchain differs ({why})",
            "neutral", tuple(r.ref for r in not_comparable)))
    return lines
