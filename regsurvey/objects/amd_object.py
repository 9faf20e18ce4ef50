"""Read an AMD HSACO (the ELF code object Triton emits for gfx942, gfx950, RDNA and gfx1250).

The only module that reads AMD objects. Two levels:

- ``parse_hsaco`` decodes what the object holds: the arch, and per kernel the msgpack metadata of the
  ``NT_AMDGPU_METADATA`` note (``amdhsa.kernels[]``, with its ``.args``) and the 64-byte kernel
  descriptor behind the ``<kernel>.kd`` symbol (user-SGPR enables, kernarg preload), for the lint.
- ``read_hsaco`` turns that into the figures of a survey's row (:class:`~regsurvey.model.figures.Figures`,
  every AMD figure of the registry): registers, spills, scratch, LDS, kernarg size and the occupancy in
  waves per SIMD. Given the kernel's code text as well, it counts the architectural VGPRs exactly where
  the object rounds them.

Layouts follow LLVM's AMDGPUUsage ("Code Object V3+ Metadata", "Kernel Descriptor", "Initial Kernel
Execution State") and ``llvm/Support/AMDHSAKernelDescriptor.h``.
"""

from __future__ import annotations

import functools
import io
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import msgpack
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import NoteSection, SymbolTableSection

from ..errors import CorruptObjectError
from ..model.figures import AMD, Figures
from ..model.targets import Target
from .elfcheck import PARSE_ERRORS, check_extent, first_line
from .loop_spills import NO_LOOP_SPILLS, amd_loop_spills

# The AMDGPU vendor note that carries the code object V3+ metadata (msgpack).
_NOTE_NAME = "AMDGPU"
_NT_AMDGPU_METADATA = 32

# kernel_descriptor_t, 64 bytes little-endian (AMDHSAKernelDescriptor.h):
# group_segment_fixed_size u32, private_segment_fixed_size u32, kernarg_size u32, reserved0[4],
# kernel_code_entry_byte_offset i64, reserved1[20], compute_pgm_rsrc3 u32, compute_pgm_rsrc1 u32,
# compute_pgm_rsrc2 u32, kernel_code_properties u16, kernarg_preload u16, reserved3[4].
_KD = struct.Struct("<III4sq20sIIIHH4s")
assert _KD.size == 64

# kernel_code_properties bits that enable user SGPRs, in the order the hardware loads them, with the
# number of SGPRs each takes (AMDGPUUsage "Initial Kernel Execution State": private segment buffer 4,
# dispatch ptr 2, queue ptr 2, kernarg segment ptr 2, dispatch id 2, flat scratch init 2, private
# segment size 1). Preloaded kernargs come right after the last enabled one.
_USER_SGPRS = (
    ("private_segment_buffer", 0, 4),
    ("dispatch_ptr", 1, 2),
    ("queue_ptr", 2, 2),
    ("kernarg_segment_ptr", 3, 2),
    ("dispatch_id", 4, 2),
    ("flat_scratch_init", 5, 2),
    ("private_segment_size", 6, 1),
)

# The occupancy facts of each target (registers and LDS per CU, waves per SIMD, allocation granules) live
# in its record in model/targets.py.
# COMPUTE_PGM_RSRC1 holds the registers the hardware allocates per wave, as (count / granule) - 1:
# GRANULATED_WORKITEM_VGPR_COUNT (bits 0-5, in the granules of ``vgpr_encoding_granule``) and
# GRANULATED_WAVEFRONT_SGPR_COUNT (bits 6-9, granules of 8 on gfx9; reserved, 0, on gfx10+). The descriptor's
# format, read before the object's target is known (``parse_hsaco``), so not a target's record.
_SGPR_ENCODING_GRANULE = 8


