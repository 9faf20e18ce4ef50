"""Comparing two surveys build by build: the engine behind ``diff``, ``stack`` and ``check``.

Rows are matched by target and :attr:`Row.row_id` (key, launch, autotune config), the builds of an
autotuned launch by what their config built them with first (:func:`matched_builds`); a key a kind body
skipped (``rs.skip``) is no build: it is left out of the matching and listed apart. Each matched pair
gets a :class:`FigureDelta` per figure, a :class:`LintChange` (the kernarg lint's findings on both
sides, as the surveys recorded them) and one :class:`Mark`, as ``asv compare`` marks its rows. The
result is a :class:`~regsurvey.model.comparison.Comparison`, a pure function of the two surveys (no
compiling, no reading objects, no linting).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ..model.comparison import (
    BuildChange,
    Comparison,
    FigureDelta,
    LintChange,
    Mark,
    RowComparison,
    SkippedKey,
    Stack,
    StackStep,
    SurveyInfo,
    ToolchainChange,
)
from ..model.compile_time import CompileTime
from ..model.figures import FIGURE_ORDER
from ..model.findings import Finding
from ..model.launch_limit import stops_launching
from ..model.names import build_names
from ..model.no_effect import KnobsWithoutEffect, knobs_without_effect
from ..model.results import Row, Survey
from ..model.targets import TARGETS
from ..model.toolchain_change import differing_parts
from ..model.words import ASCII_ARROW


def toolchain_changes(base: Survey, head: Survey) -> tuple[ToolchainChange, ...]:
    """Every toolchain part that differs, per backend both surveys used."""
    changes = []
    for backend in sorted(set(base.toolchain) & set(head.toolchain)):
        before, after = base.toolchain[backend] or {}, head.toolchain[backend] or {}
        for part in sorted(differing_parts(before, after)):
            changes.append(ToolchainChange(backend, part, before.get(part), after.get(part)))
    return tuple(changes)


def _backend(target: str) -> str | None:
    t = TARGETS.get(target)
    return t.backend if t is not None else None


def _figures(before: Row | None, after: Row | None) -> tuple[FigureDelta, ...]:
    names: dict[str, None] = {}
    for row in (before, after):
        if row is not None:
            names.update(dict.fromkeys(row.resources))
    ordered = sorted(names, key=lambda n: FIGURE_ORDER.get(n, len(FIGURE_ORDER)))
    return tuple(FigureDelta(n, before.resources.get(n) if before else None,
                             after.resources.get(n) if after else None) for n in ordered)


def _lint_change(before: Row | None, after: Row | None) -> LintChange:
    def side(row: Row | None) -> tuple[Finding, ...] | None:
        return row.lint if row is not None and row.ok else None
    return LintChange(side(before), side(after))


def _mark(before: Row | None, after: Row | None, figures: Iterable[FigureDelta], lint: LintChange) -> Mark:
    if before is None:
        return Mark.ADDED
    if after is None:
        return Mark.REMOVED
    if not before.ok:
        return Mark.STILL_FAILING if not after.ok else Mark.FIXED
    if not after.ok:
        return Mark.NEWLY_FAILING
    figures = list(figures)
    verdicts = {f.verdict for f in figures}
    # A new miscompile suspect weighs like a figure that got worse; a new or fixed note is neutral.
    worse = "worse" in verdicts or bool(lint.new_errors)
    better = "better" in verdicts or bool(lint.fixed_errors)
    if worse:
        # A build whose occupancy fell to 0 can no longer launch (its LDS or registers exceed what the GPU
        # has): nothing it gained makes up for that.
        no_launch = any(stops_launching(f.name, f.before, f.after) for f in figures)
        return Mark.WORSE if no_launch or not better else Mark.MIXED
    if better:
        return Mark.BETTER
    if "changed" in verdicts or lint.changed:
        return Mark.CHANGED
    return Mark.UNCHANGED


def compile_time(before: Row | None, after: Row | None) -> CompileTime | None:
    """One build's compile time on both sides, where each side measured a compile of its build: both
    built, both with the seconds of its stages (a side Triton's own cache served, or a survey before
    they were measured, has none), and different kernels (an equal Triton hash is the same kernel, the
    same toolchain: a difference in its seconds is the machine's, not the change's). A side reused from
    an earlier compile (``Row.reused``) carries that compile's measurement: the build's own, taken when
    it was compiled, and compared as such (a gate run again on a warm store judges what a cold one did)."""
    if before is None or after is None or not (before.ok and after.ok):
        return None
    if before.stage_s is None or after.stage_s is None:
        return None
    if before.triton_hash is not None and before.triton_hash == after.triton_hash:
        return None
    return CompileTime(before.compile_s, after.compile_s, before.stage_s, after.stage_s,
                       reused_before=before.reused, reused_after=after.reused)


# What a build is made with besides its source and constexprs, compared as the build's own changes.
_BUILD_OPTIONS = ("num_warps", "num_stages")


def build_changes(before: Row | None, after: Row | None) -> tuple[BuildChange, ...]:
    """What the two sides' builds were made with that differs: ``num_warps``, ``num_stages``, then each
    constexpr (in the head's argument order) where both surveys recorded them. Nothing for a build only
    one side has. (An autotune config's kwargs are constexprs; its index is no part of what a build is
    made with: :func:`matched_builds` pairs a config that moved in the list with itself, at no change.)"""
    if before is None or after is None:
        return ()
    changes = [BuildChange(name, getattr(before, name), getattr(after, name)) for name in _BUILD_OPTIONS
               if getattr(before, name) is not None and getattr(after, name) is not None
               and getattr(before, name) != getattr(after, name)]
    if before.build is not None and after.build is not None:
        for name in dict.fromkeys([*after.build, *before.build]):
            was, now = before.build.get(name), after.build.get(name)
            if was != now or (name in before.build) != (name in after.build):
                changes.append(BuildChange(name, was, now, constexpr=True))
    return tuple(changes)


def _config_values(row: Row) -> tuple[Any, ...] | None:
    """What an autotuned build was built with, to find its config on the other side whatever its index:
    the key and target, the kernel and the kind body's name for the launch, the launch options and every
    constexpr the build recorded (the config's kwargs, heuristics' values). None for a build of no autotune
    config, or of a survey that did not record its constexprs (schema < 3): paired by its row id only."""
    if row.config is None or row.build is None:
        return None
    return (row.target, row.key, row.kernel, row.name, row.num_warps, row.num_stages, frozenset(row.build.items()))


def matched_builds(before: Iterable[Row], after: Iterable[Row]) -> list[tuple[Row | None, Row | None]]:
    """The builds of two surveys in pairs, a side None where the other survey lacks the build.

    The builds of an autotuned kernel are paired by their config's values first (:func:`_config_values`),
    wherever the config is in the list: each config is a launch of its own (``key#2@cfg2``), so a config
    moved in the list, or one inserted before it, is the same build under another launch and config index
    (fla's ``chunk_fwd_kernel_o`` gained a config in front of its two under Triton 3.9). Builds of equal
    values pair in launch order (a key launching one autotuned kernel twice). Every other build is paired
    by its row id, a config whose values changed in place among them: it is a changed build. Pairs by
    value come first, then the rest in the order of both sides' rows; :func:`compare` sorts them."""
    before, after = list(before), list(after)
    waiting: dict[tuple[Any, ...], list[Row]] = {}
    for row in before:
        if (values := _config_values(row)) is not None:
            waiting.setdefault(values, []).append(row)
    for rows in waiting.values():
        rows.sort(key=lambda r: r.launch)
    pairs: list[tuple[Row | None, Row | None]] = []
    paired: set[int] = set()  # ids of the rows paired by value, of both sides
    for row in sorted(after, key=lambda r: r.launch):
        values = _config_values(row)
        found = waiting.get(values) if values is not None else None
        if found:
            match = found.pop(0)
            pairs.append((match, row))
            paired.update((id(match), id(row)))
    rest_before = {(r.target, r.row_id): r for r in before if id(r) not in paired}
    rest_after = {(r.target, r.row_id): r for r in after if id(r) not in paired}
    pairs += [(rest_before.get(ref), rest_after.get(ref)) for ref in dict.fromkeys([*rest_before, *rest_after])]
    return pairs


def paired_row_id(before: Row | None, after: Row | None) -> str:
    """The id of a build on both sides: its row id (the head's where the head has the build); a build the two
    sides built under different row ids (an autotune config moved in the list), both, the base's first:
    ``gemm/w2@cfg0->gemm/w2#1@cfg1``, so that no two builds of a comparison share one."""
    row = after or before
    assert row is not None
    if before is not None and after is not None and before.row_id != after.row_id:
        return f"{before.row_id}{ASCII_ARROW}{after.row_id}"
    return row.row_id


def compare(base: Survey, head: Survey, across_toolchains: bool = False) -> Comparison:
    """Match the two surveys' builds (:func:`matched_builds`), and mark each pair.

    Rows are in key order (the head's, with keys only the base has slotted in after the key that
    preceded them there), then target, launch and config (the head's, where the head has the build):
    the same whether a survey was made now or read back from the store (which keeps one file per
    target). A backend whose toolchain differs between the surveys makes its rows ``not comparable``
    (their figures are still shown), unless ``across_toolchains`` asks to judge what the toolchain
    changed (``upgrade``, ``diff --across-toolchains``): then they are marked as any others, and the
    comparison still names every part of the toolchain that differs.
    """
    changes = toolchain_changes(base, head)
    changed_backends = set() if across_toolchains else {c.backend for c in changes}
    skipped_before = {(r.target, r.key): r for r in base.rows if r.skipped}
    skipped_after = {(r.target, r.key): r for r in head.rows if r.skipped}
    key_rank = {k: i for i, k in enumerate(_merged_order(list(dict.fromkeys(r.key for r in base.rows)),
                                                          list(dict.fromkeys(r.key for r in head.rows))))}
    target_rank = {t: i for i, t in enumerate(dict.fromkeys(head.targets + base.targets))}

    def rank(pair: tuple[Row | None, Row | None]) -> tuple[int, int, int, int, bool]:
        row = pair[1] or pair[0]
        assert row is not None
        return (key_rank[row.key], target_rank.get(row.target, len(target_rank)), row.launch,
                -1 if row.config is None else row.config, pair[1] is None)

    pairs = sorted(matched_builds([r for r in base.rows if not r.skipped], [r for r in head.rows if not r.skipped]),
                   key=rank)
    names_before, names_after = build_names(base.rows), build_names(head.rows)
    rows = []
    for before, after in pairs:
        row = after or before
        assert row is not None
        figures = _figures(before, after)
        lint = _lint_change(before, after)
        note = None
        backend_changes: tuple[ToolchainChange, ...] = ()
        backend = _backend(row.target)
        flaky = [r for r in (before, after) if r is not None and r.is_flaky]
        if backend in changed_backends and before is not None and after is not None:
            mark = Mark.NOT_COMPARABLE
            backend_changes = tuple(c for c in changes if c.backend == backend)
            # The JSON's words: each report draws its own arrow from ``toolchain_changes``.
            note = "; ".join(c.describe(ASCII_ARROW) for c in backend_changes)
        elif flaky:  # the toolchain's intermittent failure, twice: neither a build nor a failure
            mark = Mark.NOT_COMPARABLE
            note = f"flaky on the {'base' if flaky[0] is before else 'head'}: {flaky[0].error_line}"
        else:
            mark = _mark(before, after, figures, lint)
            skip = (skipped_before if after is not None else skipped_after).get((row.target, row.key))
            if (before is None or after is None) and skip is not None:
                note = f"skipped on the {'base' if after is not None else 'head'}: {_reason(skip)}"
        name = names_after[(row.target, row.row_id)] if after is not None else names_before[(row.target, row.row_id)]
        if before is not None and after is not None and before.config != after.config:
            name = replace(name, base_config=before.config)
        rows.append(RowComparison(
            target=row.target, row_id=paired_row_id(before, after), key=row.key, kind=row.kind, axes=dict(row.axes),
            kernel=(after.kernel if after is not None and after.kernel else before.kernel if before else None),
            launch=row.launch, config=row.config, mark=mark, figures=figures, before=before, after=after,
            note=note, lint_findings=lint, toolchain_changes=backend_changes,
            build_changes=build_changes(before, after), name=name, compile_time=compile_time(before, after)))
    skipped = []
    for ref in dict.fromkeys([*skipped_before, *skipped_after]):
        was, now = skipped_before.get(ref), skipped_after.get(ref)
        skipped.append(SkippedKey(target=ref[0], key=ref[1], kind=(now or was).kind,  # type: ignore[union-attr]
                                  before=_reason(was), after=_reason(now)))
    return Comparison(base=SurveyInfo.of(base), head=SurveyInfo.of(head), rows=tuple(rows),
                      toolchain_changes=changes, skipped=tuple(skipped),
                      across_toolchains=across_toolchains and bool(changes),
                      no_effect=KnobsWithoutEffect(knobs_without_effect(head.rows), knobs_without_effect(base.rows)))


def _reason(row: Row | None) -> str | None:
    return None if row is None else row.skip_reason or "no reason given"


def _merged_order(before: list[str], after: list[str]) -> list[str]:
    # The head's order, with each base-only item slotted in after its predecessor in the base.
    in_after = set(after)
    follow: dict[str | None, list[str]] = {}
    previous: str | None = None
    for ref in before:
        if ref in in_after:
            previous = ref
        else:
            follow.setdefault(previous, []).append(ref)
    merged = list(follow.pop(None, []))
    for ref in after:
        merged.append(ref)
        merged.extend(follow.pop(ref, []))
    for rest in follow.values():  # predecessors that vanished: keep them at the end
        merged.extend(rest)
    return merged


def stack(surveys: list[Survey], subjects: list[str]) -> Stack:
    """``surveys[0]`` is the base, then each commit of the range in order (``subjects`` for those)."""
    if len(surveys) < 2 or len(subjects) != len(surveys) - 1:
        raise ValueError("a stack needs the base survey and one survey per commit of the range")
    steps = tuple(StackStep(commit=after.commit or after.label, subject=subject,
                            comparison=compare(before, after))
                  for before, after, subject in zip(surveys, surveys[1:], subjects))
    return Stack(base=SurveyInfo.of(surveys[0]), head=SurveyInfo.of(surveys[-1]), steps=steps,
                 overall=compare(surveys[0], surveys[-1]))


__all__ = ["build_changes", "compare", "compile_time", "matched_builds", "paired_row_id", "stack",
           "toolchain_changes"]
