"""The AMD kernarg lint: kernel arguments that are loaded into SGPRs and never read on any path.

The miscompile it looks for: the compiler loads an argument (or the hardware preloads it into user
SGPRs), spills it under register pressure (to VGPR lanes with ``v_writelane_b32``, or to scratch), and
the restore goes missing or reads the wrong place, so a value the source uses is never read.

How: every dword that a kernarg load (``s_load_*`` through the kernarg segment pointer, or the
preload) puts in an SGPR is a *value origin*. A forward dataflow over the CFG, to a fixpoint, tracks
which origins each location may hold: SGPRs, VGPR/AGPR lanes (SGPR spills) and scratch slots (VGPR
spills, lanes and all). Copies move origins (``s_mov``, ``v_writelane``/``v_readlane`` with a constant
lane, whole-VGPR moves, scratch stores/loads at a constant address); any other instruction that reads a
location *reads* its origins; any other write kills them. Reported: an argument none of whose loaded
values is ever read (for a pointer: one of its two dwords), and one whose value was spilled and is never
restored on any path (it may be read on other paths: a lost restore is still a lost value). The Python
names come from the caller.

Where the analysis cannot see every kernarg access it reports nothing for that kernel rather than
guess: a kernarg load at a register offset, a global/buffer load through the kernarg pointer, the
pointer used for anything but a load's base (arithmetic, a move into a VGPR, gfx12's ``s_prefetch_data``
of it), a call or an indexed register move, and gfx1250 code that addresses VGPRs above v255 in a text
that does not name them (``s_set_vgpr_msb`` without LLVM's ``v0 /*v256*/``: the lanes of v0 and v256
would be one). None of these occurs in Triton 3.9's code for the demo suite or the test kernels.

Targets. CDNA (gfx942, gfx950) preloads kernargs into user SGPRs behind a compatibility prologue that loads
them again and jumps to the real entry (:func:`find_entry`). RDNA 3/3.5/4 (gfx11, gfx12.0) preloads
nothing, though Triton marks the arguments ``inreg``: the kernarg pointer alone is a user SGPR pair (gfx1100
pads ``.amdhsa_user_sgpr_count`` to 15 around a hardware bug; the padding holds no argument). Triton 3.9
marks nothing ``inreg`` for gfx1250; its ``gfx1250-strict`` arch does, and LLVM then preloads with no
prologue at all: the preloaded SGPRs hold the arguments from the first instruction on. Wave32 code (RDNA,
gfx1250) has 32 lanes a VGPR to spill SGPRs to, VCC is ``vcc_lo`` (``vcc_hi`` an SGPR of its own), and
VOPD pairs (``v_dual_mov_b32 v1, v2 :: v_dual_add_f32 ...``) read both halves before writing either.

Its length (over 500 lines) is one analysis: the kernarg layout, the dataflow through copies, SGPR
spills and lane writes, and the verdicts depend on each other's details and are read together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..objects.amd_object import HsacoKernel, KernelArg
from ..objects.amd_spills import slot_addresses
from ..objects.amdgcn import SGPR_VALUE_FILES, Block, Function, Instruction, Register, reachable
from ..objects.amdgcn_effects import defs_and_uses
from .finding import ERROR, NOTE, Finding, Severity

# User SGPRs in the order the hardware sets them up, with their sizes (AMDGPUUsage, "Initial Kernel
# Execution State"); the preloaded kernargs follow the last one enabled. Names are the
# `.amdhsa_user_sgpr_*` directives.
_USER_SGPRS = (
    ("private_segment_buffer", 4),
    ("dispatch_ptr", 2),
    ("queue_ptr", 2),
    ("kernarg_segment_ptr", 2),
    ("dispatch_id", 2),
    ("flat_scratch_init", 2),
    ("private_segment_size", 1),
)

# Register files the dataflow follows values through as scalars; the rest (exec, m0, scc, ttmp ...)
# are not followed: a copy into one of them counts as a read.
_SCALAR_FILES = SGPR_VALUE_FILES
_VECTOR_FILES = ("v", "a")



@dataclass(frozen=True)
class KernargLayout:
    """Where a kernel's arguments are when it starts: the kernarg pointer and the preloaded SGPRs."""

    kernarg_ptr_sgpr: int | None  # first SGPR of the kernarg segment pointer (s[0:1] -> 0), None if off
    preload_sgpr: int  # first SGPR holding preloaded kernargs
    preload_length: int  # dwords preloaded
    preload_offset: int  # first preloaded dword of the kernarg segment
    args: tuple[KernelArg, ...]  # the metadata's .args, hidden ones included
    wave32: bool = False  # waves of 32 lanes (RDNA, gfx1250): VCC is vcc_lo, and vcc_hi an SGPR of its own