def isa_of_target(target: str) -> str:
    """The gfx arch of an ``amdhsa.target`` string: ``amdgpu9.50-amd-amdhsa-unknown-gfx950``,
    ``amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``; ``gfx1250`` of Triton's ``gfx1250-strict``
    (``amdgpu12.50s-...-gfx1250-strict``: gfx1250's ISA and encodings)."""
    found = re.search(r"\b(gfx[0-9a-f]+)(?:-strict)?(?::|$)", target)
    return found[1] if found else target.rsplit("-", 1)[-1].split(":", 1)[0]


def gfx_major(arch: str) -> int:
    """The GFX generation of an arch: ``gfx942`` -> 9, ``gfx1100`` -> 11, ``gfx1250`` -> 12."""
    return int(arch[3:-2]) if arch.startswith("gfx") and arch[3:].isalnum() and len(arch) > 5 else 0


def vgpr_encoding_granule(arch: str, *, wave32: bool) -> int:
    """VGPRs per granule of the descriptor's VGPR count (LLVM's getVGPREncodingGranule, checked against
    ``; VGPRBlocks`` of Triton's compiles): 8 on gfx90a+ (wave64, the unified VGPR+AGPR count); on gfx10+ 8
    for wave32 and 4 for wave64; 16 on gfx1250, whose waves may address 1024 VGPRs."""
    if arch.startswith("gfx125"):
        return 16
    if gfx_major(arch) >= 10:
        return 8 if wave32 else 4
    return 8


@dataclass(frozen=True)
class KernelArg:
    """One kernel argument from the metadata note (``.args[]``); the note records no names."""

    offset: int  # bytes into the kernarg segment
    size: int
    value_kind: str  # "global_buffer", "by_value", "hidden_*", ...
    address_space: str | None  # "global", "constant", ... for pointers; None for values


@dataclass(frozen=True)
class KernelDescriptor:
    """The fields of the 64-byte kernel descriptor (``<kernel>.kd``) that the lint needs.

    Booleans are the ``kernel_code_properties`` user-SGPR enables; they match the ``.amdhsa_user_sgpr_*``
    directives in Triton's amdgcn text.
    """

    group_segment_fixed_size: int
    private_segment_fixed_size: int
    kernarg_size: int
    kernel_code_entry_byte_offset: int
    compute_pgm_rsrc1: int
    compute_pgm_rsrc2: int
    compute_pgm_rsrc3: int
    private_segment_buffer: bool
    dispatch_ptr: bool
    queue_ptr: bool
    kernarg_segment_ptr: bool
    dispatch_id: bool
    flat_scratch_init: bool
    private_segment_size: bool
    uses_dynamic_stack: bool
    kernarg_preload_length: int  # SGPRs (dwords) of kernargs the hardware preloads
    kernarg_preload_offset: int  # where the preloaded span starts in the kernarg segment, in dwords
    user_sgpr_count: int  # COMPUTE_PGM_RSRC2.USER_SGPR_COUNT: enabled user SGPRs + preloaded kernargs
    enable_private_segment: bool  # COMPUTE_PGM_RSRC2.ENABLE_PRIVATE_SEGMENT (scratch)
    accum_offset: int  # first AGPR index in the unified file (COMPUTE_PGM_RSRC3.ACCUM_OFFSET), gfx90a+
    # Registers the hardware allocates per lane (VGPRs, AGPRs included) and per wave (SGPRs), from
    # COMPUTE_PGM_RSRC1. With ``amdgpu-waves-per-eu`` (Triton's ``waves_per_eu``) LLVM reserves more
    # than the kernel uses so that no more waves fit: the metadata note's counts do not show that.
    allocated_vgprs: int
    allocated_sgprs: int
    wave32: bool = False  # kernel_code_properties.ENABLE_WAVEFRONT_SIZE32 (gfx10+): waves of 32 lanes, else 64
    # COMPUTE_PGM_RSRC1.WGP_MODE (gfx10 to gfx12.0): a workgroup's waves may use both CUs of a workgroup
    # processor; clear, they stay on one CU (CU mode). False before gfx10, and on gfx1250 (no such bit).
    wgp_mode: bool = False

    @property
    def wave_size(self) -> int:
        """Lanes per wave: 32 or 64."""
        return 32 if self.wave32 else 64

    @property
    def kernarg_segment_ptr_sgpr(self) -> int | None:
        """First SGPR of the kernarg segment pointer pair (0 for ``s[0:1]``), or None if not enabled."""
        if not self.kernarg_segment_ptr:
            return None
        return self._sgprs_before("kernarg_segment_ptr")

    @property
    def kernarg_preload_sgpr(self) -> int:
        """First SGPR that holds a preloaded kernarg: right after the enabled user SGPRs."""
        return self._sgprs_before(None)

    def _sgprs_before(self, stop: str | None) -> int:
        count = 0
        for name, _bit, size in _USER_SGPRS:
            if name == stop:
                break
            if getattr(self, name):
                count += size
        return count


