"""Judging a comparison as a pre-merge gate: which builds fail it, under which rule, and which worse
figures the baseline allows.

The rules (each can be switched in the baseline's ``[check]`` table, see :class:`CheckRules`):

- ``regsurvey/newly-failing``: a build that built on the base fails on the head; so does a build new
  on the head that fails (a key nobody could ever build is no better).
- ``regsurvey/kernarg-never-read``: the kernarg lint has a new finding of severity ``error`` on the
  head's build: an argument the source uses that the machine code loads and never reads.
- ``regsurvey/new-spill``: a spill figure (VGPR or SGPR spills, scratch; spill stores or loads, stack)
  is higher than on the base; a build new on the head (or one that failed on the base) is measured
  against zero.
- ``regsurvey/loop-spill``: more spill instructions inside the machine code's loops (``loop_spill_ops``)
  or a spill in a deeper loop (``loop_spill_depth``) than on the base; a build new on the head is measured
  against zero. Judged apart from ``new-spill``: an entry allowing a kernel's spills (``vgpr_spill = 64``:
  its prologue's) does not allow them in its loops unless it names ``loop_spill_ops`` too.
- ``regsurvey/occupancy-drop``: fewer waves per SIMD (AMD) or warps per SM (NVIDIA) than on the base,
  whatever the cause (registers, LDS, shared memory).
- ``regsurvey/register-increase``: a register count (VGPR, AGPR, SGPR; NVIDIA registers) up by more
  than ``register_increase``; off unless the baseline sets it.
- ``regsurvey/compile-slowdown``: a pathological compile-time slowdown: the build's compile took at
  least ``compile_slowdown`` times as long as the base's (10) and over ``compile_slowdown_s`` seconds
  (30) now. Compared only where both sides measured a compile of their own build (``diff.core.compile_time``:
  a reused build's measurement is the one its compile made); no baseline entry allows it, the rule's
  thresholds do (``[check]``, or ``check --compile-slowdown``).

A worse figure passes when a baseline entry matching the build allows the head's value. Builds whose
toolchains differ are not judged (their figures are not comparable). Lint findings have no allowance:
a miscompile suspect is fixed, or the rule is switched off.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.comparison import Comparison, FigureDelta, Mark, RowComparison
from ..model.figures import JUDGED_REGISTERS, OCCUPANCY, SPILL, figure
from ..model.figures import LOOP_SPILL as LOOP_SPILL_KIND
from ..model.findings import Finding
from .baseline import Allowance, Baseline, parse_baseline, updated_baseline_text


@dataclass(frozen=True)
class Rule:
    """One reason to fail the gate, as code scanning names it."""

    id: str  # "regsurvey/new-spill"
    name: str  # "NewSpill": SARIF's reportingDescriptor name
    title: str  # "spill increase": how reports head its problems
    description: str


NEWLY_FAILING = Rule("regsurvey/newly-failing", "NewlyFailing", "newly failing",
                     "A build that built on the base fails to build on the head (or a build new on the head fails).")
KERNARG_NEVER_READ = Rule(
    "regsurvey/kernarg-never-read", "KernargNeverRead", "miscompile suspect",
    "The compiled kernel loads an argument that the source uses and never reads it: a new finding of "
    "the kernarg lint with severity error.")
NEW_SPILL = Rule(
    "regsurvey/new-spill", "NewSpill", "spill increase",
    "A spill figure (VGPR or SGPR spills, scratch; spill stores, spill loads, stack) is higher than on "
    "the base (than zero for a new build), past what the baseline allows.")
LOOP_SPILL = Rule(
    "regsurvey/loop-spill", "LoopSpill", "spills in loops",
    "More spill instructions inside the machine code's loops than on the base (than zero for a new build), or "
    "a spill in a deeper loop, past what the baseline allows: a spill in a loop is paid on every trip.")
OCCUPANCY_DROP = Rule(
    "regsurvey/occupancy-drop", "OccupancyDrop", "occupancy drop",
    "Occupancy (waves per SIMD on AMD, warps per SM on NVIDIA) is lower than on the base, past what the "
    "baseline allows.")
REGISTER_INCREASE = Rule(
    "regsurvey/register-increase", "RegisterIncrease", "register increase",
    "A register count rose by more than the baseline's [check] register_increase, past what its "
    "entries allow.")
COMPILE_SLOWDOWN = Rule(
    "regsurvey/compile-slowdown", "CompileSlowdown", "compile-time slowdown",
    "A build's compile took at least [check] compile_slowdown times as long as on the base (10 by default) "
    "and over compile_slowdown_s seconds (30): a pathological slowdown of the toolchain.")
RULES: tuple[Rule, ...] = (NEWLY_FAILING, KERNARG_NEVER_READ, NEW_SPILL, LOOP_SPILL, OCCUPANCY_DROP,
                           REGISTER_INCREASE, COMPILE_SLOWDOWN)


@dataclass(frozen=True)
class Problem:
    """One build failing one rule: the figures past their allowance, or the new miscompile suspects."""

    rule: Rule
    row: RowComparison
    figures: tuple[FigureDelta, ...] = ()  # before: None for a build the base lacks (measured from 0)
    findings: tuple[Finding, ...] = ()
    limits: tuple[str, ...] = ()  # what matching entries allow of these figures ("entry 2 allows up to 64")


@dataclass(frozen=True)
class Allowed:
    """A worse figure the baseline allows, and the entry that allows it."""

    row: RowComparison
    figure: FigureDelta
    entry: Allowance


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict on a comparison: problems fail it; allowed figures are reported, not failed."""

    comparison: Comparison
    baseline: Baseline
    problems: tuple[Problem, ...]
    allowed: tuple[Allowed, ...]

    @property
    def passed(self) -> bool:
        """True when nothing fails the gate."""
        return not self.problems

    def needed_allowances(self) -> tuple[Allowance, ...]:
        """Entries (without a reason yet) that would let every failing figure pass: one per key, target
        and, when the key launches several kernels, kernel; the head's values (the loosest over that
        build's launches and configs)."""
        kernels: dict[tuple[str, str], set[str | None]] = {}
        for r in self.comparison.rows:
            kernels.setdefault((r.key, r.target), set()).add(r.kernel)
        wanted: dict[tuple[str, str, str | None], dict[str, int]] = {}
        for p in self.problems:
            if not p.figures:
                continue
            kernel = p.row.kernel if len(kernels[(p.row.key, p.row.target)]) > 1 else None
            values = wanted.setdefault((p.row.key, p.row.target, kernel), {})
            for f in p.figures:
                assert f.after is not None
                if f.name in values:
                    worse_when_less = figure(f.name).worse < 0
                    values[f.name] = min(values[f.name], f.after) if worse_when_less else max(values[f.name], f.after)
                else:
                    values[f.name] = f.after
        return tuple(Allowance(number=0, key=key, reason="", figures=figures, target=target, kernel=kernel)
                     for (key, target, kernel), figures in wanted.items())