def layout_from_directives(directives: Mapping[str, int], args: Sequence[KernelArg]) -> KernargLayout:
    """The layout from a kernel's ``.amdhsa_*`` directives (as :func:`amdgcn.amdhsa_directives` reads them)."""
    count = 0
    kernarg_ptr = None
    for name, size in _USER_SGPRS:
        if directives.get(f"user_sgpr_{name}", 0):
            if name == "kernarg_segment_ptr":
                kernarg_ptr = count
            count += size
    return KernargLayout(
        kernarg_ptr_sgpr=kernarg_ptr,
        preload_sgpr=count,
        preload_length=directives.get("user_sgpr_kernarg_preload_length", 0),
        preload_offset=directives.get("user_sgpr_kernarg_preload_offset", 0),
        args=tuple(args),
        wave32=bool(directives.get("wavefront_size32", 0)),
    )


def layout_from_hsaco(kernel: HsacoKernel) -> KernargLayout:
    """The layout from an HSACO kernel's descriptor (``<kernel>.kd``) and metadata note."""
    kd = kernel.descriptor
    return KernargLayout(
        kernarg_ptr_sgpr=kd.kernarg_segment_ptr_sgpr,
        preload_sgpr=kd.kernarg_preload_sgpr,
        preload_length=kd.kernarg_preload_length,
        preload_offset=kd.kernarg_preload_offset,
        args=kernel.args,
        wave32=kd.wave32,
    )


def args_from_metadata(entry: Mapping[str, object]) -> tuple[KernelArg, ...]:
    """The ``.args`` of one ``amdhsa.kernels[]`` entry of the metadata YAML."""
    out = []
    for arg in entry.get(".args") or ():  # type: ignore[attr-defined]
        if not isinstance(arg, dict):
            continue
        out.append(KernelArg(offset=_metadata_int(arg, ".offset"), size=_metadata_int(arg, ".size"),
                             value_kind=str(arg.get(".value_kind", "")), address_space=arg.get(".address_space")))
    return tuple(out)


def _metadata_int(arg: Mapping[str, object], key: str) -> int:
    """An integer field of a metadata ``.args`` entry (absent: 0); ValueError, one line, if it is not one."""
    value = arg.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        shown = "empty" if value is None else repr(str(value)[:60])
        raise ValueError(f"metadata field {key} is {shown}, not an integer")
    return int(value)


# -- value origins ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Origin:
    """A value a kernarg access put in a register: bytes [offset, offset + size) of the kernarg segment.

    ``kind`` is ``load`` (an ``s_load`` in the body), ``preload`` (a user SGPR the hardware filled) or
    ``pointer`` (a dword of the kernarg segment pointer itself; ``offset`` is 0 or 4 for lo and hi).
    """

    kind: str
    offset: int
    size: int
    register: str  # where it first landed, e.g. "s12"
    instruction: Instruction | None  # the load (for a preload: the compatibility prologue's load)


@dataclass
class _Events:
    """What happened to one origin on some path: where it was spilled, restored, overwritten."""

    spills: list[tuple[Instruction, str]] = field(default_factory=list)  # the first few, with "v69 lane 5"
    restores: list[Instruction] = field(default_factory=list)  # the first few
    restored: bool = False  # copied back out of a lane (v_readlane_b32) or read there, on some path
    killed: Instruction | None = None  # the first instruction seen overwriting it


Lanes = Mapping[int, frozenset[int]]


class _State:
    """Which origins each location may hold: SGPR units, and the lanes of VGPRs and scratch slots."""

    __slots__ = ("scalar", "vector")

    def __init__(self, scalar: dict[tuple[str, int], frozenset[int]] | None = None,
                 vector: dict[tuple, Lanes] | None = None):
        self.scalar = scalar if scalar is not None else {}
        self.vector = vector if vector is not None else {}

    def copy(self) -> _State:
        """A state that can change without changing this one (lane maps are never mutated in place)."""
        return _State(dict(self.scalar), dict(self.vector))

    def join(self, other: _State) -> bool:
        """Union ``other`` into this state; True if anything was added."""
        changed = False
        for unit, origins in other.scalar.items():
            mine = self.scalar.get(unit)
            if mine is None:
                self.scalar[unit] = origins
                changed = True
            elif not origins <= mine:
                self.scalar[unit] = mine | origins
                changed = True
        for key, lanes in other.vector.items():
            mine_lanes = self.vector.get(key)
            if mine_lanes is None:
                self.vector[key] = lanes
                changed = True
                continue
            merged = None
            for lane, origins in lanes.items():
                old = mine_lanes.get(lane)
                if old is None or not origins <= old:
                    if merged is None:
                        merged = dict(mine_lanes)
                    merged[lane] = origins if old is None else old | origins
            if merged is not None:
                self.vector[key] = merged
                changed = True
        return changed