@dataclass(frozen=True)
class HsacoKernel:
    """One kernel of an HSACO: its metadata map as the note holds it, its args and its descriptor."""

    name: str
    metadata: Mapping[str, Any]  # the ``amdhsa.kernels[]`` entry, keys like ".vgpr_count"
    args: tuple[KernelArg, ...]
    descriptor: KernelDescriptor


@dataclass(frozen=True)
class HsacoInfo:
    """What an HSACO holds: the arch (``gfx950``), the full ``amdhsa.target`` string and its kernels."""

    arch: str
    target: str  # e.g. "amdgpu9.50-amd-amdhsa-unknown-gfx950" (feature suffixes like ":xnack-" kept)
    kernels: tuple[HsacoKernel, ...]


@functools.lru_cache(maxsize=4)  # the survey reads an object's resources, then lints it: parse once
def parse_hsaco(data: bytes) -> HsacoInfo:
    """Decode an HSACO's metadata note and kernel descriptors; CorruptObjectError if it is not one."""
    try:
        elf = ELFFile(io.BytesIO(data))
        if elf.header["e_machine"] != "EM_AMDGPU":
            raise CorruptObjectError(f"not an AMDGPU ELF (e_machine {elf.header['e_machine']})")
        check_extent(elf, len(data), "HSACO")
        notes = _metadata_notes(elf)
        if not notes:
            raise CorruptObjectError("HSACO has no NT_AMDGPU_METADATA note")
        root = _unpack(notes[0])
        kinds = root.get("amdhsa.kernels")
        if not isinstance(kinds, list) or not kinds:
            raise CorruptObjectError("HSACO metadata lists no kernel (amdhsa.kernels is empty)")
        target = root.get("amdhsa.target")
        if not isinstance(target, str) or not target:
            raise CorruptObjectError("HSACO metadata has no amdhsa.target")
        arch = isa_of_target(target)
        symbols = _symbol_bytes(elf, data)
        kernels = tuple(_kernel(meta, symbols, arch) for meta in kinds)
    except CorruptObjectError:
        raise
    except PARSE_ERRORS as exc:
        # pyelftools and msgpack report a cut or altered object in many ways; all mean "corrupt".
        raise CorruptObjectError(f"not a readable HSACO: {first_line(exc)}") from None
    return HsacoInfo(arch=arch, target=target, kernels=kernels)


