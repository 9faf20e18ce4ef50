"""Second, independent readings of stored objects, to check every figure a survey reports.

AMD: the compiler's own amdgcn text (``; NumVgprs``, ``; NumAgprs``, ``; TotalNumVgprs``,
``; TotalNumSgprs``, ``; ScratchSize``, ``; Occupancy``, the YAML metadata block, ``Folded Spill``
comments) and a direct msgpack decode of the object's note written here, not regsurvey's reader. LDS from
the compile's TTGIR, its buffers allocated again and sized here from their types (not Triton's metadata
``shared``, which regsurvey reads), and the occupancy where LDS binds from LLVM itself, told that LDS and
the workgroup's size.
NVIDIA: the bundled ptxas re-run with ``-v`` on the stored PTX, and the cubin's own ``.nv.info.<kernel>``
walked here with struct.
"""

from __future__ import annotations

import functools
import gzip
import io
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
    """An IR text stored beside the row's object."""
    obj = store / row["object"]["path"]
    return gzip.decompress(obj.with_name(f"{obj.name.rsplit('.', 1)[0]}.{name}.gz").read_bytes()).decode()


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
    extent = max((offset + size for offset, size in _lds_buffers(allocated)), default=0)
    total = re.search(r"\bttg\.shared = (\d+) : i32", allocated)
    assert total, "the allocated TTGIR has no ttg.shared"
    assert int(total.group(1)) == extent, f"ttg.shared {total.group(1)} is not its buffers' extent {extent}"
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


def _lds_buffers(allocated: str) -> list[tuple[int, int]]:
    """(offset, bytes) of every LDS buffer of an allocated TTGIR."""
    aliases = dict(_ALIAS.findall(allocated))
    buffers = []
    for line in allocated.splitlines():
        offset = _OFFSET.search(line)
        if offset is None:
            continue
        size = _SIZE.search(line)
        if size is not None:  # scratch: the pass says how much
            buffers.append((int(offset.group(1)), int(size.group(1))))
            continue
        memdesc = re.search(r"ttg\.local_alloc\b.*-> !ttg\.memdesc<([^,>]+), (#[\w.]+)", line)
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


@functools.cache
def llvm_occupancy(target: str, *, lds_bytes: int = 0, workgroup: int = 64, vgprs: int = 0) -> int:
    """LLVM's ``; Occupancy`` for a kernel that only declares ``lds_bytes`` of LDS (``amdgpu-lds-size``,
    the attribute LLVM's own LDS lowering sets), workgroups of exactly ``workgroup`` work-items
    (``amdgpu-flat-work-group-size``) and, with ``vgprs``, uses that many VGPRs (an inline asm clobbering
    the last): LLVM's occupancy model (``GCNSubtarget::computeOccupancy``) given those figures and no
    others. 0 where LLVM says the LDS is more than a CU has."""
    clobber = f'  call void asm sideeffect "", "~{{v{vgprs - 1}}}"()\n' if vgprs else ""
    module = (f"define amdgpu_kernel void @lds_reading() #0 {{\n{clobber}  ret void\n}}\n"
              f'attributes #0 = {{ "amdgpu-flat-work-group-size"="{workgroup},{workgroup}" '
              f'"amdgpu-lds-size"="{lds_bytes}" }}\n')
    text, said = llvm_amdgcn(module, target)
    if "exceeds limit" in said:  # "local memory (N) exceeds limit (M)": no workgroup fits
        return 0
    assert asm_comment(text, "LDSByteSize") == lds_bytes, "LLVM did not take the declared LDS"
    return asm_comment(text, "Occupancy")


def amd_occupancy_reading(text: str, *, lds_bytes: int, num_warps: int, target: str) -> int:
    """Waves per SIMD as LLVM counts them for this kernel, given its LDS and workgroup size.

    LLVM's ``; Occupancy`` in the kernel's own amdgcn is its register limit: it saw no LDS (Triton's is
    dynamic) and workgroups of one wave and up (``amdgpu-flat-work-group-size`` "1,N"). Its limit for the
    kernel's LDS and workgroup size comes from LLVM too, for a kernel declaring both
    (:func:`llvm_occupancy`); LLVM takes the least of its limits. LLVM rounds the LDS up to the
    allocation block itself since llvm/llvm-project#205637 (in Triton 3.9's code generator), as the
    hardware allocates it (AMDGPUUsage, COMPUTE_PGM_RSRC2.LDS_SIZE granularity).

    One rule LLVM's model does not have: a workgroup is resident on a CU whole or not at all (its waves
    share its LDS and barrier; ROCm Compute Profiler's CDNA model: "All wavefronts of a workgroup are
    scheduled on the same CU"), so the register limit holds whole workgroups of ``num_warps`` waves over
    the CU's 4 SIMDs. LLVM's ``min()`` of its limits skips that: 8-wave workgroups under a 3-wave
    register limit fit 12 // 8 = 1 workgroup per CU, 2 waves a SIMD, where LLVM says 3. 0: no workgroup
    fits.
    """
    registers = asm_comment(text, "Occupancy")
    lds = llvm_occupancy(target, lds_bytes=lds_bytes, workgroup=num_warps * 64)
    workgroups = registers * 4 // num_warps
    if not workgroups or not lds:
        return 0
    return min(registers, lds, -(-workgroups * num_warps // 4))


def vgpr_spills(text: str) -> int:
    """VGPRs the amdgcn spills: to scratch (LLVM's "N-byte Folded Spill" stores, 4 bytes a VGPR) and, on
    gfx90a and later, to AGPRs (its ``v_accvgpr_write_b32 aN, vM ; Reload Reuse`` writes). LLVM's
    ``.vgpr_spill_count`` counts both."""
    folded = sum(int(n) for n in re.findall(r"; (\d+)-byte Folded Spill", text))
    return folded // 4 + len(re.findall(r"v_accvgpr_write_b32 a\d+, v\d+\s+;\s+Reload Reuse", text))


def amd_second_reading(store: Path, row: dict[str, Any]) -> dict[str, int]:
    """The row's AMD figures as the amdgcn text and the raw note give them; its LDS from the TTGIR kept
    beside the object, and its occupancy from LLVM told that LDS and the note's workgroup size."""
    text = stored_text(store, row, "amdgcn")
    hsaco = (store / row["object"]["path"]).read_bytes()
    note = note_metadata(hsaco)
    lds = amd_lds_reading(stored_text(store, row, "ttgir"), hsaco)
    agpr = asm_comment(text, "NumAgprs")
    vgpr = asm_comment(text, "NumVgprs")
    if agpr:  # the AGPRs start at the arch VGPRs rounded up to 4: all the object records of them
        assert -(-vgpr // 4) * 4 == _directive(text, "accum_offset")
    reading = {
        "vgpr": vgpr,
        "agpr": agpr,
        "vgpr_total": asm_comment(text, "TotalNumVgprs"),
        "sgpr": asm_comment(text, "TotalNumSgprs"),
        "scratch_bytes": asm_comment(text, "ScratchSize"),
        "kernarg_bytes": asm_metadata(text, "kernarg_segment_size"),
        "vgpr_spill": vgpr_spills(text),
        "sgpr_spill": asm_metadata(text, "sgpr_spill_count"),
        "lds_bytes": lds,
        "occupancy": amd_occupancy_reading(text, lds_bytes=lds, num_warps=note_waves(note), target=row["target"]),
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