@dataclass(frozen=True)
class KernargReport:
    """The dataflow's result for one kernel."""

    origins: tuple[Origin, ...]
    read: frozenset[int]  # indices into origins of the values some instruction reads
    events: Mapping[int, _Events]
    abstain: str | None  # why the kernel could not be analysed (None: it was)


class _Analysis:
    def __init__(self, function: Function, layout: KernargLayout, entry: int):
        self.function = function
        self.layout = layout
        self.entry = entry
        self.origins: list[Origin] = []
        self.origin_of_load: dict[tuple[int, int], int] = {}  # (instruction line, dword) -> origin
        self.read: set[int] = set()
        self.pointer: set[int] = set()  # origins that are the kernarg pointer itself
        self.events: dict[int, _Events] = {}
        self.abstain: str | None = None
        self.addresses = {id(inst): a for inst, a in zip(function.instructions, slot_addresses(function))}

    # -- origins ---------------------------------------------------------------------------------

    def _origin(self, kind: str, offset: int, size: int, register: str, inst: Instruction | None,
                key: tuple[int, int] | None = None) -> int:
        if key is not None and key in self.origin_of_load:
            return self.origin_of_load[key]
        self.origins.append(Origin(kind, offset, size, register, inst))
        index = len(self.origins) - 1
        if key is not None:
            self.origin_of_load[key] = index
        if kind == "pointer":
            self.pointer.add(index)
        return index

    def initial_state(self, prologue: Sequence[Instruction]) -> _State:
        """At the real entry: the kernarg pointer and the preloaded dwords in their user SGPRs."""
        state = _State()
        layout = self.layout
        if layout.kernarg_ptr_sgpr is not None:
            for half in (0, 1):
                sgpr = layout.kernarg_ptr_sgpr + half
                state.scalar[("s", sgpr)] = frozenset({self._origin("pointer", 4 * half, 4, f"s{sgpr}", None)})
        # The compatibility prologue loads what the hardware would preload into the same SGPRs:
        # point each preloaded dword at the instruction that shows where it comes from.
        shown: dict[int, Instruction] = {}
        for inst in prologue:
            if inst.mnemonic.startswith("s_load") and inst.operands:
                for unit in _units(inst.operand_registers(0)):
                    shown.setdefault(unit[1], inst)
        for i in range(layout.preload_length):
            sgpr = layout.preload_sgpr + i
            offset = 4 * (layout.preload_offset + i)
            state.scalar[("s", sgpr)] = frozenset({self._origin("preload", offset, 4, f"s{sgpr}", shown.get(sgpr))})
        return state

    # -- reads and writes ------------------------------------------------------------------------

    def _read_units(self, state: _State, units: Iterable[tuple[str, int]], inst: Instruction) -> None:
        for unit in units:
            origins = state.scalar.get(unit)
            if origins:
                self._read(origins, inst)

    def _read(self, origins: Iterable[int], inst: Instruction) -> None:
        for o in origins:
            if o in self.pointer:
                # The kernarg pointer used for anything but a load's base: accesses we cannot follow.
                self.abstain = self.abstain or f"the kernarg pointer is used by `{inst.text}` ({at(inst)})"
            self.read.add(o)

    def _read_vector(self, state: _State, regs: Iterable[Register], inst: Instruction) -> None:
        for reg in regs:
            if reg.file in _VECTOR_FILES:
                for i in range(reg.count):
                    lanes = state.vector.get((reg.file, reg.index + i))
                    if lanes:
                        for origins in lanes.values():
                            self._read(origins, inst)
                            self._restored(origins, inst)  # consumed straight from the lane

    def _kill_units(self, state: _State, units: Iterable[tuple[str, int]], inst: Instruction) -> None:
        for unit in units:
            origins = state.scalar.pop(unit, None)
            if origins:
                for o in origins:
                    events = self.events.setdefault(o, _Events())
                    if events.killed is None or inst.line < events.killed.line:
                        events.killed = inst

    def _kill_vector(self, state: _State, regs: Iterable[Register]) -> None:
        for reg in regs:
            if reg.file in _VECTOR_FILES:
                for i in range(reg.count):
                    state.vector.pop((reg.file, reg.index + i), None)

    def _spilled(self, origins: Iterable[int], inst: Instruction, where: str) -> None:
        for o in origins:
            events = self.events.setdefault(o, _Events())
            if len(events.spills) < 4:
                events.spills.append((inst, where))

    def _restored(self, origins: Iterable[int], inst: Instruction) -> None:
        for o in origins:
            events = self.events.setdefault(o, _Events())
            events.restored = True
            if len(events.restores) < 4 and inst not in events.restores:
                events.restores.append(inst)

    # -- the transfer function -------------------------------------------------------------------

    def transfer(self, block: Block, state: _State) -> _State:
        """The state after ``block``, from the state before it."""
        state = state.copy()
        for inst in block.instructions:
            self.step(inst, state)
        return state

    def step(self, inst: Instruction, state: _State) -> None:
        """Apply one instruction to ``state``: copies move origins, reads are recorded, writes kill."""
        m = inst.mnemonic
        ops = inst.operands
        if inst.dual is not None:
            self._dual(inst, state)
        elif m.startswith(("s_load_", "s_buffer_load_", "s_scratch_load_")):
            self._scalar_load(inst, state)
        elif m in ("s_mov_b32", "s_mov_b64", "s_cmov_b32", "s_cmov_b64") and len(ops) == 2:
            self._scalar_copy(inst, state, weak=m.startswith("s_cmov"))
        elif m == "v_writelane_b32" and len(ops) >= 3:
            self._writelane(inst, state)
        elif m == "v_readlane_b32" and len(ops) >= 3:
            self._readlane(inst, state)
        elif m.startswith(("scratch_store_", "buffer_store_dword", "buffer_store_b")) and _constant_address(inst):
            self._spill_store(inst, state)
        elif m.startswith(("scratch_load_", "buffer_load_dword", "buffer_load_b")) and _constant_address(inst) \
                and "lds" not in inst.modifiers:
            self._spill_load(inst, state)
        elif _is_vector_copy(inst):
            self._vector_copy(inst, state)
        elif m in ("v_swap_b32",) and len(ops) == 2:
            a, b = (_vector_units(op.registers) for op in ops)
            for ua, ub in zip(a, b):
                la, lb = state.vector.pop(ua, None), state.vector.pop(ub, None)
                if lb:
                    state.vector[ua] = lb
                if la:
                    state.vector[ub] = la
        elif m.startswith(("s_swappc", "s_call", "s_movrels", "v_movrel")):
            # A call may read any register (the kernarg pointer too); an indexed move reads one we
            # cannot name: the analysis cannot tell what is read.
            self.abstain = self.abstain or f"`{inst.text}` ({at(inst)}) may read any register"
            for origins in state.scalar.values():
                self._read(origins, inst)
            if m.startswith(("s_swappc", "s_call")):
                self._kill_units(state, _units(inst.operand_registers(0)), inst)
        else:
            self._generic(inst, state)

    def _dual(self, inst: Instruction, state: _State) -> None:
        """A VOPD pair: both halves read before either writes; a ``v_dual_mov_b32`` of a VGPR is a copy."""
        copies = []
        defs: list[Register] = []
        for half in inst.halves:
            if _is_vector_copy(half):
                copies.append((_vector_units(half.operand_registers(0)),
                               [state.vector.get(u) for u in _vector_units(half.operand_registers(1))]))
                defs.extend(half.operand_registers(0))
                continue
            half_defs, uses = defs_and_uses(half, wave32=True)
            self._read_units(state, _units(uses), inst)
            self._read_vector(state, uses, inst)
            defs.extend(half_defs)
        self._kill_units(state, _units(defs), inst)
        self._kill_vector(state, defs)
        for units, values in copies:
            for unit, lanes in zip(units, values):
                if lanes:
                    state.vector[unit] = lanes

    def _generic(self, inst: Instruction, state: _State) -> None:
        m = inst.mnemonic
        ops = inst.operands
        defs, uses = defs_and_uses(inst, wave32=self.layout.wave32)
        if m.startswith("global_") and len(ops) >= 3:
            # global_load v0, v1, s[0:1]: a saddr through the kernarg pointer at a VGPR offset.
            base = state.scalar.get(("s", ops[2].registers[0].index)) if ops[2].register and \
                ops[2].registers[0].file == "s" else None
            if base and base & self.pointer:
                self.abstain = self.abstain or f"a kernarg load at a VGPR offset: `{inst.text}` ({at(inst)})"
        self._read_units(state, _units(uses), inst)
        self._read_vector(state, uses, inst)
        if m.startswith(("s_movreld", "s_cmovk")):
            return  # writes a register we cannot name, or maybe none: nothing is surely overwritten
        self._kill_units(state, _units(defs), inst)
        self._kill_vector(state, defs)

    def _scalar_load(self, inst: Instruction, state: _State) -> None:
        ops = inst.operands
        dst = _units(inst.operand_registers(0))
        base_regs = inst.operand_registers(1)
        base_units = _units(base_regs)
        base = [state.scalar.get(u, frozenset()) for u in base_units]
        through_pointer = inst.mnemonic.startswith("s_load_") and len(base_units) == 2 and \
            bool(base[0] & self.pointer) and bool(base[1] & self.pointer)
        # Registers other than the pointer that name the address (an soffset) are read as usual.
        other_uses = [r for op in ops[2:] for r in op.registers]
        self._read_units(state, _units(other_uses), inst)
        if not through_pointer:
            for origins in base:
                self._read(origins, inst)
            self._kill_units(state, dst, inst)
            return
        # gfx11+ disassembly writes a zero offset as the soffset `null` (`s_load_b256 s[44:51], s[0:1], null`).
        offset = (0 if ops[2].text == "null" else _immediate(ops[2].text)) if len(ops) >= 3 else 0
        extra = inst.modifier("offset")
        if offset is None or other_uses:
            self.abstain = self.abstain or f"a kernarg load at a register offset: `{inst.text}` ({at(inst)})"
            self._kill_units(state, dst, inst)
            return
        if extra:
            offset += _immediate(extra) or 0
        self._kill_units(state, dst, inst)
        size = _load_bytes(inst.mnemonic, len(dst))
        for i, unit in enumerate(dst):
            o = self._origin("load", offset + 4 * i, min(4, size), f"{unit[0]}{unit[1]}", inst, key=(inst.line, i))
            state.scalar[unit] = frozenset({o})

    def _scalar_copy(self, inst: Instruction, state: _State, weak: bool) -> None:
        dst = _units(inst.operand_registers(0))
        src_regs = inst.operand_registers(1)
        src = _units(src_regs)
        tracked_dst = all(u[0] in _SCALAR_FILES for u in dst)
        if not tracked_dst or (src and len(src) != len(dst)):
            # Into exec, m0, ttmp ...: the value goes where we do not follow it, so it counts as read.
            self._read_units(state, src, inst)
            if tracked_dst:
                self._kill_units(state, dst, inst)
            return
        values = [state.scalar.get(u) for u in src] if src else [None] * len(dst)
        if not weak:
            self._kill_units(state, dst, inst)
        for unit, origins in zip(dst, values):
            if origins:
                state.scalar[unit] = origins | state.scalar.get(unit, frozenset()) if weak else origins

    def _writelane(self, inst: Instruction, state: _State) -> None:
        vdst = inst.operand_registers(0)
        src = _units(inst.operand_registers(1))
        lane = _immediate(inst.operands[2].text)
        lane_regs = inst.operand_registers(2)
        self._read_units(state, _units(lane_regs), inst)
        if lane is None or len(vdst) != 1 or vdst[0].file not in _VECTOR_FILES or len(src) > 1 \
                or (src and src[0][0] not in _SCALAR_FILES):
            # A lane we cannot name, or a value we do not follow: the source counts as read, and no
            # lane is surely overwritten.
            self._read_units(state, src, inst)
            return
        key = (vdst[0].file, vdst[0].index)
        origins = state.scalar.get(src[0]) if src else None  # an inline constant overwrites the lane
        lanes = dict(state.vector.get(key, {}))
        if origins:
            lanes[lane] = origins
            self._spilled(origins, inst, f"{vdst[0]} lane {lane}")
        else:
            lanes.pop(lane, None)
        if lanes:
            state.vector[key] = lanes
        else:
            state.vector.pop(key, None)

    def _readlane(self, inst: Instruction, state: _State) -> None:
        dst = _units(inst.operand_registers(0))
        vsrc = inst.operand_registers(1)
        lane = _immediate(inst.operands[2].text)
        self._read_units(state, _units(inst.operand_registers(2)), inst)
        origins: frozenset[int] | None = None
        if lane is not None and len(vsrc) == 1 and vsrc[0].file in _VECTOR_FILES:
            origins = state.vector.get((vsrc[0].file, vsrc[0].index), {}).get(lane)
        else:
            self._read_vector(state, vsrc, inst)
        self._kill_units(state, dst, inst)
        if origins and len(dst) == 1 and dst[0][0] in _SCALAR_FILES:
            state.scalar[dst[0]] = origins
            self._restored(origins, inst)
        elif origins:
            self._read(origins, inst)

    def _slot(self, inst: Instruction) -> tuple | None:
        """The scratch slot ``inst`` accesses, ("mem", base, byte offset); None if its address is not known
        (an SGPR address whose value the block does not set: :func:`amd_spills.slot_addresses`)."""
        address = self.addresses.get(id(inst))
        return None if address is None else ("mem", *address)

    def _unknown_slot(self, inst: Instruction, state: _State, units: Iterable[tuple]) -> bool:
        """At a scratch access whose address is not known: refuse the kernel if it may move lanes that hold
        kernarg values (it stores such a VGPR, or reloads while some slot holds some). True: not known."""
        if self._slot(inst) is not None:
            return False
        if any(state.vector.get(u) for u in units) or any(k[0] == "mem" and v for k, v in state.vector.items()):
            self.abstain = self.abstain or (f"a scratch access whose slot this analysis cannot name: `{inst.text}` "
                                            f"({at(inst)})")
        return True

    def _spill_store(self, inst: Instruction, state: _State) -> None:
        # scratch_store_dword off, v5, off offset:16 / buffer_store_dword v5, off, s[0:3], 0 offset:16
        scratch = inst.mnemonic.startswith("scratch_")
        data = inst.operand_registers(1 if scratch else 0)
        self._read_units(state, _units([r for op in inst.operands for r in op.registers]), inst)
        if self._unknown_slot(inst, state, _vector_units(data)):
            return
        base = self._slot(inst)
        assert base is not None
        for i, key in enumerate(_vector_units(data)):
            slot = (*base[:-1], base[-1] + 4 * i)
            lanes = state.vector.get(key)
            if lanes:
                state.vector[slot] = lanes
                for origins in lanes.values():
                    self._spilled(origins, inst, f"scratch offset {slot[-1]}")
            else:
                state.vector.pop(slot, None)

    def _spill_load(self, inst: Instruction, state: _State) -> None:
        dst = inst.operand_registers(0)
        self._read_units(state, _units([r for op in inst.operands[1:] for r in op.registers]), inst)
        if self._unknown_slot(inst, state, ()):
            self._kill_vector(state, dst)
            return
        base = self._slot(inst)
        assert base is not None
        self._kill_vector(state, dst)
        for i, key in enumerate(_vector_units(dst)):
            lanes = state.vector.get((*base[:-1], base[-1] + 4 * i))
            if lanes:
                # Lanes back from scratch into a VGPR: still spilled until a v_readlane restores them.
                state.vector[key] = lanes

    def _vector_copy(self, inst: Instruction, state: _State) -> None:
        dst = _vector_units(inst.operand_registers(0))
        src = _vector_units(inst.operand_registers(1))
        values = [state.vector.get(u) for u in src]
        self._kill_vector(state, inst.operand_registers(0))
        for unit, lanes in zip(dst, values):
            if lanes:
                state.vector[unit] = lanes

    # -- the fixpoint ----------------------------------------------------------------------------

    def run(self, prologue: Sequence[Instruction]) -> KernargReport:
        """Iterate the blocks reachable from the entry until no state grows (a worklist fixpoint)."""
        blocks = self.function.blocks
        live = reachable(self.function, self.entry)
        ins: dict[int, _State] = {self.entry: self.initial_state(prologue)}
        order = [b.index for b in blocks if b.index in live]
        pending = {self.entry}
        while pending:
            # Layout order is close to reverse post-order for compiler output: few passes.
            for index in order:
                if index not in pending:
                    continue
                pending.discard(index)
                out = self.transfer(blocks[index], ins[index])
                for succ in blocks[index].successors:
                    if succ not in ins:
                        ins[succ] = out.copy()
                        pending.add(succ)
                    elif ins[succ].join(out):
                        pending.add(succ)
        return KernargReport(tuple(self.origins), frozenset(self.read), dict(self.events), self.abstain)