def read_hsaco(data: bytes, *, lds_bytes: int, num_warps: int, target: Target,
               code_text: str | None = None, info: HsacoInfo | None = None) -> Figures:
    """Read the figures of the one kernel in a Triton HSACO compiled for ``target``: every AMD figure of
    the registry (``model.figures``).

    ``vgpr`` and ``agpr`` are LLVM's ``NumVgprs`` (architectural VGPRs) and ``NumAgprs`` (accumulation
    VGPRs), per lane. ``vgpr_total`` is LLVM's ``TotalNumVgprs``, the unified count that occupancy
    depends on: on gfx90a+ both kinds share one 512-entry file, the AGPRs from ACCUM_OFFSET =
    ``NumVgprs`` rounded up to 4, so with AGPRs in use it is that offset plus ``agpr`` (else ``vgpr``).
    The object records only ``vgpr_total`` and ``agpr``: where AGPRs are in use, ``vgpr`` comes from
    the kernel's code (below). ``sgpr`` is per wave, ``vgpr_spill`` and ``sgpr_spill`` count spilled
    registers, ``scratch_bytes`` is per lane, ``lds_bytes`` per workgroup, ``kernarg_bytes`` the kernarg
    segment (hidden args included) and ``occupancy`` waves per SIMD, from the registers the descriptor
    allocates (which include what ``waves_per_eu`` reserves) and the LDS and workgroup size.

    ``lds_bytes`` is Triton's compiled metadata ``shared``: Triton allocates LDS dynamically, so the
    object's group segment size is 0. ``num_warps`` is the number of waves per workgroup.

    ``code_text`` is the kernel's code from the same compile (Triton's ``amdgcn`` text, or an
    ``llvm-objdump -d`` of this object). With AGPRs in use the object holds ``NumVgprs`` only rounded
    up to 4 (the AGPR offset); the code gives it exactly: one past the highest VGPR its instructions
    name. Without it (or if the code does not fit the object) ``vgpr`` is that rounded figure. The
    spills inside loops (``loop_spill_ops``, ``loop_spill_depth``) come from the code too, from the spill
    comments of Triton's text (:mod:`regsurvey.objects.loop_spills`); without it they are 0.
    ``info``: ``parse_hsaco(data)`` if the caller has it.
    """
    if not target.is_amd:
        raise ValueError(f"read_hsaco needs an AMD target, not {target.name}")
    if info is None:
        info = parse_hsaco(data)
    if info.arch != str(target.arch):
        raise CorruptObjectError(f"HSACO is for {info.arch}, not the target {target.arch}")
    if len(info.kernels) != 1:
        raise CorruptObjectError(f"HSACO holds {len(info.kernels)} kernels; Triton emits one")
    kernel = info.kernels[0]
    meta = kernel.metadata
    # .vgpr_count is TotalNumVgprs: ACCUM_OFFSET + AGPRs when AGPRs are in use, NumVgprs otherwise;
    # .agpr_count is NumAgprs.
    total_vgpr = _int(meta, ".vgpr_count")
    agpr = _int(meta, ".agpr_count", default=0)
    vgpr = total_vgpr - agpr if agpr else total_vgpr
    if agpr and code_text is not None:
        vgpr = _code_vgprs(code_text, accum_offset=vgpr)
    loops = amd_loop_spills(code_text) if code_text is not None else NO_LOOP_SPILLS
    return Figures.complete(
        AMD,
        vgpr=vgpr,
        agpr=agpr,
        sgpr=_int(meta, ".sgpr_count"),
        vgpr_spill=_int(meta, ".vgpr_spill_count"),
        sgpr_spill=_int(meta, ".sgpr_spill_count"),
        scratch_bytes=_int(meta, ".private_segment_fixed_size"),
        lds_bytes=lds_bytes,
        occupancy=amd_occupancy(
            vgprs=kernel.descriptor.allocated_vgprs,
            sgprs=kernel.descriptor.allocated_sgprs,
            lds_bytes=lds_bytes,
            num_warps=num_warps,
            target=target,
            wave_size=kernel.descriptor.wave_size,
            cu_mode=target.has_cu_mode and not kernel.descriptor.wgp_mode,
        ),
        kernarg_bytes=_int(meta, ".kernarg_segment_size"),
        vgpr_total=total_vgpr,
        loop_spill_ops=loops.in_loops,
        loop_spill_depth=loops.deepest,
    )


