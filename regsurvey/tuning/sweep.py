"""``regsurvey fix``'s variant space and its ranking, pure: a build's row in, the variants to compile out; the
variants' rows in, a ranking out.

The knobs are those a kernel engineer turns by hand (num_warps, num_stages; on AMD waves_per_eu,
matrix_instr_nonkdim, kpack and the LLVM scheduler strategy, a function attribute Triton 3.9 passes through
its ``llvm_fn_attrs`` option; on NVIDIA maxnreg), the block-size constexprs of the kernel's own autotune
configs, or any constexpr of the kernel with values the user gives. Each knob is tried alone from the base
build unless the user names knobs, whose values are then combined. A control variant (a launch option that
changes how a kernel is launched, never its code) proves the "no effect" verdict: its object must equal the
base's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..model.figures import AMD, NVIDIA
from ..model.fix import BuildFix, Effect, Setting, Tried, Variant
from ..model.results import Row
from ..model.targets import get_target

# The scheduler strategies of AMDGPU's machine scheduler, set per kernel by the function attribute
# "amdgpu-sched-strategy" (Triton 3.9's launch option ``llvm_fn_attrs``). An unknown name falls back to
# the default strategy: the sweep then finds it had no effect.
SCHED_STRATEGIES = ("max-ilp", "max-memory-clause", "iterative-ilp", "iterative-minreg", "iterative-maxocc")
SCHED_KNOB = "sched_strategy"
SCHED_OPTION = "llvm_fn_attrs"

# AMD LLVM command-line options, each tried alone by compiling the base build's stored LLVM IR again with it
# (Triton passes LLVM no option per compile: ``compile.toolchain.recompile_llir``): the register-pressure
# tracking of the scheduler (``amdgpu-use-amdgpu-trackers``, ROCm/triton#970's fix) and the rescheduling
# stage that trades occupancy for ILP at high pressure. An option LLVM does not know is ignored by it: the
# variant then has no effect.
LLVM_KNOB = "llvm"
LLVM_OPTIONS = ("amdgpu-use-amdgpu-trackers", "amdgpu-disable-unclustered-high-rp-reschedule")

# Knob -> the values tried by default, per vendor. A knob is a Triton launch option of the target, but for
# ``sched_strategy`` (an LLVM function attribute, passed as ``llvm_fn_attrs``).
DEFAULT_KNOBS: dict[str, dict[str, tuple[Any, ...]]] = {
    AMD: {"num_warps": (2, 4, 8), "num_stages": (1, 2, 3), "waves_per_eu": (1, 2, 3, 4),
          "matrix_instr_nonkdim": (16, 32), "kpack": (1, 2), SCHED_KNOB: SCHED_STRATEGIES,
          LLVM_KNOB: LLVM_OPTIONS},
    NVIDIA: {"num_warps": (4, 8), "num_stages": (2, 3, 4), "maxnreg": (128, 168, 255)},
}
# The wave32 AMD targets (RDNA, gfx1250) differ: a wave addresses at most 256 VGPRs of a SIMD's 1536 on RDNA,
# so waves_per_eu below 5 reserves nothing more (LLVM cannot allocate past 256; docs/figures.md), and up to 16
# waves fit; their WMMA has no kpack and no 32-wide instruction; RDNA runs a workgroup on one CU or on a whole
# WGP (Triton's ``wgp_cu_mode``: on one CU the LDS a workgroup sees is the CU's, and its waves share 2 SIMDs).
_WAVE32_AMD_KNOBS: dict[str, tuple[Any, ...]] = {
    "num_warps": (2, 4, 8), "num_stages": (1, 2, 3), "waves_per_eu": (6, 8, 12), SCHED_KNOB: SCHED_STRATEGIES,
    LLVM_KNOB: LLVM_OPTIONS}
TARGET_KNOBS: dict[str, dict[str, tuple[Any, ...]]] = {
    **{name: {**_WAVE32_AMD_KNOBS, "wgp_cu_mode": ("cu",)} for name in ("gfx1100", "gfx1151", "gfx1201")},
    "gfx1250": _WAVE32_AMD_KNOBS,
}
# Knobs a target's Triton takes but ignores: gfx950's backend overwrites kpack with 1 (with a warning).
IGNORED_KNOBS = {"gfx950": ("kpack",)}
# A launch option that never reaches the code (how the grid is launched): the control variant.
CONTROL: Setting = ("launch_cooperative_grid", True)
BLOCKS_KNOB = "configs"  # the block-size constexprs of the kernel's own autotune configs


class SpaceError(ValueError):
    """The variant space asked for cannot be made (bad input: one line)."""


@dataclass(frozen=True)
class Knob:
    """One knob and the values to try: a launch option (``option``) or a constexpr of the kernel."""

    name: str
    values: tuple[Any, ...]
    option: bool


def parse_value(text: str) -> Any:
    """``8`` -> 8, ``true`` -> True, anything else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        return text.strip()


