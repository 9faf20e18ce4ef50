"""``regsurvey fix``: builds that spill or lost occupancy compiled again with their launch options and constexprs
changed, and ranked.

The builds come from the revision's survey (stored, else surveyed: :func:`.obtain.obtain_survey`); their
variants (:mod:`regsurvey.tuning.sweep`) are keys of their own, surveyed by the one survey engine (its workers,
``-j``, the warm server, the result cache: a variant compiled once is never compiled again), each key's kind
body run with the variant in its capture session, where the launch hooks apply it (``compile.toolchain``).
Nothing of the variants' survey is stored as the revision's.
"""

from __future__ import annotations

import fnmatch
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..compile.toolchain import launch_option_names
from ..engine.llvm_variants import recompiled
from ..engine.survey import survey_checkout
from ..errors import CorruptObjectError
from ..model.fix import BuildFix, FixReport, Variant
from ..model.keys import Key
from ..model.names import build_names
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import NO_FIGURES, Row, Status, Survey
from ..model.targets import get_target
from ..model.words import count
from ..objects.object_sections import code_differs
from ..repo.checkout import commit_checkout, working_tree
from ..store.store import Store
from ..tuning.sweep import SpaceError, config_blocks, knobs_for, ranked, variants_for
from .obtain import obtain_survey

# How many variants a sweep compiles at most, unless --max says otherwise.
DEFAULT_MAX_VARIANTS = 64
# A build is swept where it spills, or runs at low occupancy (run --only low-occupancy's rule).
LOW_OCCUPANCY_SHARE = 8


class FixInputError(ValueError):
    """Bad input for a sweep (one line, exit status 2)."""


@dataclass(frozen=True)
class Plan:
    """What a sweep will compile: each build with its variants, and the seconds that should take."""

    builds: tuple[tuple[Row, str, tuple[Variant, ...]], ...]  # (base row, its name, its variants)
    estimate_s: float  # compile seconds of all the variants, from the base builds' measured compiles

    @property
    def variants(self) -> int:
        """How many variants, controls included."""
        return sum(len(v) for _, _, v in self.builds)

    def describe(self, jobs: int) -> str:
        """``fix: 2 builds, 24 variants to compile (about 1m10s of compile; about 35 s on 2 workers)``."""
        spread = self.estimate_s / max(1, min(jobs, self.variants))
        return (f"fix: {count(len(self.builds), 'build')}, {count(self.variants, 'variant')} to compile (about "
                f"{_seconds(self.estimate_s)} of compile, the base builds' own compile times; about "
                f"{_seconds(spread)} on {count(jobs, 'worker')})")


def _seconds(s: float) -> str:
    return f"{int(s // 60)}m{int(s % 60):02d}s" if s >= 60 else f"{s:.0f} s" if s >= 10 else f"{s:.1f} s"


def swept_builds(survey: Survey, key: str | None, kernel: str | None, config: int | None,
                 launch: int | None = None) -> list[Row]:
    """The builds of ``survey`` to sweep: those ``key`` (an id or glob; None: every key surveyed), ``kernel``,
    ``config`` and ``launch`` (the launch's index in its key) select; where they select several, only those
    that spill or run at low occupancy."""
    rows = [r for r in survey.rows if r.ok and r.object is not None]
    if key is not None:
        rows = [r for r in rows if r.key == key or fnmatch.fnmatchcase(r.key, key)]
        if not rows:
            raise FixInputError(f"no key {key!r} built in the survey of {survey.label}")
    if kernel is not None:
        rows = [r for r in rows if kernel in (r.kernel, r.name)]
        if not rows:
            raise FixInputError(f"no build of {key or 'the selection'} runs kernel {kernel!r}")
    if config is not None:
        rows = [r for r in rows if r.config == config]
        if not rows:
            raise FixInputError(f"no build of {key or 'the selection'} has autotune config {config}")
    if launch is not None:
        rows = [r for r in rows if r.launch == launch]
        if not rows:
            raise FixInputError(f"no build of {key or 'the selection'} is launch {launch} of its key")
    if len(rows) > 1:
        rows = [r for r in rows if _problem(r)]
        if not rows:
            raise FixInputError(f"none of the builds {key or 'selected'} spills or runs at low occupancy: "
                                f"name one build (a key, --kernel, --config) to sweep it anyway")
    return rows


def _problem(row: Row) -> bool:
    figures, target = row.resources, get_target(row.target)
    spills = sum(figures.get(name) or 0 for name in ("vgpr_spill", "sgpr_spill", "spill_store_bytes",
                                                      "loop_spill_ops"))
    occupancy = figures.get("occupancy_warps" if target.is_nvidia else "occupancy")
    most = target.max_waves_per_simd  # (warps per SM on NVIDIA: run --only low-occupancy's rule)
    return spills > 0 or (occupancy is not None and occupancy * LOW_OCCUPANCY_SHARE <= most)


def plan(survey: Survey, builds: list[Row], asked: list[tuple[str, tuple[Any, ...]]], limit: int,
         python_name: Callable[[Row], str]) -> Plan:
    """Each build's variants (:func:`regsurvey.tuning.sweep.variants_for`); FixInputError where a knob asked
    for does not exist or the variants are more than ``limit``."""
    names = build_names(survey.rows)
    options: dict[str, frozenset[str]] = {}
    planned = []
    estimate = 0.0
    for row in builds:
        if row.target not in options:
            options[row.target] = launch_option_names(get_target(row.target))
        try:
            knobs = knobs_for(row, asked, options[row.target])
        except SpaceError as exc:
            raise FixInputError(str(exc)) from None
        blocks = [] if asked else config_blocks(row, survey.rows)
        variants = tuple(variants_for(row, python_name(row), knobs, blocks, combine=bool(asked)))
        planned.append((row, f"{row.key} {names[(row.target, row.row_id)].text}", variants))
        estimate += len(variants) * max(row.compile_s, 0.1)
    result = Plan(tuple(planned), estimate)
    if result.variants > limit:
        raise FixInputError(f"the sweep has {count(result.variants, 'variant')} ({count(len(builds), 'build')}), "
                            f"more than --max {limit}: name fewer builds or knobs, or raise --max")
    return result


