"""The one registry of the figures a survey records: what each is called, shown as, measured in, which
vendor has it, what kind of figure it is and which way it gets worse.

Everything that names figures derives from :data:`FIGURES`: the object readers' records and a row's
figures (:class:`Figures`: the registry's names of one vendor and those of both, in its order), the survey
table's columns and highlighting, the comparison's spill totals and the summary's nouns, the gate's rules (a *spill*
figure up is ``new-spill``, an *occupancy* figure down ``occupancy-drop``, a *register* figure up
``register-increase``) and the HTML report's data.

Kinds:

- ``register``: registers a thread or lane holds (VGPR, AGPR, SGPR; NVIDIA registers), and the unified
  VGPR+AGPR count, which moves with VGPRs and AGPRs and is judged by them.
- ``spill``: memory a kernel spends on spilled or private data: VGPR and SGPR spills, scratch (AMD);
  spill stores and loads, the stack frame (NVIDIA). "Spill" means these six everywhere: the table's
  red cells, the spill totals, the builds that spill, the gate's ``new-spill`` rule.
- ``loop spill``: the spill instructions inside loops of the machine code (``loop_spill_ops``) and the
  deepest loop that holds one (``loop_spill_depth``), of both vendors: where a spill is paid on every
  trip. Red in the table and summed in the spill totals like spills, judged by a rule of their own
  (``loop-spill``), so that a baseline may allow a kernel's spills and still fail new ones in its loops.
- ``memory``: LDS, shared memory.
- ``occupancy``: waves per SIMD (AMD), warps and blocks per SM (NVIDIA).
- ``argument``: the kernel argument segment's size (a new argument is a design choice, not a regression).
- ``time``: the build's compile time (``compile_s``), a figure of its compile rather than of its object:
  both vendors', measured rather than read (the machine's load moves it), so it is not in :data:`FIGURES`
  (a row's ``resources``) and never makes a build worse or better; ``history`` draws it
  (:data:`MEASURED_FIGURES`), and a comparison tells it apart (``model.compile_time``).

``worse`` is ``+1`` when more is worse, ``-1`` when less is (occupancy), ``0`` when a change is neither
(kernel arguments; blocks per SM, which follow from warps per SM and the block's size).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .frozen_mapping import FrozenMapping

REGISTER = "register"
SPILL = "spill"
MEMORY = "memory"
OCCUPANCY = "occupancy"
ARGUMENT = "argument"
TIME = "time"
LOOP_SPILL = "loop spill"
KINDS = (REGISTER, SPILL, LOOP_SPILL, MEMORY, OCCUPANCY, ARGUMENT, TIME)

AMD = "AMD"
NVIDIA = "NVIDIA"
BOTH = ""  # a figure of both vendors


@dataclass(frozen=True)
class Figure:
    """One resource figure of a row (a key of ``resources`` in the survey JSON)."""

    name: str  # the resource name in the survey JSON and the readers' records
    label: str  # column header: "VGPR", "spill st"
    noun: str  # in a sentence: "VGPRs", "spill stores"
    unit: str  # appended to values in prose: "" or " B", " waves/SIMD"
    worse: int  # +1: more is worse, -1: less is worse, 0: neither
    vendor: str  # AMD or NVIDIA; BOTH ("") for a figure of both (spills in loops, compile time)
    kind: str  # one of KINDS
    # Moves with another figure (scratch with VGPR spills): told in that figure's line when both change,
    # and not judged on its own by a rule of its kind where it only restates that figure.
    companion_of: str | None = None
    rank: int = 0  # order of importance in the summary and the HTML report (spills first)

    @property
    def spill(self) -> bool:
        """A spill figure, in loops or anywhere: 0 -> n "adds", n -> 0 "removes", and a build new on the head
        is measured from 0."""
        return self.kind in (SPILL, LOOP_SPILL)


# In the readers' record order per vendor, which is also the survey table's column order. ``rank`` is
# the order of importance: spills first, then occupancy, then the register counts that explain them,
# then memory.
FIGURES: tuple[Figure, ...] = (
    Figure("vgpr", "VGPR", "VGPRs", "", +1, AMD, REGISTER, rank=11),
    Figure("agpr", "AGPR", "AGPRs", "", +1, AMD, REGISTER, rank=12),
    Figure("sgpr", "SGPR", "SGPRs", "", +1, AMD, REGISTER, rank=14),
    Figure("vgpr_spill", "Vspill", "VGPR spills", "", +1, AMD, SPILL, rank=0),
    Figure("sgpr_spill", "Sspill", "SGPR spills", "", +1, AMD, SPILL, rank=1),
    Figure("scratch_bytes", "scratch", "scratch", " B", +1, AMD, SPILL, companion_of="vgpr_spill", rank=2),
    Figure("lds_bytes", "LDS", "LDS", " B", +1, AMD, MEMORY, rank=16),
    Figure("occupancy", "waves", "occupancy", " waves/SIMD", -1, AMD, OCCUPANCY, rank=8),
    Figure("kernarg_bytes", "kernarg", "kernel arguments", " B", 0, AMD, ARGUMENT, rank=18),
    # The unified VGPR+AGPR count (AGPRs aligned to 4): what occupancy depends on.
    Figure("vgpr_total", "VGPR+AGPR", "unified VGPRs", "", +1, AMD, REGISTER, companion_of="vgpr", rank=13),
    Figure("regs", "regs", "registers", "", +1, NVIDIA, REGISTER, rank=15),
    Figure("spill_store_bytes", "spill st", "spill stores", " B", +1, NVIDIA, SPILL, rank=3),
    Figure("spill_load_bytes", "spill ld", "spill loads", " B", +1, NVIDIA, SPILL, companion_of="spill_store_bytes",
           rank=4),
    Figure("stack_bytes", "stack", "stack", " B", +1, NVIDIA, SPILL, companion_of="spill_store_bytes", rank=5),
    Figure("shared_bytes", "smem", "shared memory", " B", +1, NVIDIA, MEMORY, rank=17),
    # NVIDIA occupancy is resident warps per SM; blocks per SM follow from it and the block size (a
    # change of num_warps moves them apart), so they are told beside warps and judge nothing.
    Figure("occupancy_blocks", "blocks", "blocks per SM", " blocks/SM", 0, NVIDIA, OCCUPANCY,
           companion_of="occupancy_warps", rank=10),
    Figure("occupancy_warps", "warps", "occupancy", " warps/SM", -1, NVIDIA, OCCUPANCY, rank=9),
    # Both vendors': the spill instructions (stores and reloads, counted one an instruction) inside any loop of
    # the machine code, and the deepest loop that holds one (objects/loop_spills.py): told after the spills
    # they are part of (a spill in a loop is paid on every trip), before occupancy.
    Figure("loop_spill_ops", "loop sp", "spill instructions in loops", "", +1, BOTH, LOOP_SPILL, rank=6),
    Figure("loop_spill_depth", "depth", "deepest loop with a spill", "", +1, BOTH, LOOP_SPILL,
           companion_of="loop_spill_ops", rank=7),
)

# The build's compile time (``Row.compile_s``): drawn by ``history`` like the figures above, told apart by the
# comparison, never judged by a mark (see the module's docstring).
COMPILE_TIME = Figure("compile_s", "compile", "compile time", " s", 0, "", TIME, rank=len(FIGURES))
MEASURED_FIGURES: tuple[Figure, ...] = (COMPILE_TIME,)

FIGURE_BY_NAME: dict[str, Figure] = {f.name: f for f in FIGURES}
_MEASURED_BY_NAME: dict[str, Figure] = {f.name: f for f in MEASURED_FIGURES}
# Names in order of importance.
FIGURE_ORDER: dict[str, int] = {f.name: f.rank for f in FIGURES}
BY_IMPORTANCE: tuple[Figure, ...] = tuple(sorted(FIGURES, key=lambda f: f.rank))
AMD_RESOURCES: tuple[str, ...] = tuple(f.name for f in FIGURES if f.vendor in (AMD, BOTH))
NVIDIA_RESOURCES: tuple[str, ...] = tuple(f.name for f in FIGURES if f.vendor in (NVIDIA, BOTH))
LOOP_SPILL_OPS = "loop_spill_ops"  # the spill instructions inside loops, of both vendors
# The spill figures (not those of spills in loops, which count instructions where these count registers or
# bytes, and which a rule of their own judges).
SPILL_FIGURES: tuple[str, ...] = tuple(f.name for f in BY_IMPORTANCE if f.kind == SPILL)
# The register counts the gate's register rule judges: not the unified count, which restates them.
JUDGED_REGISTERS: tuple[str, ...] = tuple(f.name for f in FIGURES if f.kind == REGISTER and f.companion_of is None)


def figure(name: str) -> Figure:
    """The figure called ``name`` (one of :data:`FIGURES` or :data:`MEASURED_FIGURES`); a name this registry
    does not know is neutral (a newer survey's)."""
    return (FIGURE_BY_NAME.get(name) or _MEASURED_BY_NAME.get(name)
            or Figure(name, name, name, "", 0, "", ARGUMENT, rank=len(FIGURES)))


def vendor_figures(vendor: str) -> tuple[Figure, ...]:
    """The figures of ``vendor`` (AMD or NVIDIA; those of both vendors among them), in record and column
    order."""
    return tuple(f for f in FIGURES if f.vendor in (vendor, BOTH))


# Where each figure stands in the registry: the order a Figures iterates in, whatever order it was given.
_POSITION: dict[str, int] = {f.name: i for i, f in enumerate(FIGURES)}


class Figures(FrozenMapping[int]):
    """A build's figures (``Row.resources``, ``ObjectReport.resources``): a frozen, hashable mapping of figure
    name to value, of one vendor's figures only, each a whole number of zero or more.

    The object readers make it with every figure of their vendor (:meth:`complete`); a stored survey or
    result-cache entry reads back with those its JSON holds (:meth:`from_json`: its vendor is the one its
    names belong to). It iterates in the registry's order, which is its JSON form's (:meth:`to_json`).
    Equal to any mapping of the same names and values, a plain dict among them."""

    __slots__ = ("vendor",)
    vendor: str | None  # AMD or NVIDIA; None for no figures (a build that did not build)

    def __init__(self, vendor: str | None, values: Mapping[str, int]) -> None:
        """``values`` by name: ValueError for a name the registry does not give ``vendor``, or a value that is
        not a whole number of zero or more (a bool is not one)."""
        for name, value in values.items():
            known = FIGURE_BY_NAME.get(name)
            if known is None:
                raise ValueError(f"unknown figure {name!r}")
            if known.vendor not in (vendor, BOTH):
                raise ValueError(f"figure {name!r} is {known.vendor}'s, not {vendor or 'no vendor'}'s")
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"figure {name} is {value!r}, not a whole number of zero or more")
        object.__setattr__(self, "vendor", vendor)
        self._freeze({n: int(values[n]) for n in sorted(values, key=_POSITION.__getitem__)})

    @classmethod
    def complete(cls, vendor: str, **values: int) -> Figures:
        """A reader's record: every figure the registry gives ``vendor``, and no other (ValueError)."""
        missing = [f.name for f in vendor_figures(vendor) if f.name not in values]
        if missing:
            raise ValueError(f"{vendor} figures without {', '.join(missing)}")
        return cls(vendor, values)

    @classmethod
    def from_json(cls, data: Any) -> Figures:
        """Parse :meth:`to_json`'s form: a map of figure names, all of one vendor, to whole numbers of zero or
        more; ValueError naming what is not."""
        if not isinstance(data, dict):
            raise ValueError(f"figures are {type(data).__name__} {str(data)[:40]!r}, not a map of names to values")
        unknown = next((name for name in data if name not in FIGURE_BY_NAME), None)
        if unknown is not None:
            raise ValueError(f"unknown figure {unknown!r}")
        vendors = list(dict.fromkeys(FIGURE_BY_NAME[name].vendor for name in data if FIGURE_BY_NAME[name].vendor))
        if len(vendors) > 1:
            raise ValueError(f"figures of {' and '.join(vendors)} together ({', '.join(data)})")
        return cls(vendors[0] if vendors else None, data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Figures, (self.vendor, self._items))  # pickled to and from workers and Ray actors

    def __repr__(self) -> str:
        return f"Figures({self.vendor!r}, {self._items!r})"


NO_FIGURES = Figures(None, {})  # a build that did not build


def verdict(name: str, before: int | None, after: int | None) -> str:
    """``worse``, ``better``, ``same``, ``changed`` (a neutral figure) or ``n/a`` (missing on a side)."""
    if before is None or after is None:
        return "n/a"
    if before == after:
        return "same"
    direction = figure(name).worse
    if direction == 0:
        return "changed"
    return "worse" if (after - before) * direction > 0 else "better"