def parse_knob(text: str) -> tuple[str, tuple[Any, ...]]:
    """``--knob NAME=V1,V2``: the knob's name and values."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip() or not values.strip():
        raise SpaceError(f"--knob {text!r}: expected NAME=VALUE[,VALUE...] (num_warps=4,8)")
    return name.strip(), tuple(parse_value(v) for v in values.split(",") if v.strip())


def knobs_for(row: Row, asked: list[tuple[str, tuple[Any, ...]]], options: frozenset[str]) -> list[Knob]:
    """The knobs to sweep for the build ``row``: those ``asked`` (each a launch option the target's Triton
    takes, ``sched_strategy`` on AMD, or a constexpr of the build), else every default knob of its vendor
    that its Triton takes. ``options``: the target's launch options (compile.toolchain.launch_option_names)."""
    target = get_target(row.target)
    ignored = IGNORED_KNOBS.get(target.name, ())
    constexprs = row.build or {}
    if not asked:
        defaults = TARGET_KNOBS.get(target.name, DEFAULT_KNOBS[target.vendor])
        return [Knob(name, values, True) for name, values in defaults.items()
                if (name == LLVM_KNOB or _option_of(name) in options) and name not in ignored]
    knobs = []
    for name, values in asked:
        if name in constexprs:
            knobs.append(Knob(name, values, False))
        elif name == LLVM_KNOB:
            if target.is_nvidia:
                raise SpaceError(f"--knob {LLVM_KNOB}: {target.name}'s code is made by ptxas, which takes no LLVM "
                                 f"options (AMD targets only)")
            knobs.append(Knob(name, values, True))
        elif name in ignored:
            raise SpaceError(f"--knob {name}: {target.name}'s Triton ignores it (it compiles kpack=1 whatever is "
                             f"asked)")
        elif (name == SCHED_KNOB and target.is_nvidia) or (name != SCHED_KNOB and name not in options):
            raise SpaceError(f"--knob {name}: {target.name} has no launch option {name}, and it is no constexpr "
                             f"of {row.kernel}")
        else:
            knobs.append(Knob(name, values, True))
    return knobs


def _option_of(knob: str) -> str:
    return SCHED_OPTION if knob == SCHED_KNOB else knob


def _setting(knob: Knob, value: Any) -> Setting:
    if knob.name == SCHED_KNOB:
        return SCHED_OPTION, f"amdgpu-sched-strategy={value}"
    return knob.name, value


def config_blocks(row: Row, siblings: Iterable[Row]) -> list[tuple[Setting, ...]]:
    """The block sizes of the kernel's own autotune configs, as the base build ``row`` would take them: the
    constexprs whose values differ among the builds of the other configs of the same launch (``siblings``:
    every row of the survey), each config's set once, the base's own left out."""
    if row.config is None or row.build is None:
        return []
    same = [r for r in siblings if r.key == row.key and r.target == row.target and r.kernel == row.kernel
            and r.name == row.name and r.config is not None and r.build is not None]
    varying = sorted({name for r in same for name, value in (r.build or {}).items()
                      if (row.build or {}).get(name) != value and name in (row.build or {})})
    sets = []
    for r in same:
        # only what differs from the base: the rest it already has
        setting = tuple((name, (r.build or {})[name]) for name in varying
                        if name in (r.build or {}) and (r.build or {})[name] != row.build[name])
        if setting and setting not in sets:
            sets.append(setting)
    return sets


