"""nvidia_object against second readings of the same compile: ptxas -v re-run on the PTX, and cuobjdump.

Every kernel is compiled here, offline, for sm90/sm100/sm103/sm120. The cubin is read by regsurvey (``.nv.info``,
SASS from nvdisasm); the check is Triton's bundled ptxas re-run with ``-v`` on ``asm['ptx']`` with
the flags Triton used (registers, stack frame, spill store/load bytes) and
``cuobjdump --dump-resource-usage`` on the cubin (REG, STACK, SHARED). Shared memory and occupancy are
also checked against what an H200's driver reported for the same inputs.
"""

from __future__ import annotations

import functools
import io
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from regsurvey.compile.toolchain import ptxas_codegen_flags, ptxas_path
from regsurvey.errors import CorruptObjectError
from regsurvey.model.figures import Figures
from regsurvey.model.targets import TARGETS
from regsurvey.objects.nvidia_object import (
    disassemble,
    nvidia_occupancy_blocks,
    read_cubin,
    tool_path,
)
from regsurvey.objects.sass import spill_bytes

from ..objects_kernels import compile_kernel, static_shared_cubin
from ..readings import nvidia_loop_spill_reading

MATMUL = {"BM": 128, "BN": 128, "BK": 64}

# name: (kernel, target, options, constexprs)
CASES = {
    "add-sm90": ("add_kernel", "sm90", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-sm100": ("add_kernel", "sm100", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-sm103": ("add_kernel", "sm103", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-sm120": ("add_kernel", "sm120", (("num_warps", 4),), {"BLOCK": 1024}),
    # One warp holding 2 x 128 fp32 per thread beside addresses: past 255 registers, spills.
    "spill-sm90": ("hold_tile_kernel", "sm90", (("num_warps", 1),), {"BLOCK": 4096}),
    "spill-sm100": ("hold_tile_kernel", "sm100", (("num_warps", 1),), {"BLOCK": 4096}),
    "spill-sm103": ("hold_tile_kernel", "sm103", (("num_warps", 1),), {"BLOCK": 4096}),
    "spill-sm120": ("hold_tile_kernel", "sm120", (("num_warps", 1),), {"BLOCK": 4096}),
    # A smaller tile squeezed into 32 registers by maxnreg: spills far more than it stores once.
    "maxnreg-spill-sm90": ("hold_tile_kernel", "sm90", (("num_warps", 1), ("maxnreg", 32)), {"BLOCK": 1024}),
    # wgmma / tcgen05 GEMMs with 3 stages of shared memory: shared memory limits occupancy.
    "matmul-sm90": ("matmul_kernel", "sm90", (("num_warps", 4), ("num_stages", 3)), MATMUL),
    "matmul-sm100": ("matmul_kernel", "sm100", (("num_warps", 4), ("num_stages", 3)), MATMUL),
    "matmul-sm103": ("matmul_kernel", "sm103", (("num_warps", 4), ("num_stages", 3)), MATMUL),
    # sm120 has neither wgmma nor tcgen05: mma.sync GEMMs, Triton's pipeline in 100 KiB per SM.
    "matmul-sm120": ("matmul_kernel", "sm120", (("num_warps", 4), ("num_stages", 3)), MATMUL),
    "matmul-7stages-sm120": (
        "matmul_kernel", "sm120", (("num_warps", 4), ("num_stages", 7)), {"BM": 64, "BN": 64, "BK": 32}
    ),
    # 7 stages of 64x64 tiles: 56 KiB (sm90) and 112 KiB + 16 (sm100) of shared memory, where one
    # more KiB per block costs a block per SM: counting the driver's reserve twice shows here.
    "matmul-7stages-sm90": (
        "matmul_kernel", "sm90", (("num_warps", 4), ("num_stages", 7)), {"BM": 64, "BN": 64, "BK": 32}
    ),
    "matmul-7stages-sm100": (
        "matmul_kernel", "sm100", (("num_warps", 4), ("num_stages", 7)), {"BM": 64, "BN": 64, "BK": 64}
    ),
}

# CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK on an H200 (and per CUDA's programming guide on
# every compute capability from 8.0 on).
DRIVER_RESERVE = 1024


def compiled(case: str):  # type: ignore[no-untyped-def]
    kernel, target, options, constexprs = CASES[case]
    return compile_kernel(kernel, target, options=options, **constexprs), TARGETS[target]


def read(case: str) -> Figures:
    ck, target = compiled(case)
    return read_cubin(ck.asm["cubin"], shared_bytes=ck.metadata.shared, num_warps=ck.metadata.num_warps, target=target)


@functools.cache
def decodes(target: str) -> bool:
    """Whether this Triton's nvdisasm decodes ``target``'s cubins: Triton 3.6's (CUDA 12.8) does not know
    SM103a ("Cannot decode architecture"), so its spilling sm103 builds cannot be read there."""
    try:
        disassemble(compiled(f"add-{target}")[0].asm["cubin"])
    except CorruptObjectError as exc:
        if "Cannot decode architecture" in str(exc):
            return False
        raise
    return True


def needs_decoding(case: str) -> None:
    """Skip ``case`` where this Triton's nvdisasm cannot decode its target."""
    if not decodes(CASES[case][1]):
        pytest.skip(f"this Triton's nvdisasm cannot decode {CASES[case][1]}'s cubins")


def ptxas_reading(ptx: str, cubin: bytes) -> dict[str, int]:
    """``ptxas -v`` re-run on the PTX with Triton's flags; ``static_shared`` is its "N bytes smem".

    The cubin it writes is usually the same bytes as Triton's, but not always: the CUDA 12.9 ptxas of
    Triton 3.6 swaps registers between runs of the sm100 GEMM (R30 and R32, one run in two). What must
    not change is what the readers see, so the re-run's cubin must read the same as Triton's.
    """
    arch = re.search(r"^\.target\s+(sm_\w+)", ptx, re.M)
    assert arch
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        done = subprocess.run(
            [ptxas_path(int(arch[1][3:].rstrip("a"))), "-lineinfo", "-v", *ptxas_codegen_flags(),
             f"--gpu-name={arch[1]}", str(src),
             "-o", str(out)],
            capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        rerun = out.read_bytes()
        if rerun != cubin:
            target = TARGETS[arch[1].rstrip("a").replace("sm_", "sm")]
            same = [read_cubin(c, shared_bytes=0, num_warps=4, target=target) for c in (rerun, cubin)]
            # Not the length: Triton 3.6's sm100 spill kernel re-run came out 8 bytes shorter when the
            # checkout's path was 9 characters long (/tmp/ci15) and the same length at 13 (/tmp/ci-clone), the
            # same code and toolchain: the line info names the source's directory, and section padding follows.
            assert same[0] == same[1]
    log = done.stdout + done.stderr
    regs = re.search(r"Used (\d+) registers", log)
    frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert regs and frame, log
    smem = re.search(r"(\d+) bytes smem", log)  # printed only when the kernel has static arrays
    return {
        "regs": int(regs[1]),
        "stack_bytes": int(frame[1]),
        "spill_store_bytes": int(frame[2]),
        "spill_load_bytes": int(frame[3]),
        "static_shared": int(smem[1]) if smem else 0,
    }


def cuobjdump_reading(cubin: bytes) -> dict[str, int]:
    """REG, STACK and SHARED (ptxas' static shared) from ``cuobjdump --dump-resource-usage``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(cubin)
        done = subprocess.run(
            [tool_path("cuobjdump"), "--dump-resource-usage", str(path)], capture_output=True, text=True, check=True
        )
    found = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+)", done.stdout)
    assert found, done.stdout
    return {"regs": int(found[1]), "stack_bytes": int(found[2]), "static_shared": int(found[3])}


@pytest.mark.parametrize("case", CASES)
def test_resources_match_ptxas_and_cuobjdump(case: str) -> None:
    needs_decoding(case)
    ck, _ = compiled(case)
    res = read(case)
    ptxas = ptxas_reading(ck.asm["ptx"], ck.asm["cubin"])
    static = ptxas.pop("static_shared")
    assert {k: res[k] for k in ptxas} == ptxas
    dump = cuobjdump_reading(ck.asm["cubin"])
    assert (res["regs"], res["stack_bytes"]) == (dump["regs"], dump["stack_bytes"])
    # The driver's view: ptxas' static arrays (none under Triton) plus Triton's dynamic shared memory.
    assert res["shared_bytes"] == ck.metadata.shared + static
    # cuobjdump's SHARED is the whole .nv.shared.<kernel>: the reserve, when shared memory is used, and
    # the static arrays.
    assert dump["static_shared"] == (static + DRIVER_RESERVE if res["shared_bytes"] else 0)
    assert res["occupancy_warps"] == res["occupancy_blocks"] * ck.metadata.num_warps
    assert {name: res[name] for name in ("loop_spill_ops", "loop_spill_depth")} == nvidia_loop_spill_reading(
        disassemble(ck.asm["cubin"]))
    assert list(res) == [
        "regs", "spill_store_bytes", "spill_load_bytes", "stack_bytes", "shared_bytes", "occupancy_blocks",
        "occupancy_warps", "loop_spill_ops", "loop_spill_depth",
    ]  # fmt: skip


def test_the_spilling_kernels_spill() -> None:
    for case in ("spill-sm90", "spill-sm100", "spill-sm103", "spill-sm120", "maxnreg-spill-sm90"):
        if not decodes(CASES[case][1]):
            continue
        res = read(case)
        assert res["spill_store_bytes"] > 0 and res["spill_load_bytes"] > 0 and res["stack_bytes"] > 0, case
    assert read("spill-sm90")["regs"] == 255
    assert read("maxnreg-spill-sm90")["regs"] == 32
    for case in ("add-sm90", "add-sm100", "add-sm103", "add-sm120", "matmul-sm90", "matmul-sm100", "matmul-sm103",
                 "matmul-sm120"):
        res = read(case)
        assert (res["spill_store_bytes"], res["spill_load_bytes"], res["stack_bytes"]) == (0, 0, 0), case


def test_occupancy_of_compiled_kernels() -> None:
    # 255 registers: 8160 -> 8192 per warp, 2 warps per sub-partition, 8 one-warp blocks.
    assert (read("spill-sm90")["occupancy_blocks"], read("spill-sm90")["occupancy_warps"]) == (8, 8)
    # 32 registers: 1024 per warp fits 64 warps; one-warp blocks stop at 32 blocks.
    assert read("maxnreg-spill-sm90")["occupancy_blocks"] == 32
    # 96 KiB of shared memory plus the driver's 1 KiB: 2 blocks in 228 KiB.
    for case in ("matmul-sm90", "matmul-sm100"):
        res = read(case)
        assert 96 * 1024 <= res["shared_bytes"] < 114 * 1024 and res["occupancy_blocks"] == 2, case
    # 56 KiB + 1 KiB reserve = 57 KiB, exactly a quarter of 228 KiB: 4 blocks (3 with the reserve twice).
    assert (read("matmul-7stages-sm90")["shared_bytes"], read("matmul-7stages-sm90")["occupancy_blocks"]) == (57344, 4)
    # 112 KiB + 16 bytes of barriers + 1 KiB, rounded to 128: 115840, 2 blocks (1 with the reserve twice).
    wide = read("matmul-7stages-sm100")
    assert (wide["shared_bytes"], wide["occupancy_blocks"]) == (114704, 2)
    # sm103 is sm100's SM: the same GEMM's 96 KiB, 2 blocks.
    assert read("matmul-sm103")["occupancy_blocks"] == 2
    # sm120: 48 warps per SM, so 4-warp blocks stop at 12 (16 on sm90); the 128x128 GEMM's 64 KiB + 1 KiB fits
    # once in 100 KiB (any register count a thread may have allows two 4-warp blocks); 48 KiB + 1 KiB twice.
    assert (read("add-sm120")["occupancy_blocks"], read("add-sm120")["occupancy_warps"]) == (12, 48)
    gemm = read("matmul-sm120")
    assert (gemm["shared_bytes"], gemm["occupancy_blocks"]) == (65536, 1)
    narrow = read("matmul-7stages-sm120")
    assert (narrow["shared_bytes"], narrow["occupancy_blocks"]) == (49152, 2)


# Per compute capability, from the CUDA programming guide's tables (and NVIDIA's cccl arch_traits), written
# here apart from regsurvey's records: warps per SM, blocks per SM, shared memory per SM.
CUDA_LIMITS = {
    "sm90": (64, 32, 228 * 1024),
    "sm100": (64, 32, 228 * 1024),
    "sm103": (64, 32, 228 * 1024),  # 10.3: as 10.0
    "sm120": (48, 24, 100 * 1024),  # 12.0: 1536 threads, 24 blocks, 100 KiB
}


def cuda_occupancy_calculator(*, regs: int, shared: int, warps: int, target: str = "sm90") -> int:
    """Blocks per SM, as CUDA's occupancy calculator computes them.

    Written here from cuda_occupancy.h's rules, apart from regsurvey's: warps and blocks per SM
    (``CUDA_LIMITS``), registers (per warp, in 256s, 16384 per sub-partition of 4; at most 255 a thread, the
    block's warps counted in fours) and shared memory (static + dynamic + the 1 KiB reserve, in 128-byte
    units, out of the SM's).
    """
    max_warps, max_blocks, smem = CUDA_LIMITS[target]
    per_warp = -(-regs * 32 // 256) * 256
    if regs > 255 or per_warp * -(-warps // 4) * 4 > 65536:
        return 0
    by_regs = (16384 // per_warp) * 4 // warps if per_warp else max_blocks
    per_block = -(-(shared + DRIVER_RESERVE) // 128) * 128
    return min(max_blocks, max_warps // warps, by_regs, smem // per_block)


@pytest.mark.parametrize("case", CASES)
def test_occupancy_equals_the_cuda_occupancy_calculator(case: str) -> None:
    if case.startswith("spill"):  # a spilling cubin is disassembled for its loops
        needs_decoding(case)
    ck, _ = compiled(case)
    res = read(case)
    ptxas = ptxas_reading(ck.asm["ptx"], ck.asm["cubin"])
    shared = ck.metadata.shared + ptxas["static_shared"]
    expected = cuda_occupancy_calculator(regs=ptxas["regs"], shared=shared, warps=ck.metadata.num_warps,
                                         target=CASES[case][1])
    assert (res["occupancy_blocks"], res["occupancy_warps"]) == (expected, expected * ck.metadata.num_warps)


# What an H200's driver said about kernels regsurvey reads offline (tests/gpu/driver_facts.py made it,
# on the GPU: `python tests/gpu/driver_facts.py`): the static-shared kernel's SHARED_SIZE_BYTES and
# blocks per SM at each dynamic size, and Triton kernels' registers, shared memory and blocks per SM.
H200_FACTS = json.loads((Path(__file__).parents[1] / "gpu" / "h200-driver-facts.json").read_text())


@pytest.mark.parametrize("target", ["sm90", "sm100", "sm103", "sm120"])
def test_static_shared_memory_is_kept_and_the_reserve_is_not(target: str) -> None:
    cubin, ptxas = static_shared_cubin(target)
    facts = H200_FACTS["static_shared_kernel"]
    assert ptxas["static_shared"] == facts["static_shared"] == 4096  # the array, not the reserve
    assert cuobjdump_reading(cubin)["static_shared"] == 4096 + DRIVER_RESERVE
    for dynamic, blocks in facts["blocks_per_sm"].items():
        res = read_cubin(cubin, shared_bytes=int(dynamic), num_warps=facts["warps"], target=TARGETS[target])
        assert res["shared_bytes"] == facts["static_shared"] + int(dynamic)
        got = nvidia_occupancy_blocks(regs=facts["regs"], shared_bytes=res["shared_bytes"], num_warps=facts["warps"],
                                      target=TARGETS[target])
        if target != "sm120":  # the H200's limits are sm_100's and sm_103's
            # The driver's blocks per SM for the registers its ptxas gave (this machine's ptxas may differ).
            assert got == blocks, dynamic
        assert got == cuda_occupancy_calculator(regs=facts["regs"], shared=res["shared_bytes"], warps=facts["warps"],
                                                target=target), dynamic


@pytest.mark.parametrize("launch", H200_FACTS["triton_kernels"], ids=lambda launch: launch["name"])
def test_occupancy_equals_an_h200s_driver(launch: dict[str, Any]) -> None:
    """Triton kernels launched on an H200: the driver's registers, static + dynamic shared memory and
    cuOccupancyMaxActiveBlocksPerMultiprocessor, against regsurvey's occupancy from the same figures."""
    shared = launch["static_shared"] + launch["dynamic_shared"]
    assert nvidia_occupancy_blocks(regs=launch["regs"], shared_bytes=shared, num_warps=launch["warps"],
                                   target=TARGETS["sm90"]) == launch["blocks_per_sm"]


# Hand-computed: 65536 registers in 4 sub-partitions, allocated per warp in 256s; 64 warps, 32 blocks,
# 228 KiB shared per SM with 1 KiB reserved per block and 128-byte allocation.
@pytest.mark.parametrize(
    ("regs", "shared", "warps", "blocks"),
    [
        (32, 0, 4, 16),  # warps: 64 // 4
        (32, 0, 1, 32),  # blocks: 32
        (128, 0, 4, 4),  # 4096 per warp: 4 per sub-partition, 16 warps
        (129, 0, 4, 3),  # 136 x 32 = 4352: 3 per sub-partition, 12 warps
        (168, 0, 4, 3),  # 5376 per warp: 3 per sub-partition, 12 warps
        (255, 0, 1, 8),
        (255, 0, 8, 1),
        (255, 0, 16, 0),  # 8192 x 16 > 65536: does not fit
        (256, 0, 1, 0),  # over 255 per thread
        (0, 0, 4, 16),
        (32, 48 * 1024, 4, 4),  # 49152 + 1024 = 50176: 233472 // 50176
        (32, 113 * 1024, 4, 2),  # 116736 exactly: 2 blocks
        (32, 113 * 1024 + 1, 4, 1),  # rounds to 116864: 1 block
        (32, 227 * 1024, 4, 1),  # the per-block maximum
        (32, 227 * 1024 + 1, 4, 0),
    ],
)
def test_occupancy_by_hand(regs: int, shared: int, warps: int, blocks: int) -> None:
    for target in ("sm90", "sm100", "sm103"):
        got = nvidia_occupancy_blocks(regs=regs, shared_bytes=shared, num_warps=warps, target=TARGETS[target])
        assert got == blocks
        assert cuda_occupancy_calculator(regs=regs, shared=shared, warps=warps, target=target) == blocks


# Hand-computed for compute capability 12.0: the same register file and allocation, but 48 warps, 24 blocks
# and 100 KiB of shared memory per SM (99 KiB a block with opt-in, 1 KiB reserved per block).
@pytest.mark.parametrize(
    ("regs", "shared", "warps", "blocks"),
    [
        (32, 0, 4, 12),  # warps: 48 // 4 (64 // 4 = 16 on sm90)
        (32, 0, 1, 24),  # blocks: 24 (32 on sm90)
        (32, 0, 2, 24),  # 48 warps in 24 blocks: both limits at once
        (32, 0, 16, 3),  # 48 // 16
        (40, 0, 4, 12),  # 1280 per warp: 12 per sub-partition, 48 warps: registers and warps agree
        (48, 0, 4, 10),  # 1536 per warp: 10 per sub-partition, 40 warps
        (128, 0, 4, 4),  # 4096 per warp: 4 per sub-partition, 16 warps
        (255, 0, 1, 8),
        (255, 0, 8, 1),
        (255, 0, 16, 0),  # 8192 x 16 > 65536: does not fit
        (256, 0, 1, 0),  # over 255 per thread
        (32, 48 * 1024, 4, 2),  # 49152 + 1024 = 50176: 102400 // 50176
        (32, 49 * 1024, 4, 2),  # 51200 exactly: 2 blocks
        (32, 49 * 1024 + 1, 4, 1),  # rounds to 51328: 1 block
        (32, 24 * 1024, 4, 4),  # 25600 exactly: 4 blocks
        (32, 99 * 1024, 4, 1),  # the per-block maximum with opt-in: the whole 100 KiB with the reserve
        (32, 99 * 1024 + 1, 4, 0),  # more than a block may have
        (32, 113 * 1024, 4, 0),  # fits twice on sm90, not at all here
    ],
)
def test_sm120_occupancy_by_hand(regs: int, shared: int, warps: int, blocks: int) -> None:
    got = nvidia_occupancy_blocks(regs=regs, shared_bytes=shared, num_warps=warps, target=TARGETS["sm120"])
    assert got == blocks
    assert cuda_occupancy_calculator(regs=regs, shared=shared, warps=warps, target="sm120") == blocks


def test_spill_bytes_sum_access_widths() -> None:
    sass = """
        /*0080*/                   STL [R1+0x98], R2 ;
        /*00b0*/                   STL.64 [R1+0x20], R4 ;
        /*00c0*/              @!P0 STL.128 [R1+0x30], R8 ;
        /*00d0*/                   LDL.LU R3, [R1+0x98] ;
        /*00e0*/                   LDL.LU.64 R4, [R1+0x20] ;
        /*00f0*/                   LDL.U8 R5, [R1+0x40] ;
        /*0100*/                   STG.E.64 desc[UR4][R2.64], R4 ;
        /*0110*/                   LDS R6, [R7] ;
    """
    assert spill_bytes(sass) == (4 + 8 + 16, 4 + 8 + 1)


def _corrupt_cases() -> dict[str, tuple[bytes, str]]:
    ck, _ = compiled("add-sm90")
    good: bytes = ck.asm["cubin"]
    text = ELFFile(io.BytesIO(good)).get_section_by_name(".text.add_kernel")
    start, size = text["sh_offset"], text["sh_size"]
    hsaco = compile_kernel("add_kernel", "gfx950", options=(("num_warps", 4),), BLOCK=1024).asm["hsaco"]
    return {
        "empty": (b"", "not a readable cubin"),
        "garbage": (b"\x7fELF not really" * 64, "not a readable cubin"),
        "truncated": (good[: len(good) // 2], "cubin is cut short"),
        "truncated-by-one": (good[:-1], "cubin is cut short"),
        "hsaco": (hsaco, "not a CUDA ELF"),
        "garbled-code": (good[:start] + b"\xff" * size + good[start + size :], "nvdisasm rejected the cubin"),
    }


def test_garbled_code_is_refused_by_the_disassembler() -> None:
    # read_cubin disassembles only kernels with a stack frame (no frame, no spills to count), so
    # garbled code is caught where the SASS is read: here, and in the lint.
    data, expected = _corrupt_cases()["garbled-code"]
    with pytest.raises(CorruptObjectError) as raised:
        disassemble(data)
    assert expected in str(raised.value) and "\n" not in str(raised.value)


def test_a_section_claiming_gigabytes_is_refused_before_nvdisasm_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: a real sm90 cubin whose (empty) ``.nv.shared.reserved.0`` is made to claim 4 GiB: nvdisasm
    allocated and zeroed it (13 s and 4 GB of memory here, 33.6 s on a loaded machine, where docs/trust.md
    promises a damaged object's answer within 5 s) and then printed the SASS as if nothing were wrong.
    Now it is a one-line CorruptObjectError before nvdisasm starts, for the SASS and for the pressure's
    life ranges alike."""
    from regsurvey.objects import nvidia_object
    from regsurvey.pressure.nvidia import nvidia_pressure

    ck, _ = compiled("add-sm90")
    good: bytes = ck.asm["cubin"]
    elf = ELFFile(io.BytesIO(good))
    (index,) = [i for i, s in enumerate(elf.iter_sections()) if s.name == ".nv.shared.reserved.0"]
    assert elf.get_section(index)["sh_type"] == "SHT_NOBITS"
    size_at = elf.header["e_shoff"] + index * elf.header["e_shentsize"] + 32  # Elf64_Shdr.sh_size
    damaged = good[:size_at] + (0xFFFFFFFF).to_bytes(8, "little") + good[size_at + 8:]
    runs: list[list[str]] = []
    real = nvidia_object.run_tool

    def counted(name: str, args: list[str], path: str, program: str | None = None) -> str:
        runs.append(args)
        return real(name, args, path, program)

    monkeypatch.setattr(nvidia_object, "run_tool", counted)
    for read in (lambda: disassemble(damaged), lambda: nvidia_pressure(damaged, "sm90", ck.asm["ptx"])):
        with pytest.raises(CorruptObjectError) as raised:
            read()
        assert str(raised.value).endswith("cubin section .nv.shared.reserved.0 claims 4294967295 bytes, more "
                                          "than any GPU's memory of its kind (damaged); not disassembled")
    assert runs == []  # nvdisasm never started
    assert "add_kernel" in nvidia_object.nvdisasm(good, ["-c"]) and len(runs) == 1  # (the same cubin undamaged)


@pytest.mark.parametrize("name", ["empty", "garbage", "truncated", "truncated-by-one", "hsaco"])
def test_corrupt_objects_raise_one_line(name: str) -> None:
    data, expected = _corrupt_cases()[name]
    with pytest.raises(CorruptObjectError) as raised:
        read_cubin(data, shared_bytes=0, num_warps=4, target=TARGETS["sm90"])
    message = str(raised.value)
    assert expected in message and "\n" not in message and message.strip() == message


def test_object_for_another_arch_is_refused() -> None:
    ck, _ = compiled("add-sm90")
    with pytest.raises(CorruptObjectError, match="is for sm_90, not the target sm_100"):
        read_cubin(ck.asm["cubin"], shared_bytes=0, num_warps=4, target=TARGETS["sm100"])
