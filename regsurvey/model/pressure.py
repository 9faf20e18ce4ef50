"""Where a kernel's registers go: the live registers along its code, the peak, every spill store and
reload, each attributed to the Triton source line it came from (issue #13).

One :class:`Pressure` per compiled object, computed from the object alone (:mod:`regsurvey.pressure`) and
kept beside it in the object store as JSON (:mod:`regsurvey.kept_pressure`). Source locations are *frames*:
the innermost first, then each ``@triton.jit`` helper's call site it was inlined at, out to the kernel's
own line. Paths are as the compiler saw them; :class:`regsurvey.repo.sources.SourcePaths` names them
for the reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Version of the stored JSON and of what it counts; a stored pressure of another version is computed
# again. 2: AMD SGPR spills to VGPR lanes from VCC's halves counted (before: only from s registers).
# 3: the demand before spilling (``demand``). 4: the loops of the machine code (``loops``), each spill's
# innermost loop, each line's loop depth.
PRESSURE_VERSION = 4

Frame = tuple[str, int]  # (path, line)
NO_LINE = "(no source line)"  # how an instruction the compiler gave no line is named, where lines are named

# A register class (``Pressure.classes``) in words: "the VGPR peak", "live registers".
CLASS_NOUNS = {"vgpr": "VGPR", "agpr": "AGPR", "sgpr": "SGPR", "gpr": "register", "ugpr": "uniform register"}


def class_noun(register_class: str) -> str:
    """The noun of ``register_class`` (``vgpr`` -> ``VGPR``, ``gpr`` -> ``register``), else its own name."""
    return CLASS_NOUNS.get(register_class, register_class)


@dataclass(frozen=True)
class Site:
    """An instruction of the object: its index in the code, its text, its source frames (innermost
    first; empty when the compiler gave it no line) and, per register class, the live count there."""

    index: int
    text: str
    frames: tuple[Frame, ...]
    live: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "text": self.text, "frames": [list(f) for f in self.frames], "live": self.live}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Site:
        return cls(int(data["index"]), str(data["text"]), tuple((str(p), int(n)) for p, n in data["frames"]),
                   {str(k): int(v) for k, v in data["live"].items()})


@dataclass(frozen=True)
class Spill:
    """One spill store or reload: ``kind`` is ``store`` or ``reload``; ``medium`` says where the value
    goes (``scratch``, ``agpr`` or ``vgpr-lane`` on AMD, ``local`` on NVIDIA); ``size`` its dwords (AMD)
    or bytes (NVIDIA), as the object readers count them; ``loop`` the innermost loop of the machine code
    that holds it (an index of ``Pressure.loops``; None: in no loop)."""

    kind: str
    medium: str
    size: int
    site: Site
    loop: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "medium": self.medium, "size": self.size, "site": self.site.to_dict(),
                "loop": self.loop}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Spill:
        loop = data["loop"]
        return cls(str(data["kind"]), str(data["medium"]), int(data["size"]), Site.from_dict(data["site"]),
                   None if loop is None else int(loop))


@dataclass(frozen=True)
class LoopSite:
    """One natural loop of the machine code (``regsurvey.objects.loops``): its depth (1: outermost), the loop
    it sits in (an index of ``Pressure.loops``, None for an outermost one), its source line (the ``for``
    statement's: the first line of the loop's body at the level of frames where the loop's code parts
    ways; None where the compiler gave its code none) and the spill stores and reloads it holds itself
    (not those of loops nested in it)."""

    depth: int
    parent: int | None
    line: Frame | None
    stores: int = 0
    reloads: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"depth": self.depth, "parent": self.parent, "line": list(self.line) if self.line else None,
                "stores": self.stores, "reloads": self.reloads}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoopSite:
        line, parent = data["line"], data["parent"]
        return cls(int(data["depth"]), None if parent is None else int(parent),
                   (str(line[0]), int(line[1])) if line else None, int(data["stores"]), int(data["reloads"]))


@dataclass
class LineStats:
    """One source line: the most registers live at its instructions (per class), and its spill stores
    and reloads. ``own`` counts instructions whose innermost user frame is this line; ``inlined``
    those of helpers inlined at it (a call site)."""

    frame: Frame
    live: dict[str, int] = field(default_factory=dict)  # over its own and its inlined instructions
    instructions: int = 0  # its own
    spill_stores: int = 0  # its own spill instructions
    spill_reloads: int = 0
    inlined_instructions: int = 0  # of helpers inlined at it (it is a call site)
    inlined_stores: int = 0
    inlined_reloads: int = 0
    depth: int = 0  # the deepest loop of the machine code that holds one of its instructions (0: none)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.frame[0], "line": self.frame[1], "live": self.live, "instructions": self.instructions,
                "spill_stores": self.spill_stores, "spill_reloads": self.spill_reloads,
                "inlined_instructions": self.inlined_instructions, "inlined_stores": self.inlined_stores,
                "inlined_reloads": self.inlined_reloads, "depth": self.depth}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LineStats:
        return cls((str(data["path"]), int(data["line"])), {str(k): int(v) for k, v in data["live"].items()},
                   *(int(data[k]) for k in ("instructions", "spill_stores", "spill_reloads", "inlined_instructions",
                                            "inlined_stores", "inlined_reloads", "depth")))


@dataclass(frozen=True)
class Pressure:
    """The register pressure of one kernel object.

    ``classes``: the register classes counted, in display order (``vgpr``, ``agpr``, ``sgpr`` on AMD;
    ``gpr``, ``ugpr`` on NVIDIA). ``peaks``: per class, the first instruction where the most are live.
    These are the registers the compiler allocated, counted after spilling: a value spilled is not in a
    register while it waits for its reload. ``demand``: per class whose values were spilled, the first
    instruction where the most values are live counting those held in spill slots (a scratch or local
    slot, an AGPR or a VGPR lane, from its spill store to its last reload), with those counts as its
    ``live``: the registers the code would want had nothing been spilled.
    ``series``: per class, the live count at every instruction, in code order. ``lines``: per source
    line. ``spills``: every spill store and reload, in code order. ``method``: how the live counts were
    found (our liveness over the amdgcn CFG; nvdisasm's life ranges). ``loops``: the natural loops of the
    machine code's CFG, each with its source line and its own spills (each spill names its innermost
    loop, each line its depth).
    """

    kernel: str
    target: str
    method: str
    classes: tuple[str, ...]
    instructions: int
    peaks: dict[str, Site]
    series: dict[str, list[int]]
    lines: tuple[LineStats, ...]
    spills: tuple[Spill, ...]
    files: tuple[str, ...] = ()  # every source file named, innermost frames first seen first
    demand: dict[str, Site] = field(default_factory=dict)
    loops: tuple[LoopSite, ...] = ()  # the machine code's loops, outer ones before those they hold

    def loop_depth(self, spill: Spill) -> int:
        """The depth of the innermost loop holding ``spill`` (0: none)."""
        return self.loops[spill.loop].depth if spill.loop is not None else 0

    def demand_peak(self, name: str) -> int | None:
        """The most values of class ``name`` live at once, spilled ones included (None: none spilled, or
        not known)."""
        site = self.demand.get(name)
        return site.live[name] if site is not None else None

    def spill_total(self, kind: str) -> int:
        return sum(s.size for s in self.spills if s.kind == kind)

    def top_lines(self, count: int) -> list[LineStats]:
        """The lines with the most registers live (of the first class), then the most spill instructions:
        user code only (not Triton's own), call sites included."""
        first = self.classes[0]
        lines = [line for line in self.lines if not is_toolchain(line.frame[0])]
        lines.sort(key=lambda s: (-s.live.get(first, 0), -(s.spill_stores + s.spill_reloads), s.frame))
        return lines[:count]

    def by_file(self) -> dict[str, dict[int, LineStats]]:
        """The user source lines with code (not Triton's own), by file in the order first met, then by
        line number: what an annotated view of the source shows."""
        out: dict[str, dict[int, LineStats]] = {}
        for stats in self.lines:
            if not is_toolchain(stats.frame[0]):
                out.setdefault(stats.frame[0], {})[stats.frame[1]] = stats
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"version": PRESSURE_VERSION, "kernel": self.kernel, "target": self.target, "method": self.method,
                "classes": list(self.classes), "instructions": self.instructions,
                "peaks": {k: v.to_dict() for k, v in self.peaks.items()},
                "series": {k: list(v) for k, v in self.series.items()},
                "lines": [line.to_dict() for line in self.lines], "spills": [s.to_dict() for s in self.spills],
                "files": list(self.files), "demand": {k: v.to_dict() for k, v in self.demand.items()},
                "loops": [loop.to_dict() for loop in self.loops]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pressure:
        if data.get("version") != PRESSURE_VERSION:
            raise ValueError(f"pressure version {data.get('version')!r}, expected {PRESSURE_VERSION}")
        return cls(str(data["kernel"]), str(data["target"]), str(data["method"]), tuple(data["classes"]),
                   int(data["instructions"]), {k: Site.from_dict(v) for k, v in data["peaks"].items()},
                   {k: [int(x) for x in v] for k, v in data["series"].items()},
                   tuple(LineStats.from_dict(x) for x in data["lines"]),
                   tuple(Spill.from_dict(x) for x in data["spills"]), tuple(data.get("files", ())),
                   {k: Site.from_dict(v) for k, v in data["demand"].items()},
                   tuple(LoopSite.from_dict(x) for x in data["loops"]))


# Where Triton's own source lies, as a compile's debug lines name it: its language and runtime packages
# wherever Triton is (an installed package or a source tree), and anything of the installed package.
# Recognised by the path alone, not by asking where this process's Triton is installed (the model layer
# imports nothing, and a pressure may come from another machine: a Ray node's, a shared store's).
TRITON_SOURCE = ("/triton/language/", "/triton/runtime/", "/site-packages/triton/", "/dist-packages/triton/")


def is_toolchain(path: str) -> bool:
    """Whether ``path`` is Triton's own source (``triton/language/standard.py``: what ``tl.sum`` is made
    of), which a kernel engineer does not edit: its lines are attributed to the caller's."""
    return path.startswith("triton/language/") or any(part in path for part in TRITON_SOURCE)


def attribution(frames: tuple[Frame, ...]) -> tuple[Frame | None, tuple[Frame, ...]]:
    """The frame an instruction is attributed to (the innermost one outside Triton's own source; the
    innermost one when all are Triton's), and the call sites that frame was inlined at (outer frames
    outside Triton), innermost first."""
    user = [f for f in frames if not is_toolchain(f[0])]
    if not user:
        return (frames[0] if frames else None), ()
    return user[0], tuple(dict.fromkeys(f for f in user[1:] if f != user[0]))