def variants_for(row: Row, kernel: str, knobs: list[Knob], blocks: list[tuple[Setting, ...]],
                 combine: bool) -> list[Variant]:
    """The variants of the build ``row`` (launches of the jit function named ``kernel``): with ``combine``,
    every combination of the knobs' values; else each value of each knob alone, then each config's block
    sizes. A value equal to the base build's is left out; the control variant comes last."""
    base_options = {"num_warps": row.num_warps, "num_stages": row.num_stages}
    base = {**(row.build or {}), **{k: v for k, v in base_options.items() if v is not None}}

    def changed(setting: Setting) -> bool:
        return base.get(setting[0], object()) != setting[1]

    def variant(settings: Iterable[tuple[Knob, Any]]) -> Variant | None:
        pairs = [(knob, _setting(knob, value)) for knob, value in settings]
        if not pairs or not all(changed(s) for _, s in pairs):
            return None
        return Variant(kernel, options=tuple(s for k, s in pairs if k.option),
                       constexprs=tuple(s for k, s in pairs if not k.option), config=row.config)

    # LLVM options: each alone, on the base build's LLVM IR (never combined with a launch's knobs).
    llvm = [v for k in knobs if k.name == LLVM_KNOB for v in k.values]
    knobs = [k for k in knobs if k.name != LLVM_KNOB]
    found: list[Variant | None] = []
    if combine and knobs:
        for values in itertools.product(*(k.values for k in knobs)):
            found.append(variant(zip(knobs, values)))
    elif not combine:
        found += [variant([(knob, value)]) for knob in knobs for value in knob.values]
        found += [Variant(kernel, constexprs=setting, config=row.config) for setting in blocks]
    found += [Variant(kernel, config=row.config, llvm=(str(option),)) for option in llvm]
    unique = list(dict.fromkeys(v for v in found if v is not None))
    controls = [Variant(kernel, config=row.config, llvm=(), control=True)] if llvm else []
    if any(v.llvm is None for v in unique) or not llvm:
        controls.insert(0, Variant(kernel, options=(CONTROL,), config=row.config, control=True))
    return [*unique, *controls]


# The figures a ranking reads, per vendor: in-loop spills, spills, occupancy (higher is better), registers.
RANK_FIGURES = {
    AMD: ("loop_spill_ops", ("vgpr_spill", "sgpr_spill"), "occupancy", "vgpr_total"),
    NVIDIA: ("loop_spill_ops", ("spill_store_bytes",), "occupancy_warps", "regs"),
}
# The figures the table shows, per vendor.
SHOWN_FIGURES = {
    AMD: ("loop_spill_ops", "vgpr_spill", "sgpr_spill", "scratch_bytes", "occupancy", "vgpr_total", "sgpr"),
    NVIDIA: ("loop_spill_ops", "spill_store_bytes", "occupancy_warps", "regs"),
}


def rank_key(row: Row) -> tuple[int, int, int, int, int]:
    """A build's place in a ranking (smaller is better): built first, then fewer spill instructions in
    loops, fewer spills, higher occupancy, fewer registers."""
    if not row.ok:
        return (1, 0, 0, 0, 0)
    loops, spills, occupancy, registers = RANK_FIGURES[get_target(row.target).vendor]
    figures = row.resources
    return (0, figures.get(loops) or 0, sum(figures.get(s) or 0 for s in spills),
            -(figures.get(occupancy) or 0), figures.get(registers) or 0)


def effect(base: Row, row: Row, same_code: Callable[[Row, Row], bool] | None = None) -> Effect:
    """What a variant's build did: no object (failed), the base's object (no effect), or another. ``same_code``
    (where given) says whether two different objects hold the same code: Triton's cache hands out an object
    compiled from another checkout, whose debug sections name that checkout's paths."""
    if not row.ok or row.object is None:
        return Effect.FAILED
    if base.object is not None and (row.object.sha256 == base.object.sha256
                                    or (same_code is not None and same_code(base, row))):
        return Effect.NO_EFFECT
    return Effect.CHANGED


def ranked(name: str, base: Row, tried: list[tuple[Variant, Row]],
           same_code: Callable[[Row, Row], bool] | None = None) -> BuildFix:
    """The build's sweep, ranked: the variants that changed the code and the base by :func:`rank_key`
    (ties keep the order tried, the base before them), then those with no effect, then the failures."""
    kernel = tried[0][0].kernel if tried else base.kernel or ""
    entries = [Tried(Variant(kernel, config=base.config), base, Effect.CHANGED)]
    entries += [Tried(v, row, effect(base, row, same_code)) for v, row in tried if not v.control]
    order = {Effect.CHANGED: 0, Effect.NO_EFFECT: 1, Effect.FAILED: 2}
    entries.sort(key=lambda t: (order[t.effect], rank_key(t.row)))
    control = next((Tried(v, row, effect(base, row, same_code)) for v, row in tried if v.control and v.llvm is None),
                   None)
    llvm_control = next((Tried(v, row, effect(base, row, same_code)) for v, row in tried
                         if v.control and v.llvm is not None), None)
    improves = entries[0].row is not base and rank_key(entries[0].row) < rank_key(base)
    return BuildFix(name, base, tuple(entries), control, SHOWN_FIGURES[get_target(base.target).vendor], improves,
                    llvm_control)
