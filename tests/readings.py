"""Second, independent readings of stored objects, to check every figure a survey reports.

AMD: the compiler's own amdgcn text (``; NumVgprs``, ``; NumAgprs``, ``; TotalNumVgprs``,
``; TotalNumSgprs``, ``; ScratchSize``, ``; Occupancy``, the YAML metadata block, ``Folded Spill``
comments) and a direct msgpack decode of the object's note written here, not regsurvey's reader. LDS from
the compile's TTGIR, its buffers allocated again and sized here from their types (not Triton's metadata
``shared``, which regsurvey reads), and the occupancy where LDS binds from LLVM itself, told that LDS and
the workgroup's size.
NVIDIA: the bundled ptxas re-run with ``-v`` on the stored PTX, and the cubin's own ``.nv.info.<kernel>``
walked here with struct.
The spills inside loops: on AMD from LLVM's own loop comments on the amdgcn text's blocks; on NVIDIA from
the SASS's backward branches (:func:`sass_loop_depths`), read here.
Both: Triton's own record of the kernel (the metadata JSON in its cache: the LDS or shared memory it
allocates at launch, its warps per block), read from Triton's file rather than through regsurvey, with
each vendor's occupancy rules written here (:func:`independent_reading`: every figure of a row).
"""

from __future__ import annotations

import base64
import functools
import gzip
import io
import json
import os
import re
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import msgpack
import triton
from elftools.elf.elffile import ELFFile

# Tests that need a particular register allocation (AGPRs beside a VGPR count that is not a multiple of
# 4) chose their kernels on Triton 3.9's LLVM; on 3.6 the same kernels are allocated otherwise, and only
# the per-object equalities (which hold on every version) are checked.
TRITON_39_CODEGEN = tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 9)

def nv_info_entries(cubin: bytes) -> list[tuple[int, bytes]]:
    """(attribute, payload) of each EIFMT_SVAL entry of the cubin's one ``.nv.info.<kernel>``: what ptxas
    recorded for the kernel (EIATTR_PARAM_CBANK 0x0A, EIATTR_KPARAM_INFO 0x17, EIATTR_REQNTID 0x10 ...)."""
    elf = ELFFile(io.BytesIO(cubin))
    (section,) = [s for s in elf.iter_sections() if s.name.startswith(".nv.info.")]
    raw, pos, entries = section.data(), 0, []
    while pos + 4 <= len(raw):
        fmt, attr, size = struct.unpack_from("<BBH", raw, pos)
        pos += 4
        if fmt != 0x04:  # not EIFMT_SVAL: a u16 value in place of the size
            continue
        entries.append((attr, raw[pos:pos + size]))
        pos += size
    return entries


def stored_text(store: Path, row: dict[str, Any], name: str) -> str:
    """An IR text stored beside the row's object (read here, not by the store: its first line names the
    object and the text, the rest is the text)."""
    obj = store / row["object"]["path"]
    sha = obj.name.rsplit(".", 1)[0]
    header, _, text = gzip.decompress(obj.with_name(f"{sha}.{name}.gz").read_bytes()).decode().partition("\n")
    assert header == f"regsurvey-text 1 {sha} {name}", header
    return text


def note_metadata(hsaco: bytes) -> dict[str, Any]:
    """The first kernel's entry of the NT_AMDGPU_METADATA note, decoded here from the raw ELF."""
    import io

    elf = ELFFile(io.BytesIO(hsaco))
    for section in elf.iter_sections():
        if section["sh_type"] != "SHT_NOTE":
            continue
        for note in section.iter_notes():
            if note["n_name"] == "AMDGPU" and note["n_type"] == 32:
                desc = note["n_descdata"]
                meta = msgpack.unpackb(desc if isinstance(desc, bytes) else desc.encode("latin-1"), raw=False)
                return meta["amdhsa.kernels"][0]
    raise AssertionError("no AMDGPU metadata note")


def note_waves(note: dict[str, Any]) -> int:
    """Waves per workgroup, from the note: Triton declares workgroups of exactly its ``num_warps`` waves
    as the most (``.max_flat_workgroup_size``) over the ``.wavefront_size``."""
    return int(note[".max_flat_workgroup_size"]) // int(note[".wavefront_size"])


def note_wave_mode(note: dict[str, Any]) -> dict[str, Any]:
    """The kernel's wave size and, on RDNA, whether it runs in CU mode, from the note (``.wavefront_size``,
    ``.workgroup_processor_mode``: 1 in WGP mode, absent before gfx10 and on gfx1250): the keyword arguments
    of :func:`amd_occupancy_reading`."""
    return {"wave_size": int(note[".wavefront_size"]), "cu_mode": note.get(".workgroup_processor_mode") == 0}


def amd_register_comments(text: str) -> tuple[int, int, int]:
    """LLVM's ``; NumVgprs``, ``; NumAgprs`` and ``; TotalNumVgprs`` of an amdgcn text. Targets without AGPRs
    (gfx10 and later: RDNA, gfx1250) print neither of the last two: there no AGPRs, and the total is the
    VGPRs (asserted: such a text is for gfx10+)."""
    vgpr = asm_comment(text, "NumVgprs")
    if re.search(r"^\s*; NumAgprs: ", text, re.M):
        return vgpr, asm_comment(text, "NumAgprs"), asm_comment(text, "TotalNumVgprs")
    arch = re.search(r'^\s*\.amdgcn_target "[^"]*-gfx(\d+)', text, re.M)
    assert arch and len(arch.group(1)) == 4, "no NumAgprs comment on a target with AGPRs"
    return vgpr, 0, vgpr