def _judgeable(row: RowComparison) -> bool:
    return row.mark is not Mark.NOT_COMPARABLE and row.after is not None and row.after.ok


def _worse_figures(row: RowComparison, baseline: Baseline) -> dict[Rule, list[FigureDelta]]:
    """The figures of a build that got worse, per rule (not yet weighed against the baseline)."""
    rules = baseline.rules
    based = row.before is not None and row.before.ok
    out: dict[Rule, list[FigureDelta]] = {}
    for f in row.figures:
        fig = figure(f.name)
        if f.after is None:
            continue
        if (fig.kind == SPILL and rules.spill_increase) or (fig.kind == LOOP_SPILL_KIND and rules.loop_spill_increase):
            # Spill-like figures of a build without a base are measured from zero; a base that did not
            # measure the spills in loops (a survey older than them) is not judged on them.
            if based and f.before is None and fig.kind == LOOP_SPILL_KIND:
                continue
            before = f.before if based else None
            if f.after > (before or 0):
                out.setdefault(NEW_SPILL if fig.kind == SPILL else LOOP_SPILL, []).append(
                    FigureDelta(f.name, before, f.after))
        elif not based or f.before is None:
            continue
        elif fig.kind == OCCUPANCY and fig.worse < 0 and rules.occupancy_drop and f.after < f.before:
            out.setdefault(OCCUPANCY_DROP, []).append(f)
        elif (f.name in JUDGED_REGISTERS and rules.register_increase is not None
              and f.after - f.before > rules.register_increase):
            out.setdefault(REGISTER_INCREASE, []).append(f)
    return out