def variant_key(key: Key, variant: Variant, launch: int) -> Key:
    """The key that compiles ``variant`` of ``key``'s build at launch index ``launch`` (two builds of one key
    swept together each have their own variants' keys, even where their variants read the same)."""
    suffix = "control " if variant.control else ""
    return replace(key, id=f"{key.id}~#{launch} {suffix}{variant.label}{_config_part(variant)}", variant=variant)


def _config_part(variant: Variant) -> str:
    return f"@cfg{variant.config}" if variant.config is not None else ""


def run_plan(start: Path, rev: str | None, store: Store, options: SurveyOptions, the_plan: Plan,
             progress: Progress | None = None, label: str = "", toolchain_id: str = "") -> FixReport:
    """Compile every variant of ``the_plan`` (one survey of their keys; the LLVM-option variants from the
    base builds' stored LLVM IR, :mod:`regsurvey.engine.llvm_variants`, ``toolchain_id`` naming the
    toolchain that compiles them) and rank each build's."""
    began = time.monotonic()
    def keys_for(listed: list[Key]) -> list[Key]:
        keys = []
        for key in listed:
            for row, _, variants in the_plan.builds:
                if (row.key, row.target) == (key.id, key.target):
                    keys += [variant_key(key, variant, row.launch) for variant in variants if variant.llvm is None]
        return keys

    targets = tuple(dict.fromkeys(row.target for row, _, _ in the_plan.builds))
    kinds = tuple(dict.fromkeys(row.kind for row, _, _ in the_plan.builds))
    asked = replace(options, targets=targets, kinds=kinds, keys=())
    by_key: dict[tuple[str, str], list[Row]] = {}
    survey_label = label
    if any(v.llvm is None for _, _, variants in the_plan.builds for v in variants):
        if rev is None:
            survey = survey_checkout(working_tree(start), store.objects.root, asked, progress, keys_for)
        else:
            with commit_checkout(start, rev) as checkout:
                survey = survey_checkout(checkout, store.objects.root, asked, progress, keys_for)
        survey_label = survey_label or survey.label
        for r in survey.rows:
            by_key.setdefault((r.key, r.target), []).append(r)
    fixes: list[BuildFix] = []
    for base, name, variants in the_plan.builds:
        tried = []
        for variant in variants:
            if variant.llvm is None:
                key = variant_key(_key_of(base), variant, base.launch)
                tried.append((variant, _matching(base, by_key.get((key.id, key.target), []))))
        llvm = [v for v in variants if v.llvm is not None]
        if llvm:
            tried += recompiled(store, base, llvm, options.jobs, options.toolchain, options.timeout, toolchain_id)
        fixes.append(ranked(name, base, tried, lambda a, b: _same_code(store, a, b)))
    return FixReport(survey_label or "", tuple(fixes), the_plan.variants, round(time.monotonic() - began, 1))


def _same_code(store: Store, a: Row, b: Row) -> bool:
    """True when two builds' objects differ in their debug sections only (the paths of the checkouts they were
    compiled from: Triton's cache, keyed without them, hands an object from another checkout out)."""
    if a.object is None or b.object is None:
        return False
    try:
        return code_differs(store.objects.get(a.object.path, a.object.sha256),
                            store.objects.get(b.object.path, b.object.sha256)) is False
    except CorruptObjectError:
        return False


def _key_of(row: Row) -> Key:
    return Key(kind=row.kind, axes=tuple(row.axes.items()), target=row.target, id=row.key)


def _matching(base: Row, rows: list[Row]) -> Row:
    """The variant's build of the base's launch: the row of its key with the base's launch name and config
    (the one at the base's launch index where several are); else the key's own error row (its body raised),
    else a row saying none came."""
    same = [r for r in rows if r.kernel is not None and r.name == base.name and r.config == base.config]
    if len(same) == 1:
        return same[0]
    if same:
        exact = [r for r in same if r.launch == base.launch]
        return exact[0] if exact else same[0]
    errors = [r for r in rows if not r.ok]
    if errors:
        return errors[0]
    return replace(base, key=rows[0].key if rows else base.key, resources=NO_FIGURES, status=Status.ERROR,
                   object=None, error="the variant made no build of this launch")


def sweep(start: Path, rev: str | None, store: Store, options: SurveyOptions, *, key: str | None,
          kernel: str | None, config: int | None, knobs: list[tuple[str, tuple[Any, ...]]], limit: int,
          announce: Callable[[str], None], progress: Progress | None = None, launch: int | None = None) -> FixReport:
    """The whole sweep: the base survey, the builds, the plan (said through ``announce`` before anything
    compiles), the variants compiled and ranked."""
    base = obtain_survey(start, rev, store, options, progress)
    builds = swept_builds(base, key, kernel, config, launch)
    the_plan = plan(base, builds, knobs, limit, python_kernel_name)
    announce(the_plan.describe(options.jobs))
    toolchain_id = json.dumps(base.toolchain, sort_keys=True, default=str)
    return run_plan(start, rev, store, options, the_plan, progress, base.label, toolchain_id)


def python_kernel_name(row: Row) -> str:
    """The jit function's Python name a build's variants change: the kernel it was compiled under (a kernel
    with a ``repr`` of its own is named by it, and its variants then match nothing: the sweep says so)."""
    return row.kernel or ""