def driver_attributes(data: bytes) -> tuple[int, int, int]:
    """What HIP reports for the HSACO's kernel once loaded, as Triton's driver reads it:
    ``HIP_FUNC_ATTRIBUTE_NUM_REGS`` (the runtime's usedVGPRs, the note's ``.vgpr_count``),
    ``LOCAL_SIZE_BYTES`` (its privateMemSize, ``.private_segment_fixed_size``) and
    ``MAX_THREADS_PER_BLOCK`` (its workgroup size, ``.max_flat_workgroup_size``)."""
    info = parse_hsaco(data)
    if len(info.kernels) != 1:
        raise CorruptObjectError(f"HSACO holds {len(info.kernels)} kernels; Triton emits one")
    meta = info.kernels[0].metadata
    return (_int(meta, ".vgpr_count"), _int(meta, ".private_segment_fixed_size"),
            _int(meta, ".max_flat_workgroup_size"))


def _code_vgprs(code_text: str, *, accum_offset: int) -> int:
    """``NumVgprs`` from the kernel's code: one past the highest VGPR its instructions name, where that
    rounds up to the object's AGPR offset; else the offset (code of another compile, or a VGPR that
    LLVM counts and no instruction names)."""
    from .amdgcn import registers_named

    named = registers_named(code_text).get("v", 0)
    return named if _align(named, 4) == accum_offset else accum_offset