def _is_vector_copy(inst: Instruction) -> bool:
    m = inst.mnemonic
    if m not in ("v_mov_b32", "v_mov_b32_e32", "v_mov_b32_e64", "v_mov_b64", "v_mov_b64_e32",
                 "v_accvgpr_write_b32", "v_accvgpr_write", "v_accvgpr_read_b32", "v_accvgpr_read",
                 "v_accvgpr_mov_b32", "v_dual_mov_b32"):
        return False
    if len(inst.operands) != 2 or inst.modifiers:
        return False
    src = inst.operands[1]
    return src.register is not None and src.registers[0].file in _VECTOR_FILES and src.text == str(src.registers[0])


def _constant_address(inst: Instruction) -> bool:
    """A scratch access whose address is the same for every lane: a spill slot."""
    ops = inst.operands
    if inst.mnemonic.startswith("scratch_"):
        # scratch_store vaddr, vdata, saddr / scratch_load vdst, vaddr, saddr: vaddr must be `off`.
        index = 0 if "_store" in inst.mnemonic else 1
        return len(ops) >= 3 and ops[index].text == "off"
    # MUBUF: buffer_store_dword vdata, off, s[0:3], soffset offset:N (no offen/idxen).
    return len(ops) >= 4 and ops[1].text == "off" and not {"offen", "idxen"} & set(inst.modifiers)