def asm_comment(text: str, name: str) -> int:
    """The value of LLVM's ``; NAME: value`` comment in an amdgcn text."""
    match = re.search(rf"^\s*; {name}: (\d+)", text, re.M)
    assert match, f"no '; {name}' comment"
    return int(match.group(1))


def asm_metadata(text: str, name: str) -> int:
    """The value of ``.NAME:`` in an amdgcn text's metadata block."""
    match = re.search(rf"^\s*-?\s*\.{name}:\s+(\d+)", text, re.M)
    assert match, f"no .{name} in the amdgcn metadata block"
    return int(match.group(1))


def _directive(text: str, name: str) -> int:
    match = re.search(rf"^\s*\.amdhsa_{name} (\d+)$", text, re.M)
    assert match, f"no .amdhsa_{name}"
    return int(match.group(1))


def amd_lds_reading(ttgir: str, hsaco: bytes) -> int:
    """LDS of one workgroup, read without Triton's metadata ``shared`` (which regsurvey reads).

    The object's static LDS (its note's ``.group_segment_fixed_size``: 0 under Triton, whose LDS is all
    dynamic, ``@global_smem = external addrspace(3) global [0 x i8]`` in the LLIR) plus what the
    compile's TTGIR needs: its buffers allocated again by Triton's AMD pass (the kept TTGIR is the one
    before allocation), each sized here from its own type (``ttg.local_alloc``'s memdesc: shape, element
    bits and the padded layout's padding) or by the scratch size the pass gives an op (``allocation.size``:
    a reduction's, a layout conversion's), at the offset the pass gives it. The pass's own total, the
    module's ``ttg.shared`` that becomes Triton's ``shared``, must be that extent.
    """
    allocated = _allocated_ttgir(ttgir)
    buffers = _lds_buffers(allocated)
    total = re.search(r"\bttg\.shared = (\d+) : i32", allocated)
    assert total, "the allocated TTGIR has no ttg.shared"
    if all(size is not None for _, size in buffers):
        extent = max((offset + size for offset, size in buffers if size is not None), default=0)
        assert int(total.group(1)) == extent, f"ttg.shared {total.group(1)} is not its buffers' extent {extent}"
    else:
        # Triton before 3.9 prints no size for an op's scratch: the pass's own total, from the TTGIR kept
        # beside the object (not the compile's metadata), holds every buffer sized here.
        extent = int(total.group(1))
        assert all(offset + size <= extent for offset, size in buffers if size is not None), (buffers, extent)
    return int(note_metadata(hsaco)[".group_segment_fixed_size"]) + extent