def amd_occupancy(*, vgprs: int, sgprs: int, lds_bytes: int, num_warps: int, target: Target,
                  wave_size: int | None = None, cu_mode: bool = False) -> int:
    """Waves per SIMD that fit on one CU (RDNA: one workgroup processor) of ``target``, 0 if one workgroup
    cannot fit.

    ``vgprs`` are the VGPRs a wave holds per lane (the unified VGPR+AGPR count on CDNA) and ``sgprs`` its
    SGPRs, as the kernel descriptor allocates them (``KernelDescriptor.allocated_vgprs`` /
    ``allocated_sgprs``). Those, not the metadata note's counts, are what LLVM's ``; Occupancy``
    comes from: under ``amdgpu-waves-per-eu`` (Triton's ``waves_per_eu=N``) LLVM allocates at least
    getMinNumVGPRs(N) = alignDown(512 / (N + 1), 8) + 1 VGPRs and the matching SGPRs, so that no more
    than N waves fit, however few the kernel uses. ``wave_size`` is the kernel's (the descriptor's; the
    target's by default) and ``cu_mode`` whether it was compiled in CU mode (RDNA).

    The rules, from LLVM AMDGPU (AMDGPUBaseInfo.cpp, AMDGPUSubtarget.cpp), with each target's figures in its
    record (``model.targets``):

    - VGPRs (getNumWavesPerEUWithNumVGPRs): the SIMD's file for the wave size over the VGPRs rounded up to the
      allocation granule, at most the target's waves a SIMD (CDNA: 512 // alignTo(vgprs, 8), at most 8;
      RDNA 3/4 wave32: 1536 // alignTo(vgprs, 24), wave64: 768 // alignTo(vgprs, 12), at most 16; gfx1250:
      1024 // alignTo(vgprs, 16), at most 16). ``Target.vgpr_file``.
    - SGPRs (getOccupancyWithNumSGPRs, gfx9 only): 800 per SIMD; a wave takes alignTo(sgprs, 16) plus
      the 16 trap-handler SGPRs. Checked against ``; Occupancy`` in Triton 3.9's amdgcn text:
      78 SGPRs -> 8, 86 and 94 -> 7, 102 and 106 -> 6. From gfx10 on SGPRs do not limit waves.
    - LDS (getOccupancyWithWorkGroupSizes): workgroups per unit = the unit's LDS // LDS per workgroup,
      the latter rounded up to the allocation block (512 B gfx942 and RDNA, 1280 B gfx950, 2 KiB gfx1250:
      AMDGPUUsage's COMPUTE_PGM_RSRC2 LDS_SIZE; LLVM rounds too since llvm/llvm-project#205637, in Triton
      3.9's code generator, and skipped it before), at most max_blocks_per_cu and at most what the register
      limit leaves room for; times num_warps waves each, spread over the unit's SIMDs (rounded up, as
      LLVM does: where they do not divide evenly, the SIMD that holds the most; 3 workgroups of 2
      waves are 2, 2, 1 and 1 waves a SIMD, so 2). The unit is a CU of 4 SIMDs on CDNA; on RDNA a
      workgroup processor of 4 SIMDs and 128 KiB of LDS in WGP mode, one CU of it (2 SIMDs, 64 KiB, 16
      workgroups) in CU mode (``Target.occupancy_unit``); workgroups of one wave take no barrier and are not
      limited in number. A workgroup above the LDS one may have (64 KiB on RDNA) cannot launch.

    LLVM's own ``; Occupancy`` comment never sees Triton's LDS: Triton allocates it dynamically, so
    LLVM counts 0 bytes and assumes workgroups of one wave. It equals this function with
    ``lds_bytes=0``; where LDS (or a workgroup of more than 4 waves) binds, this is lower, and right.
    Told the LDS and the workgroup size (``amdgpu-lds-size``, ``amdgpu-flat-work-group-size``), LLVM
    gives this figure too, except where whole workgroups bind the register limit, a rule its model
    lacks (tests/readings.py, ``amd_occupancy_reading``).
    """
    if num_warps < 1:
        raise ValueError(f"num_warps must be at least 1, not {num_warps}")
    regs, granule = target.vgpr_file(wave_size or target.warp_size)
    simds, lds_per_unit, max_workgroups = target.occupancy_unit(cu_mode=cu_mode)
    waves = min(target.max_waves_per_simd, regs // _align(max(vgprs, 1), granule))
    if target.sgprs_per_simd:
        sgpr_waves = target.sgprs_per_simd // (_align(max(sgprs, 1), target.sgpr_alloc_granule) + target.trap_sgprs)
        waves = min(waves, sgpr_waves)

    # A workgroup is resident whole or not at all: count whole workgroups per unit, then spread their
    # waves over the SIMDs. For num_warps <= the SIMDs the register term comes back unchanged; for more
    # waves per workgroup an odd register limit rounds down (LLVM's flat min() does not).
    # A workgroup of one wave takes no barrier, so the unit's limit on workgroups (its barriers) does not
    # hold it (LLVM's getMaxWorkGroupsPerCU: RDNA's 16 waves a SIMD are 64 one-wave workgroups a WGP).
    workgroups = waves * simds // num_warps if num_warps == 1 else min(max_workgroups, waves * simds // num_warps)
    if lds_bytes > target.max_lds_per_workgroup:
        return 0
    if lds_bytes > 0:
        workgroups = min(workgroups, lds_per_unit // _align(lds_bytes, target.shared_alloc_granule))
    if workgroups == 0:
        return 0  # one workgroup needs more LDS or registers than a CU has: it cannot launch
    return min(waves, -(-(workgroups * num_warps) // simds))


def _metadata_notes(elf: ELFFile) -> list[bytes]:
    found = []
    for section in elf.iter_sections():
        if not isinstance(section, NoteSection):
            continue
        for note in section.iter_notes():
            # pyelftools does not know AMDGPU notes and hands their desc over as raw bytes.
            if note["n_name"] == _NOTE_NAME and note["n_type"] == _NT_AMDGPU_METADATA:
                desc = note["n_desc"]
                found.append(desc if isinstance(desc, bytes) else str(desc).encode("latin-1"))
    return found


def _unpack(desc: bytes) -> dict[str, Any]:
    try:
        root = msgpack.unpackb(desc, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise CorruptObjectError(f"HSACO metadata note is not valid msgpack: {first_line(exc)}") from None
    if not isinstance(root, dict):
        raise CorruptObjectError("HSACO metadata note is not a msgpack map")
    return root


def _symbol_bytes(elf: ELFFile, data: bytes) -> dict[str, bytes]:
    """The bytes behind every ``<kernel>.kd`` symbol (the kernel descriptors), by symbol name."""
    out: dict[str, bytes] = {}
    symtab = elf.get_section_by_name(".symtab") or elf.get_section_by_name(".dynsym")
    if not isinstance(symtab, SymbolTableSection):
        raise CorruptObjectError("HSACO has no symbol table")
    for sym in symtab.iter_symbols():
        shndx = sym["st_shndx"]
        if not sym.name.endswith(".kd") or not isinstance(shndx, int):
            continue
        section = elf.get_section(shndx)
        start = section["sh_offset"] + sym["st_value"] - section["sh_addr"]
        out[sym.name] = data[start : start + sym["st_size"]]
    return out


def _kernel(meta: Any, symbols: dict[str, bytes], arch: str) -> HsacoKernel:
    if not isinstance(meta, dict) or not isinstance(meta.get(".name"), str):
        raise CorruptObjectError("HSACO metadata has a kernel entry without .name")
    name = meta[".name"]
    symbol = meta.get(".symbol", f"{name}.kd")
    kd = symbols.get(symbol)
    if kd is None or len(kd) != _KD.size:
        raise CorruptObjectError(f"HSACO has no 64-byte kernel descriptor {symbol}")
    listed = meta.get(".args", [])
    if not isinstance(listed, list) or not all(isinstance(arg, dict) for arg in listed):
        raise CorruptObjectError(f"HSACO metadata of {name} has a malformed .args list")
    args = tuple(
        KernelArg(
            offset=_int(arg, ".offset"),
            size=_int(arg, ".size"),
            value_kind=str(arg.get(".value_kind", "")),
            address_space=arg.get(".address_space"),
        )
        for arg in listed
    )
    return HsacoKernel(name=name, metadata=MappingProxyType(meta), args=args, descriptor=_descriptor(kd, arch))


def _descriptor(kd: bytes, arch: str) -> KernelDescriptor:
    (group, private, kernarg, _r0, entry, _r1, rsrc3, rsrc1, rsrc2, props, preload, _r3) = _KD.unpack(kd)
    enables = {name: bool(props >> bit & 1) for name, bit, _size in _USER_SGPRS}
    rdna = gfx_major(arch) >= 10
    wave32 = rdna and bool(props >> 10 & 1)  # ENABLE_WAVEFRONT_SIZE32, bit 10
    return KernelDescriptor(
        group_segment_fixed_size=group,
        private_segment_fixed_size=private,
        kernarg_size=kernarg,
        kernel_code_entry_byte_offset=entry,
        compute_pgm_rsrc1=rsrc1,
        compute_pgm_rsrc2=rsrc2,
        compute_pgm_rsrc3=rsrc3,
        **enables,
        uses_dynamic_stack=bool(props >> 11 & 1),
        kernarg_preload_length=preload & 0x7F,  # KERNARG_PRELOAD_SPEC_LENGTH, bits 0-6
        kernarg_preload_offset=preload >> 7 & 0x1FF,  # KERNARG_PRELOAD_SPEC_OFFSET, bits 7-15
        user_sgpr_count=rsrc2 >> 1 & 0x1F,  # USER_SGPR_COUNT, bits 1-5
        enable_private_segment=bool(rsrc2 & 1),
        accum_offset=((rsrc3 & 0x3F) + 1) * 4,  # ACCUM_OFFSET holds accum_offset / 4 - 1
        allocated_vgprs=((rsrc1 & 0x3F) + 1) * vgpr_encoding_granule(arch, wave32=wave32),
        allocated_sgprs=((rsrc1 >> 6 & 0xF) + 1) * _SGPR_ENCODING_GRANULE,
        wave32=wave32,
        wgp_mode=rdna and not arch.startswith("gfx125") and bool(rsrc1 >> 29 & 1),  # WGP_MODE, bit 29
    )


def _int(meta: Mapping[str, Any], key: str, *, default: int | None = None) -> int:
    value = meta.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptObjectError(f"HSACO metadata field {key} is missing or not an integer")
    return value


def _align(value: int, granule: int) -> int:
    return -(-value // granule) * granule