def _units(regs: Iterable[Register]) -> list[tuple[str, int]]:
    """The scalar register units (SGPRs, vcc, exec, m0 ...) among ``regs``."""
    return [u for reg in regs if reg.file not in _VECTOR_FILES for u in reg.units()]


def _vector_units(regs: Iterable[Register]) -> list[tuple[str, int]]:
    return [u for reg in regs if reg.file in _VECTOR_FILES for u in reg.units()]


def _immediate(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


def _load_bytes(mnemonic: str, dwords: int) -> int:
    # gfx12 sub-dword scalar loads (s_load_u8, s_load_i16 ...) fill one SGPR from fewer bytes.
    for suffix, size in (("_u8", 1), ("_i8", 1), ("_u16", 2), ("_i16", 2)):
        if mnemonic.endswith(suffix):
            return size
    return 4 * dwords


# -- from origins to arguments ------------------------------------------------------------------------

def find_entry(function: Function, layout: KernargLayout) -> tuple[int, list[Instruction]]:
    """The block where the kernel really starts, and the preload compatibility prologue before it.

    With kernarg preloading, the code starts with a prologue for firmware that does not preload: it
    s_loads the preloaded arguments into the same SGPRs and branches to the real entry, 256 bytes in.
    Its loads are never read by design, so the analysis starts at the real entry. That is gfx9's (gfx942,
    gfx950); gfx1250 code that preloads (Triton's ``gfx1250-strict``) has no such prologue and starts at
    its first instruction, which this shape (s_loads and gfx9's ``s_waitcnt`` only, then an ``s_branch``
    to a 256-byte aligned block) does not match.
    """
    if not layout.preload_length or not function.blocks:
        return 0, []
    first = function.blocks[0]
    last = first.instructions[-1] if first.instructions else None
    if last is None or last.mnemonic != "s_branch":
        return 0, []
    if not all(i.mnemonic.startswith(("s_load", "s_waitcnt", "s_nop", "s_branch")) for i in first.instructions):
        return 0, []
    target = first.successors[0] if first.successors else None
    if target is None or function.blocks[target].aligned < 8:
        return 0, []
    return target, list(first.instructions)


def analyse(function: Function, layout: KernargLayout) -> KernargReport:
    """Run the kernarg dataflow on one kernel function."""
    entry, prologue = find_entry(function, layout)
    analysis = _Analysis(function, layout, entry)
    if layout.kernarg_ptr_sgpr is None and not layout.preload_length:
        return KernargReport((), frozenset(), {}, None)
    if function.vgprs_unnamed:
        # gfx1250 code past v255 in a text that writes v256 as v0: lanes and scratch slots cannot be named.
        return KernargReport((), frozenset(), {}, "the code addresses VGPRs above v255 (s_set_vgpr_msb) and the "
                             "text does not say which (no `v0 /*v256*/` annotations)")
    # An unresolved jump got edges to every block (see amdgcn._blocks): still sound, just less precise.
    return analysis.run(prologue)


@dataclass(frozen=True)
class ArgumentFate:
    """One argument's loaded values, and whether any of them is read."""

    index: int
    arg: KernelArg
    origins: tuple[int, ...]
    read: bool
    preloaded_only: bool
    spilled: bool
    lost_spill: bool  # a loaded value was spilled and no path ever restores it
    rode_along: bool  # loaded only by wide loads that also fetched an argument that is read

    @property
    def lost(self) -> bool:
        """Never read, or spilled and never restored (then it may be read on other paths only)."""
        return not self.read or self.lost_spill


def argument_fates(report: KernargReport, layout: KernargLayout) -> list[ArgumentFate]:
    """For each non-hidden argument that some kernarg access loaded: is a loaded value ever read?

    A pointer counts as read only if every dword of it that was loaded is read (a pointer with a
    lost half is as broken as a lost pointer); a value counts as read if any dword is (an i64 may be
    used through its low half only).
    """
    by_load: dict[int, list[int]] = {}  # instruction line -> origins it produced
    for index, origin in enumerate(report.origins):
        if origin.kind == "load" and origin.instruction is not None:
            by_load.setdefault(origin.instruction.line, []).append(index)
    fates = []
    for index, arg in enumerate(layout.args):
        if arg.value_kind.startswith("hidden_") or arg.size <= 0:
            continue
        lo, hi = arg.offset, arg.offset + arg.size
        mine = [i for i, o in enumerate(report.origins)
                if o.kind != "pointer" and o.offset < hi and lo < o.offset + o.size]
        if not mine:
            continue
        groups: dict[int, bool] = {}
        for i in mine:
            dword = (max(report.origins[i].offset, lo) - lo) // 4
            groups[dword] = groups.get(dword, False) or i in report.read
        read = all(groups.values()) if arg.value_kind == "global_buffer" else any(groups.values())
        spilled = any(i in report.events and report.events[i].spills for i in mine)
        lost_spill = any(i in report.events and report.events[i].spills and not report.events[i].restored
                         for i in mine)
        loads = {report.origins[i].instruction.line for i in mine  # type: ignore[union-attr]
                 if report.origins[i].kind == "load" and report.origins[i].instruction is not None}
        others_read = bool(loads) and all(
            any(j in report.read for j in by_load[line] if not _overlaps(report.origins[j], lo, hi))
            for line in loads)
        fates.append(ArgumentFate(index, arg, tuple(mine), read,
                                  preloaded_only=all(report.origins[i].kind == "preload" for i in mine),
                                  spilled=spilled, lost_spill=lost_spill, rode_along=others_read))
    return fates


def _overlaps(origin: Origin, lo: int, hi: int) -> bool:
    return origin.offset < hi and lo < origin.offset + origin.size


def findings(function: Function, layout: KernargLayout, *, target: str, ir_uses: list[bool] | None,
             arg_names: Sequence[str] | None, appended_args: int) -> list[Finding]:
    """The lint's findings for one kernel: arguments whose loaded value is never read.

    ``ir_uses`` is, per non-hidden argument in order, whether the kernel's LLVM IR uses it (None: no IR
    at hand). ``arg_names`` names the non-hidden arguments in order, the appended ones excluded (the
    caller's Python parameters that are not constexpr). ``appended_args``: how many non-hidden
    arguments the compiler appended after the kernel's own, never reported (Triton's scratch pointers).
    """
    report = analyse(function, layout)
    if report.abstain is not None:
        return []
    visible = [i for i, a in enumerate(layout.args) if not a.value_kind.startswith("hidden_")]
    skip = set(visible[max(0, len(visible) - appended_args):])
    position = {arg_index: n for n, arg_index in enumerate(visible)}
    if ir_uses is not None and len(ir_uses) != len(visible):
        ir_uses = None  # IR of another kernel or another compile: do not lean on it
    out = []
    for fate in argument_fates(report, layout):
        if not fate.lost or fate.index in skip:
            continue
        n = position[fate.index]
        name = arg_names[n] if arg_names is not None and n < len(arg_names) else None
        severity, why = _judge(fate, ir_uses[n] if ir_uses is not None else None)
        if severity is None:
            continue
        first = min((report.origins[i] for i in fate.origins),
                    key=lambda o: (o.kind == "preload", o.instruction.line if o.instruction else 0))
        load = first.instruction.text if first.instruction is not None else f"kernarg preload into {first.register}"
        if first.kind == "preload":
            why = f"preloaded into {first.register}; {why}"
        out.append(Finding(
            kernel=function.name, target=target, arg_index=fate.index, arg_offset=fate.arg.offset,
            arg_name=name, severity=severity,
            load=load, line=first.instruction.line if first.instruction is not None else None,
            address=first.instruction.address if first.instruction is not None else None,
            reason=f"{why}; {_fate_story(report, fate)}",
        ))
    return out


def _judge(fate: ArgumentFate, ir_used: bool | None) -> tuple[Severity | None, str]:
    if fate.read:  # then a spilled copy is lost, and the value is read on other paths only
        what = "read on some paths, but a spilled copy of it is never restored"
        if ir_used is False:
            return NOTE, f"dead argument (the LLVM IR does not use it) {what}"
        return ERROR, ("the LLVM IR uses this argument; " if ir_used else "") + what
    if ir_used is True:
        return ERROR, "the LLVM IR uses this argument but the machine code never reads its loaded value"
    if ir_used is False:
        if fate.preloaded_only or fate.rode_along:
            return None, ""  # preloaded by the hardware, or fetched by a wide load with a neighbour
        return NOTE, "dead argument (the LLVM IR does not use it) that is loaded anyway"
    if fate.preloaded_only and not fate.spilled:
        return NOTE, "preloaded and never read (no LLVM IR to tell whether the source uses it)"
    return ERROR, "loaded and never read" + (" after a spill" if fate.spilled else "")


def at(inst: Instruction) -> str:
    """Where an instruction is: its address in a disassembly, else its line in the text."""
    return f"{inst.address:#x}" if inst.address is not None else f"line {inst.line}"


def _fate_story(report: KernargReport, fate: ArgumentFate) -> str:
    events = [report.events[i] for i in fate.origins if i in report.events]
    lost = [s for e in events if e.spills and not e.restored for s in e.spills]
    if lost:
        inst, where = min(lost, key=lambda s: s[0].line)
        return f"spilled to {where} ({at(inst)}) and never restored"
    spills = [s for e in events for s in e.spills]
    if spills:
        inst, where = min(spills, key=lambda s: s[0].line)
        restores = sorted({r.line: r for e in events for r in e.restores}.values(), key=lambda r: r.line)
        shown = ", ".join(at(r) for r in restores[:3])
        return f"spilled to {where} ({at(inst)}), restored at {shown}, but the restored value is never read"
    kills = [e.killed for e in events if e.killed is not None]
    if kills:
        return f"its register is overwritten at {at(min(kills, key=lambda k: k.line))} before any read"
    return "no instruction reads its register"