def _allocated_ttgir(ttgir: str) -> str:
    """The TTGIR with Triton's AMD shared-memory allocation run on it (``allocation.offset`` on every
    buffer, ``ttg.shared`` on the module), printed."""
    from triton._C.libtriton import amd, ir

    arch = re.search(r'ttg\.target = "hip:(\w+)"', ttgir)
    assert arch, "not an AMD TTGIR (no ttg.target hip:...)"
    context = ir.context()
    ir.load_dialects(context)
    amd.load_dialects(context)
    # Triton 3.9 prints a one-warp WMMA layout's CTA layout as `ctaLayout = {}` and its parser then aborts
    # the process ("Expected basis of 'warp' not found"; fla's kernels of one warp on RDNA): the same layout,
    # its warp basis spelt out empty, parses.
    ttgir = ttgir.replace("ctaLayout = {}", "ctaLayout = {warp = []}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernel.ttgir"
        path.write_text(ttgir)
        module = ir.parse_mlir_module(str(path), context)
    module.context = context
    passes = ir.pass_manager(context)
    if TRITON_39_CODEGEN:
        amd.passes.ttgpuir.add_allocate_shared_memory(passes, arch.group(1))
        passes.run(module, "lds_reading")
    else:  # Triton before 3.9 (not run here): make_llir lowered the LDS use first, and its passes took no arch
        amd.passes.ttgpuir.add_optimize_lds_usage(passes, arch.group(1), 0)
        amd.passes.ttgpuir.add_allocate_shared_memory(passes)
        passes.run(module, "lds_reading")
    return str(module)


_OFFSET = re.compile(r"\ballocation\.offset = (\d+) : i32")
_SIZE = re.compile(r"\ballocation\.size = (\d+) : i32")
_ALIAS = re.compile(r"^(#\w+) = (.*)$", re.M)


def _lds_buffers(allocated: str) -> list[tuple[int, int | None]]:
    """(offset, bytes) of every LDS buffer of an allocated TTGIR; bytes None for an op's scratch (a
    reduction's, a layout conversion's, an atomic's), which Triton before 3.9 sizes without saying."""
    aliases = dict(_ALIAS.findall(allocated))
    buffers: list[tuple[int, int | None]] = []
    for line in allocated.splitlines():
        offset = _OFFSET.search(line)
        if offset is None:
            continue
        size = _SIZE.search(line)
        if size is not None:  # scratch: the pass says how much
            buffers.append((int(offset.group(1)), int(size.group(1))))
            continue
        memdesc = re.search(r"ttg\.local_alloc\b.*-> !ttg\.memdesc<([^,>]+), (#[\w.]+)", line)
        if memdesc is None and not TRITON_39_CODEGEN:  # scratch: sized by the pass, which does not say
            buffers.append((int(offset.group(1)), None))
            continue
        assert memdesc, f"an LDS buffer of no known size: {line.strip()[:200]}"
        # The layout: an alias defined at the top (#shared = #ttg.padded_shared<...>), or written inline.
        encoding = aliases.get(memdesc.group(2), line[memdesc.start(2):])
        buffers.append((int(offset.group(1)), _memdesc_bytes(memdesc.group(1), encoding)))
    return buffers


def _memdesc_bytes(shape_type: str, encoding: str) -> int:
    """Bytes of a shared-memory buffer ``2x128x64xf16`` in ``encoding``: its elements, plus, in a padded
    layout (``#ttg.padded_shared<[512:+8]>``), ``pad`` elements after every ``interval`` but the last."""
    *dims, element = shape_type.split("x")
    count = 1
    for dim in dims:
        count *= int(dim)
    if element.startswith("!tt.ptr"):
        bits = 64
    else:
        width = re.match(r"(?:bf|f|i|ui|si)(\d+)", element)
        assert width, f"an element type of unknown width: {element}"
        bits = max(8, int(width.group(1)))  # i1 is kept in a byte
    padded = re.search(r"padded_shared<\[([^\]]*)\]", encoding)
    if padded:
        count += sum((count - 1) // int(interval) * int(pad)
                     for interval, pad in re.findall(r"(\d+):\+(\d+)", padded.group(1)))
    return count * bits // 8


def llvm_amdgcn(llir: str, arch: str, *, fp_fusion: bool = True) -> tuple[str, str]:
    """The amdgcn text the code generator Triton compiles with makes of an LLVM module, and what LLVM
    printed on the way (its diagnostics go to stderr, a kernel over the CU's LDS among them, and do not
    raise). Triton 3.9 runs its own AMD code generator library; older Triton, its LLVM's translate_to_asm."""
    from triton.backends.amd import compiler

    with tempfile.TemporaryFile() as said:
        saved = os.dup(2)
        os.dup2(said.fileno(), 2)
        try:
            if hasattr(compiler, "compile_amdgpu"):
                text = compiler.compile_amdgpu(
                    llir, compiler.get_amd_codegen_target_triple(arch), arch, "", flags=compiler.get_llvm_flags(arch),
                    enable_fp_fusion=fp_fusion, disable_optimization=False, canonicalize_gep=False, disabled_passes="",
                    dump_ir=False, enable_timing=False)
            else:
                from triton._C.libtriton import amd, llvm

                llvm.init_targets()  # once per process; done by a compile, which a cached kernel skips
                text = llvm.translate_to_asm(llir, amd.TARGET_TRIPLE, arch, "", [], fp_fusion, False)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        said.seek(0)
        return text, said.read().decode(errors="replace")


def declare_lds(llir: str, lds_bytes: int) -> str:
    """The kernel's LLIR with its LDS and workgroup size declared to LLVM: ``amdgpu-lds-size`` (Triton
    allocates the LDS at launch, so LLVM saw none) and ``amdgpu-flat-work-group-size`` "N,N" for Triton's
    "1,N" (a Triton launch's workgroups are always N work-items; "1,N" lets LLVM assume one wave)."""
    declared, count = re.subn(r'"amdgpu-flat-work-group-size"="1,(\d+)"',
                              rf'"amdgpu-flat-work-group-size"="\1,\1" "amdgpu-lds-size"="{lds_bytes}"', llir)
    assert count == 1, f"{count} amdgpu-flat-work-group-size attributes of the form 1,N"
    return declared


# The LDS allocation block (AMDGPUUsage, COMPUTE_PGM_RSRC2.LDS_SIZE granularity), for LLVM before the fix.
_LDS_BLOCK = {"gfx942": 512, "gfx950": 1280, "gfx1100": 512, "gfx1151": 512, "gfx1201": 512, "gfx1250": 2048}


@functools.cache
def llvm_occupancy(target: str, *, lds_bytes: int = 0, workgroup: int = 64, vgprs: int = 0,
                   features: str = "") -> int:
    """LLVM's ``; Occupancy`` for a kernel that only declares ``lds_bytes`` of LDS (``amdgpu-lds-size``,
    the attribute LLVM's own LDS lowering sets), workgroups of exactly ``workgroup`` work-items
    (``amdgpu-flat-work-group-size``) and, with ``vgprs``, uses that many VGPRs (an inline asm clobbering
    the last): LLVM's occupancy model (``GCNSubtarget::computeOccupancy``) given those figures and no
    others. ``features``: target features of the kernel (``+cumode``: RDNA's CU mode; ``+wavefrontsize64``).
    0 where LLVM says the LDS is more than a workgroup may have.

    The LLVM of Triton before 3.9 divides a CU's LDS by the bytes asked, not by the blocks the hardware
    allocates (its FIXME, fixed by llvm/llvm-project#205637): there the LDS is declared rounded up to the
    block (AMDGPUUsage, COMPUTE_PGM_RSRC2.LDS_SIZE: 512 B on gfx942 and RDNA, 1280 B on gfx950, 2 KiB on
    gfx1250), the one figure of the model not left to LLVM."""
    if not TRITON_39_CODEGEN and lds_bytes:
        block = _LDS_BLOCK[target]
        lds_bytes = -(-lds_bytes // block) * block
    clobber = f'  call void asm sideeffect "", "~{{v{vgprs - 1}}}"()\n' if vgprs else ""
    featured = f' "target-features"="{features}"' if features else ""
    module = (f"define amdgpu_kernel void @lds_reading() #0 {{\n{clobber}  ret void\n}}\n"
              f'attributes #0 = {{ "amdgpu-flat-work-group-size"="{workgroup},{workgroup}" '
              f'"amdgpu-lds-size"="{lds_bytes}"{featured} }}\n')
    text, said = llvm_amdgcn(module, target)
    if "exceeds limit" in said:  # "local memory (N) exceeds limit (M)": no workgroup fits
        return 0
    assert asm_comment(text, "LDSByteSize") == lds_bytes, "LLVM did not take the declared LDS"
    return asm_comment(text, "Occupancy")


def amd_occupancy_reading(text: str, *, lds_bytes: int, num_warps: int, target: str, wave_size: int = 64,
                          cu_mode: bool = False) -> int:
    """Waves per SIMD as LLVM counts them for this kernel, given its LDS and workgroup size.

    LLVM's ``; Occupancy`` in the kernel's own amdgcn is its register limit: it saw no LDS (Triton's is
    dynamic) and workgroups of one wave and up (``amdgpu-flat-work-group-size`` "1,N"). Its limit for the
    kernel's LDS and workgroup size comes from LLVM too, for a kernel declaring both
    (:func:`llvm_occupancy`, in the kernel's wave size and, on RDNA, its CU or WGP mode); LLVM takes the
    least of its limits. LLVM rounds the LDS up to the allocation block itself since llvm/llvm-project#205637
    (in Triton 3.9's code generator), as the hardware allocates it (AMDGPUUsage, COMPUTE_PGM_RSRC2.LDS_SIZE
    granularity).

    One rule LLVM's model does not have: a workgroup is resident on a CU (RDNA: a WGP, or in CU mode one CU)
    whole or not at all (its waves share its LDS and barrier; ROCm Compute Profiler's CDNA model: "All
    wavefronts of a workgroup are scheduled on the same CU"), so the register limit holds whole workgroups
    of ``num_warps`` waves over the unit's SIMDs (4; 2 in RDNA's CU mode). LLVM's ``min()`` of its limits
    skips that: 8-wave workgroups under a 3-wave register limit fit 12 // 8 = 1 workgroup per CU, 2 waves a
    SIMD, where LLVM says 3. 0: no workgroup fits.
    """
    registers = asm_comment(text, "Occupancy")
    features = "+cumode" if cu_mode else ""
    lds = llvm_occupancy(target, lds_bytes=lds_bytes, workgroup=num_warps * wave_size, features=features)
    simds = 2 if cu_mode else 4
    workgroups = registers * simds // num_warps
    if not workgroups or not lds:
        return 0
    return min(registers, lds, -(-workgroups * num_warps // simds))


_CLAUSE_SPILL = re.compile(r"^\s*s_clause\s+(0x[0-9a-fA-F]+|\d+)\s*;\s*\d+-byte Folded (?:Spill|Reload)")
_SCRATCH_SLOT = re.compile(r"^\s*scratch_(store|load)_\w+\s+(?:off,\s*(v\d+|v\[\d+:\d+\]),\s*(?:off|s\d+)|"
                           r"(v\d+|v\[\d+:\d+\]),\s*off,\s*(?:off|s\d+))(?![\w\[])")


def clause_spill_lines(text: str) -> dict[int, tuple[str, int]]:
    """The spill stores and reloads gfx11+ groups in a clause (by line, from 1: ``store`` or ``reload`` and its
    dwords): LLVM comments the clause's ``s_clause`` header (``s_clause 0x5 ; 24-byte Folded Spill``), not its
    members, the scratch accesses at a constant address that follow it; a clause of reloads and stores both is
    commented as a reload."""
    lines = [re.sub(r"(v\d+|v\[\d+:\d+\])\s*/\*(v\d+|v\[\d+:\d+\])\*/", r"\2", line) for line in text.splitlines()]
    out: dict[int, tuple[str, int]] = {}
    for number, line in enumerate(lines, start=1):
        header = _CLAUSE_SPILL.match(line)
        if not header:
            continue
        left = (int(header[1], 0) & 0x3F) + 1
        for later in range(number, len(lines)):
            code = lines[later].split(";", 1)[0].strip()
            if not code or code.startswith(".") or code.endswith(":") or code.startswith("s_set_vgpr_msb"):
                continue  # gfx1250's VGPR-MSB mode changes inside a clause are not of its length
            slot = _SCRATCH_SLOT.match(lines[later])
            if slot:
                reg = slot[2] or slot[3]
                span = re.match(r"v\[(\d+):(\d+)\]", reg)
                dwords = int(span[2]) - int(span[1]) + 1 if span else 1
                out[later + 1] = ("store" if slot[1] == "store" else "reload", dwords)
            left -= 1
            if not left:
                break
    return out


def vgpr_spills(text: str) -> int:
    """VGPRs the amdgcn spills: to scratch (LLVM's "N-byte Folded Spill" stores, 4 bytes a VGPR and a 16-bit
    value's 2 one too; on gfx11+ the stores of the clauses it comments, :func:`clause_spill_lines`) and, on
    gfx90a and later, to AGPRs (its ``v_accvgpr_write_b32 aN, vM ; Reload Reuse`` writes). LLVM's
    ``.vgpr_spill_count`` counts both."""
    folded = sum(-(-int(n) // 4) for n in re.findall(r"^(?!\s*s_clause).*; (\d+)-byte Folded Spill", text, re.M))
    clause_lines = clause_spill_lines(text)
    clauses = sum(dwords for kind, dwords in clause_lines.values() if kind == "store")
    return (folded + clauses + _uncommented_spill_stores(text, set(clause_lines))
            + len(re.findall(r"v_accvgpr_write_b32 a\d+, v\d+\s+;\s+Reload Reuse", text)))


def _uncommented_spill_stores(text: str, in_clauses: set[int]) -> int:
    """gfx10+ only: VGPRs stored to scratch at a constant address by a store LLVM left without its "Folded
    Spill" comment (gfx1250 code of gemlite's: ``scratch_store_b32 off, v2, off offset:468``, reloaded a few
    lines on), which ``.vgpr_spill_count`` counts: Triton's kernels keep nothing in scratch but spills."""
    if not re.search(r'^\s*\.amdgcn_target "[^"]*-gfx\d{4}', text, re.M):
        return 0
    count = 0
    for number, line in enumerate(text.splitlines(), start=1):
        store = re.match(r"\s*scratch_store_\w+ off, (v\d+|v\[(\d+):(\d+)\])(?:\s*/\*[^*]*\*/)?, off", line)
        if store and ";" not in line and number not in in_clauses:
            count += int(store[3]) - int(store[2]) + 1 if store[2] else 1
    return count


def amd_second_reading(store: Path, row: dict[str, Any]) -> dict[str, int]:
    """The row's AMD figures as the amdgcn text and the raw note give them; its LDS from the TTGIR kept
    beside the object, and its occupancy from LLVM told that LDS and the note's workgroup size."""
    text = stored_text(store, row, "amdgcn")
    hsaco = (store / row["object"]["path"]).read_bytes()
    note = note_metadata(hsaco)
    lds = amd_lds_reading(stored_text(store, row, "ttgir"), hsaco)
    vgpr, agpr, vgpr_total = amd_register_comments(text)
    if agpr:  # the AGPRs start at the arch VGPRs rounded up to 4: all the object records of them
        assert -(-vgpr // 4) * 4 == _directive(text, "accum_offset")
    reading = {
        "vgpr": vgpr,
        "agpr": agpr,
        "vgpr_total": vgpr_total,
        "sgpr": asm_comment(text, "TotalNumSgprs"),
        "scratch_bytes": asm_comment(text, "ScratchSize"),
        "kernarg_bytes": asm_metadata(text, "kernarg_segment_size"),
        "vgpr_spill": vgpr_spills(text),
        "sgpr_spill": asm_metadata(text, "sgpr_spill_count"),
        "lds_bytes": lds,
        "occupancy": amd_occupancy_reading(text, lds_bytes=lds, num_warps=note_waves(note), target=row["target"],
                                           **note_wave_mode(note)),
        **amd_loop_spill_reading(text),
    }
    # The note in the binary says the same as the text.
    assert note[".vgpr_count"] == reading["vgpr_total"]
    assert note.get(".agpr_count", 0) == agpr
    assert note[".sgpr_count"] == reading["sgpr"]
    assert note[".vgpr_spill_count"] == reading["vgpr_spill"]
    assert note[".sgpr_spill_count"] == reading["sgpr_spill"]
    assert note[".private_segment_fixed_size"] == reading["scratch_bytes"]
    if reading["sgpr_spill"]:
        assert "SGPR spill to VGPR lane" in text or "v_writelane_b32" in text
    return reading


def ptxas_reading(store: Path, row: dict[str, Any], *, smem: bool = False) -> dict[str, int]:
    """Registers, stack and spill bytes from the bundled ptxas re-run on the stored PTX with -v (with
    ``smem``, also its "bytes smem": static shared memory as the driver reports it, without its reserve)."""
    from regsurvey.compile.toolchain import ptxas_codegen_flags, ptxas_path

    ptx = stored_text(store, row, "ptx")
    arch = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M)
    assert arch
    ptxas = ptxas_path(int(re.sub(r"\D", "", arch.group(1))))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        out = subprocess.run([ptxas, "-v", "-lineinfo", *ptxas_codegen_flags(), f"--gpu-name={arch.group(1)}",
                              str(src), "-o", str(Path(tmp) / "k.cubin")], capture_output=True, text=True, check=True)
    log = out.stdout + out.stderr
    regs = re.search(r"Used (\d+) registers", log)
    frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert regs and frame, log
    reading = {"regs": int(regs.group(1)), "stack_bytes": int(frame.group(1)),
               "spill_store_bytes": int(frame.group(2)), "spill_load_bytes": int(frame.group(3))}
    if smem:
        static = re.search(r"(\d+) bytes smem", log)
        reading["smem"] = int(static.group(1)) if static else 0  # ptxas omits it when there is none
    return reading


def check_row(store: Path, row: dict[str, Any]) -> None:
    """Assert every independently readable figure of an ``ok`` row."""
    assert row["status"] == "ok", row
    res = row["resources"]
    if row["target"].startswith("gfx"):
        reading = amd_second_reading(store, row)
    else:
        reading = ptxas_reading(store, row)
    differ = {figure: (res[figure], value) for figure, value in reading.items() if res[figure] != value}
    assert not differ, f"{row['key']} {row['target']} {row['kernel']}: (survey, reading) {differ}"


def nop_parameter_reads(cubin: bytes, bank_offset: int) -> tuple[bytes, int]:
    """``cubin`` with every SASS instruction that reads ``c[0x0][bank_offset]`` replaced by the NOP its own
    code pads with (the miscompile class "loaded in the PTX, never read in the SASS", made in the object
    itself), and how many were replaced. The addresses and encodings come from ``nvdisasm -hex``."""
    from regsurvey.objects.nvidia_object import nvdisasm

    sass = nvdisasm(cubin, ["-c", "-hex"])
    words = re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);\s*/\* (0x[0-9a-f]{16}) \*/\s*\n\s*/\* (0x[0-9a-f]{16}) \*/",
                       sass)
    nop = next(struct.pack("<QQ", int(lo, 16), int(hi, 16)) for _, text, lo, hi in words if text.strip() == "NOP")
    elf = ELFFile(io.BytesIO(cubin))
    (text_section,) = [s for s in elf.iter_sections() if s.name.startswith(".text.")]
    patched, count = bytearray(cubin), 0
    for address, text, _, _ in words:
        if f"c[0x0][{bank_offset:#x}]" in text:
            at = text_section["sh_offset"] + int(address, 16)
            patched[at:at + 16] = nop
            count += 1
    return bytes(patched), count


def triton_metadata(row: dict[str, Any], cache: Path | None = None) -> dict[str, Any]:
    """Triton's own metadata of the row's kernel (``shared``, ``num_warps`` ...): the JSON its cache keeps
    under the row's Triton hash, in ``cache`` or else the cache Triton uses in this environment (where a
    survey run here compiled it, or found it already compiled)."""
    if cache is None:
        from triton import knobs

        cache = Path(knobs.cache.dir)
    digest = bytes.fromhex(row["triton_hash"])
    for name in (base64.b32encode(digest).decode().rstrip("="), row["triton_hash"]):  # Triton 3.9 / older
        found = [p for p in (cache / name).glob("*.json") if not p.name.startswith("__grp__")]
        if found:
            return json.loads(found[0].read_text())
    raise AssertionError(f"no Triton cache entry for {row['key']} {row['target']} ({row['triton_hash']}) in {cache}")


# CUDA's occupancy rules (cuda_occupancy.h; the CUDA Occupancy Calculator; the programming guide's table per
# compute capability): 65536 registers in 4 sub-partitions, given to warps in units of 256; shared memory given
# in units of 128 bytes, 1 KiB of it reserved per block by the driver. Per SM, 9.0, 10.0 and 10.3 alike: 64
# warps, 32 blocks, 228 KiB of shared memory; 12.0: 48 warps, 24 blocks, 100 KiB.
_CUDA_SM = {"warps": 64, "blocks": 32, "regs": 65536, "sub_partitions": 4, "reg_unit": 256,
            "smem": 228 * 1024, "smem_unit": 128, "smem_reserved": 1024}
CUDA_SMS = {"sm90": _CUDA_SM, "sm100": _CUDA_SM, "sm103": _CUDA_SM,
            "sm120": {**_CUDA_SM, "warps": 48, "blocks": 24, "smem": 100 * 1024}}


def cuda_blocks_per_sm(*, regs: int, shared: int, warps: int, target: str = "sm90") -> int:
    """Resident blocks per SM of ``target`` of a kernel using ``regs`` registers a thread, ``shared`` bytes of
    shared memory a block (without the driver's reserve) and blocks of ``warps`` warps."""
    sm = CUDA_SMS[target]
    regs_per_warp = -(-max(regs, 1) * 32 // sm["reg_unit"]) * sm["reg_unit"]
    warps_by_regs = sm["regs"] // sm["sub_partitions"] // regs_per_warp * sm["sub_partitions"]
    smem_per_block = -(-(shared + sm["smem_reserved"]) // sm["smem_unit"]) * sm["smem_unit"]
    return min(sm["blocks"], sm["warps"] // warps, warps_by_regs // warps, sm["smem"] // smem_per_block)


def independent_reading(store: Path, row: dict[str, Any], cache: Path | None = None) -> dict[str, int]:
    """Every figure of an ``ok`` row, none of them through regsurvey's readers: the compiler's own texts
    and re-runs (:func:`amd_second_reading`, :func:`ptxas_reading`), the LDS or shared memory and the
    warps of a block from Triton's metadata (:func:`triton_metadata`; the warps checked against the block
    size the object itself declares), and the occupancy from each vendor's rules as written here.
    Triton's ``shared`` is the number Triton also hands regsurvey: read from Triton's own file, it checks
    what regsurvey makes of it, not Triton's allocation."""
    assert row["status"] == "ok", row
    metadata = triton_metadata(row, cache)
    shared, warps = int(metadata["shared"]), int(metadata["num_warps"])
    obj = (store / row["object"]["path"]).read_bytes()
    if row["target"].startswith("gfx"):
        note = note_metadata(obj)
        assert note[".max_flat_workgroup_size"] == warps * note[".wavefront_size"], row["key"]
        # The LDS from the TTGIR's buffers is Triton's own record of it, and the occupancy again with
        # Triton's warps in place of the note's.
        reading = amd_second_reading(store, row)
        assert reading["lds_bytes"] == shared, (row["key"], reading["lds_bytes"], shared)
        occupancy = amd_occupancy_reading(stored_text(store, row, "amdgcn"), lds_bytes=shared, num_warps=warps,
                                          target=row["target"], **note_wave_mode(note))
        return {**reading, "occupancy": occupancy}
    # A block's threads as the cubin requires them (EIATTR_REQNTID: x, y, z).
    assert [x * y * z for attr, payload in nv_info_entries(obj) if attr == 0x10 and len(payload) == 12
            for x, y, z in [struct.unpack("<III", payload)]] == [warps * 32], row["key"]
    reading = ptxas_reading(store, row, smem=True)
    shared += reading.pop("smem")  # Triton's dynamic shared memory and the kernel's static
    blocks = cuda_blocks_per_sm(regs=reading["regs"], shared=shared, warps=warps, target=row["target"])
    return {**reading, "shared_bytes": shared, "occupancy_blocks": blocks, "occupancy_warps": blocks * warps,
            **nvidia_loop_spill_reading(nvdisasm_text(obj))}


def nvdisasm_text(cubin: bytes) -> str:
    """``nvdisasm -c`` of a cubin: the bundled tool run here."""
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "nvdisasm"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        return subprocess.run([str(tool), "-c", str(path)], capture_output=True, text=True, check=True).stdout


def spills_by_line(text: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(file name, line) -> (spill stores, reloads) of an amdgcn text: LLVM's spill comments (``Folded
    Spill``/``Folded Reload`` to scratch, ``Reload Reuse`` AGPR copies), each counted on the line of the
    ``.loc`` before it (line 0: the compiler gave none). SGPR spills to VGPR lanes are not counted."""
    files = dict(re.findall(r'^\s*\.file\s+(\d+)\s+(?:"[^"]*"\s+)?"([^"]+)"', text, re.M))
    clauses = clause_spill_lines(text)
    where: tuple[str, int] = ("", 0)
    counts: dict[tuple[str, int], tuple[int, int]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        loc = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", line)
        if loc:
            where = (Path(files.get(loc.group(1), "")).name, int(loc.group(2)))
            continue
        if _CLAUSE_SPILL.match(line):
            continue  # its members are the spills
        member = clauses.get(number, ("", 0))[0]
        store = member == "store" or "Folded Spill" in line or re.search(
            r"v_accvgpr_write_b32 a\d+, v\d+\s+;\s+Reload Reuse", line)
        reload = member == "reload" or "Folded Reload" in line or re.search(
            r"v_accvgpr_read_b32 v\d+, a\d+\s+;\s+Reload Reuse", line)
        if store or reload:
            stores, reloads = counts.get(where, (0, 0))
            counts[where] = (stores + bool(store), reloads + bool(reload))
    return counts


# -- spills inside loops ----------------------------------------------------------------------------------

# LLVM's loop comments on a block's label (and the comment lines under it): "; =>This Loop Header: Depth=1",
# "; =>  This Inner Loop Header: Depth=2", ";   in Loop: Header=BB0_4 Depth=1" (not "Parent Loop"/"Child Loop").
_LLVM_BLOCK = re.compile(r"^\s*(?:\.LBB\d+_\d+:|; %bb\.\d+:)")
_LLVM_DEPTH = re.compile(r"(?:in Loop: Header=\S+|Loop Header:) Depth=(\d+)")


def llvm_loop_depths(text: str) -> dict[int, int]:
    """LLVM's own loop depth of each instruction line (from 1) of an amdgcn text: the ``Depth=`` its
    LoopInfo printed on the block the line is in (0 where it printed none)."""
    depths: dict[int, int] = {}
    depth, heading = 0, False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if _LLVM_BLOCK.match(line):
            found = _LLVM_DEPTH.search(line)
            depth, heading = (int(found[1]) if found else 0), True
        elif heading and stripped.startswith(";"):
            found = _LLVM_DEPTH.search(line)
            depth = int(found[1]) if found else depth
        elif stripped and not stripped.startswith((";", ".")) and not stripped.endswith(":"):
            heading = False
            depths[number] = depth
    return depths


def amd_spill_lines(text: str) -> dict[int, str]:
    """The spill instructions of an amdgcn text by line: ``store`` or ``reload``. Scratch (``Folded Spill``,
    ``Folded Reload``), AGPR copies (``Reload Reuse``: an accvgpr write stores, a read reloads) and SGPRs to
    VGPR lanes (``v_writelane_b32 vN, sM, K``; ``v_readlane_b32 sM, vN, K`` from a VGPR that such a write
    fills)."""
    # gfx1250 names a VGPR above v255 by the one it encodes and the one meant: `v0 /*v256*/`.
    lines = [re.sub(r"v\d+\s*/\*(v\d+)\*/", r"\1", line) for line in text.splitlines()]
    lane = re.compile(r"^\s*v_writelane_b32 v(\d+), (?:s\d+|vcc_lo|vcc_hi), \d+\b")
    lane_vgprs = {m[1] for line in lines if (m := lane.match(line))}
    read = re.compile(r"^\s*v_readlane_b32 (?:s\d+|vcc_lo|vcc_hi), v(\d+), \d+\b")
    clauses = clause_spill_lines(text)
    out: dict[int, str] = {}
    for number, line in enumerate(lines, start=1):
        if number in clauses:
            out[number] = clauses[number][0]
        elif _CLAUSE_SPILL.match(line):
            continue  # its members are the spills
        elif re.search(r"Folded Spill|v_accvgpr_write\S* .*Reload Reuse", line) or lane.match(line):
            out[number] = "store"
        elif re.search(r"Folded Reload|v_accvgpr_read\S* .*Reload Reuse", line) or (
                (m := read.match(line)) and m[1] in lane_vgprs):
            out[number] = "reload"
    return out


def amd_loop_spill_reading(text: str) -> dict[str, int]:
    """``loop_spill_ops`` and ``loop_spill_depth`` of an amdgcn text from LLVM's own loop comments."""
    depths = llvm_loop_depths(text)
    looped = [depths[n] for n in amd_spill_lines(text) if depths.get(n, 0)]
    return {"loop_spill_ops": len(looped), "loop_spill_depth": max(looped, default=0)}


def sass_loop_depths(sass: str) -> list[tuple[int, str, int]]:
    """(address, instruction, depth) of each instruction of ``nvdisasm -c`` output, the depth read here as
    the number of loops whose span of addresses holds the instruction: how a compiler lays out a structured
    loop, body between its head and its back branch. A backward branch (a ``BRA`` to a label at or before
    it) closes a loop only where the code from its target reaches it without leaving that span: ptxas
    places a wait's retry (``SYNCS.PHASECHK`` spinning on itself) after the kernel's end and branches back
    from it to the instruction after the wait, which is no loop (flag_gems' sm103 attention: its spills
    sit between such a return and the wait)."""
    labels: dict[str, int] = {}
    rows: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in sass.splitlines():
        label = re.match(r"^(\.L_\w+):", line)
        if label:
            pending.append(label[1])
            continue
        found = re.match(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;", line)
        if found:
            address = int(found[1], 16)
            labels.update(dict.fromkeys(pending, len(rows)))
            pending = []
            rows.append((address, found[2]))
    targets: list[int | None] = []  # the row each row's BRA goes to
    successors: list[list[int]] = []
    for index, (_, text) in enumerate(rows):
        guard = re.match(r"^@!?U?P\w+\s+", text)
        op = text[guard.end():] if guard else text
        branch = re.search(r"\bBRA\b.*`\((\.L_\w+)\)", op)
        targets.append(labels.get(branch[1]) if branch else None)
        ends = bool(branch) or re.match(r"(EXIT|RET|BRA)\b", op) is not None
        successors.append(([] if targets[-1] is None else [targets[-1]])
                          + ([index + 1] if (guard or not ends) and index + 1 < len(rows) else []))
    # A branch to itself is the trap ptxas pads the code with after EXIT (nothing reaches it) or a retry.
    spans = []
    for index, head in enumerate(targets):
        if head is None or head >= index:
            continue
        seen, todo = {head}, [head]
        while todo and index not in seen:
            for nxt in successors[todo.pop()]:
                if head <= nxt <= index and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        if index in seen:
            spans.append((rows[head][0], rows[index][0]))
    return [(address, text, sum(lo <= address <= hi for lo, hi in spans)) for address, text in rows]


def nvidia_loop_spill_reading(sass: str) -> dict[str, int]:
    """``loop_spill_ops`` and ``loop_spill_depth`` of ``nvdisasm -c`` output: its STL and LDL at the depths
    :func:`sass_loop_depths` reads."""
    looped = [depth for _, text, depth in sass_loop_depths(sass)
              if depth and re.match(r"^(?:@!?U?P\w+\s+)?(?:STL|LDL)\b", text)]
    return {"loop_spill_ops": len(looped), "loop_spill_depth": max(looped, default=0)}