def _slowed(row: RowComparison, baseline: Baseline) -> bool:
    """Whether the build's compile slowed down past the rule's thresholds (never where the rule is off, or
    where the two sides' compile times are not both measured: RowComparison.compile_time)."""
    factor = baseline.rules.compile_slowdown
    change = row.compile_time
    return factor is not None and change is not None and change.slowdown(factor, baseline.rules.compile_slowdown_s)


def _limits(row: RowComparison, figures: list[FigureDelta], baseline: Baseline) -> tuple[str, ...]:
    told = []
    for f in figures:
        for entry, limit in baseline.limits(row.key, row.target, row.kernel, f.name):
            bound = "down to" if figure(f.name).worse < 0 else "up to"
            told.append(f"{entry.describe()} allows {figure(f.name).noun} {bound} {limit}{figure(f.name).unit}")
    return tuple(told)


def judge(comparison: Comparison, baseline: Baseline) -> GateResult:
    """Every build of ``comparison`` against the gate's rules and the baseline's allowances."""
    rules = baseline.rules
    problems: list[Problem] = []
    allowed: list[Allowed] = []
    for row in comparison.rows:
        if rules.newly_failing and (row.mark is Mark.NEWLY_FAILING or
                                    (row.mark is Mark.ADDED and row.after is not None and row.after.failed)):
            problems.append(Problem(NEWLY_FAILING, row))
        if not _judgeable(row):
            continue
        if rules.lint_errors and row.lint_findings.new_errors:
            problems.append(Problem(KERNARG_NEVER_READ, row, findings=row.lint_findings.new_errors))
        for rule, figures in _worse_figures(row, baseline).items():
            failing = []
            for f in figures:
                assert f.after is not None
                entry = baseline.allowance(row.key, row.target, row.kernel, f.name, f.after)
                if entry is None:
                    failing.append(f)
                else:
                    allowed.append(Allowed(row, f, entry))
            if failing:
                problems.append(Problem(rule, row, figures=tuple(failing),
                                        limits=_limits(row, failing, baseline)))
        if _slowed(row, baseline):
            problems.append(Problem(COMPILE_SLOWDOWN, row, limits=(
                f"fails at {rules.compile_slowdown:g}x and over {rules.compile_slowdown_s:g} s",)))
    order = {rule: i for i, rule in enumerate(RULES)}
    problems.sort(key=lambda p: order[p.rule])  # stable: survey order within a rule
    return GateResult(comparison, baseline, tuple(problems), tuple(allowed))


def rebaseline(result: GateResult, text: str | None, reason: str,
               label: str) -> tuple[str | None, GateResult, int]:
    """``--update-baseline``: the baseline text (``text``: the current one, None if there is none) with
    entries allowing every failing figure of ``result``, the comparison judged again with it, and how many
    builds the new entries allow. (None, ``result``, 0) when no figure needs an allowance. ``label`` names
    the baseline in errors."""
    needed = list(result.needed_allowances())
    if not needed:
        return None, result, 0
    new_text = updated_baseline_text(text, needed, reason, label)
    return new_text, judge(result.comparison, parse_baseline(new_text, label)), len(needed)


__all__ = ["COMPILE_SLOWDOWN", "KERNARG_NEVER_READ", "LOOP_SPILL", "NEWLY_FAILING", "NEW_SPILL", "OCCUPANCY_DROP",
           "REGISTER_INCREASE", "RULES", "Allowed", "GateResult", "Problem", "Rule", "judge", "rebaseline"]
