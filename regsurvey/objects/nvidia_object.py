"""Read an NVIDIA cubin (the ELF Triton emits for sm90/sm100): registers, spills, stack, occupancy, and
the spills inside loops.

The only module that reads NVIDIA objects. Registers and stack come from the ``.nv.info`` attributes
ptxas writes (REGCOUNT, FRAME_SIZE). The cubin records no spill count: spill bytes come from the log
of the ``ptxas -v`` run that made the cubin, when the compile kept it (:func:`logged_spills`), else
from the SASS, by summing the access widths of the STL/LDL instructions that ``nvdisasm`` prints. The
two agree (tested), and the log costs nothing where one nvdisasm run of a large kernel costs more
than a second; only a kernel that spills is disassembled, to place its spills in the loops of its SASS
(:mod:`regsurvey.objects.loop_spills`). The disassembler is the one bundled with Triton, found without importing Triton.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import importlib.util
import io
import os
import re
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from ..errors import CorruptObjectError
from ..model.figures import NVIDIA, Figures
from ..model.targets import Target
from .elfcheck import PARSE_ERRORS, check_extent, first_line
from .loop_spills import NO_LOOP_SPILLS, sass_loop_spills
from .sass import spill_bytes
from .tools import check_cubin_for_tool, tool_time_limit

# .nv.info attributes (EIATTR_*): a u8 format, a u8 attribute, then a u16 value or, for the format
# EIFMT_SVAL, a u16 size and that many bytes. Global .nv.info entries start with a u32 symbol index.
_EIFMT_SVAL = 0x04
_EIATTR_FRAME_SIZE = 0x11
_EIATTR_REGCOUNT = 0x2F
# Per-kernel .nv.info.<kernel>: the block size the PTX requires (.reqntid) or allows (.maxntid), 3 u32s.
_EIATTR_MAX_THREADS = 0x05
_EIATTR_REQNTID = 0x10
# Where ptxas put the parameters: EIATTR_PARAM_CBANK (u32 symbol, u16 area offset in bank 0, u16 size) and
# per parameter EIATTR_KPARAM_INFO (u32 index, u16 ordinal, u16 offset in the area, u32 flags).
_EIATTR_PARAM_CBANK = 0x0A
_EIATTR_KPARAM_INFO = 0x17

# The occupancy facts of each target, from CUDA's cuda_occupancy.h (cudaOccMaxBlocksPerSMRegsLimit,
# cudaOccMaxBlocksPerSMSmemLimit and the granularity tables), live in its record in model/targets.py: the
# per-SM totals (65536 registers, 64 warps, 32 blocks, 228 KiB shared), how registers (per warp, in
# sub-partitions) and shared memory are allocated, and the 1 KiB the driver reserves per block on top of
# what the kernel asks for.




def read_cubin(data: bytes, *, shared_bytes: int, num_warps: int, target: Target,
               sass: str | None = None) -> Figures:
    """Read the figures of the one kernel in a Triton cubin compiled for ``target``: every NVIDIA figure
    of the registry (``model.figures``).

    ``regs`` are 32-bit registers per thread; spill and stack bytes are per thread; ``shared_bytes``
    is per block and what the driver reports: the kernel's static shared memory
    (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, without the driver's 1 KiB reserve) plus the dynamic shared
    memory Triton launches with (its compiled metadata ``shared``); occupancy is resident blocks and
    warps per SM, counting the reserve once per block.

    ``shared_bytes`` is Triton's compiled metadata ``shared`` (dynamic shared memory per block);
    ``num_warps`` is the warps per block (Triton's compiled metadata ``num_warps``). ``sass``: the
    cubin's ``nvdisasm -c`` if the caller has it (see :func:`read_cubin_sass`).
    """
    return read_cubin_sass(data, shared_bytes=shared_bytes, num_warps=num_warps, target=target, sass=sass)[0]


def read_cubin_sass(data: bytes, *, shared_bytes: int, num_warps: int, target: Target, sass: str | None = None,
                    want_sass: bool = False, ptxas_log: str | None = None) -> tuple[Figures, str | None]:
    """:func:`read_cubin`, and the SASS it read: disassembled when the kernel has a stack frame that the
    log does not show free of spills, or ``want_sass``; otherwise ``sass`` as given (maybe None).

    ``ptxas_log``: what ``ptxas -v`` printed when it made this cubin. A kernel with a stack frame
    takes its spill bytes from there when the log names the kernel with the cubin's own frame size; any
    other log is not this cubin's, and the SASS counts instead. Where it spills, the SASS places its
    ``STL`` and ``LDL`` in the code's loops (``loop_spill_ops``, ``loop_spill_depth``:
    :func:`sass_loop_spills`): a frame without spills (a local array) is not disassembled."""
    if not target.is_nvidia:
        raise ValueError(f"read_cubin needs an NVIDIA target, not {target.name}")
    with _readable():
        elf = ELFFile(io.BytesIO(data))
        if elf.header["e_machine"] != "EM_CUDA":
            raise CorruptObjectError(f"not a CUDA ELF (e_machine {elf.header['e_machine']})")
        check_extent(elf, len(data), "cubin")
        sm = _sm_arch(elf)
        kernel, symbol_index = kernel_symbol(elf)
        info = _global_info(elf)
        static_shared = _static_shared(elf, kernel, target)
    if sm != int(target.arch):
        raise CorruptObjectError(f"cubin is for sm_{sm}, not the target sm_{target.arch}")
    regs = info.get((_EIATTR_REGCOUNT, symbol_index))
    if regs is None:
        raise CorruptObjectError(f"cubin has no REGCOUNT for kernel {kernel}")
    stack = info.get((_EIATTR_FRAME_SIZE, symbol_index), 0)
    # Spills go to local memory, which is the stack frame: with no frame there is no STL/LDL to
    # count, and nvdisasm (0.3 s to more than a second a run, more than many compiles) is skipped.
    logged = logged_spills(ptxas_log, kernel, stack) if stack and sass is None and ptxas_log else None
    # A kernel that spills is disassembled even where the log gave its bytes: its spills' loops are in the SASS.
    if sass is None and ((stack and logged != (0, 0)) or want_sass):
        sass = disassemble(data)
    if logged is not None:
        stores, loads = logged
    else:
        stores, loads = spill_bytes(sass) if stack and sass is not None else (0, 0)
    loops = sass_loop_spills(sass) if (stores or loads) and sass is not None else NO_LOOP_SPILLS
    # What the driver reports as the kernel's shared memory: static (SHARED_SIZE_BYTES) + dynamic.
    shared = shared_bytes + static_shared
    blocks = nvidia_occupancy_blocks(regs=regs, shared_bytes=shared, num_warps=num_warps, target=target)
    return Figures.complete(
        NVIDIA,
        regs=regs,
        spill_store_bytes=stores,
        spill_load_bytes=loads,
        stack_bytes=stack,
        shared_bytes=shared,
        occupancy_blocks=blocks,
        occupancy_warps=blocks * num_warps,
        loop_spill_ops=loops.in_loops,
        loop_spill_depth=loops.deepest,
    ), sass


# ptxas -v, for each function it compiles: "ptxas info    : Function properties for NAME" and, on the
# next line, "N bytes stack frame, N bytes spill stores, N bytes spill loads".
_FUNCTION_PROPERTIES = re.compile(
    r"Function properties for (\S+)\s*\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)


def logged_spills(log: str, kernel: str, stack: int) -> tuple[int, int] | None:
    """Spill store and load bytes of ``kernel`` as ``ptxas -v`` printed them in ``log``, or None when
    the log has no properties for that kernel or gives another frame size than ``stack`` (the cubin's
    FRAME_SIZE): then the log was not made with this cubin."""
    for match in _FUNCTION_PROPERTIES.finditer(log):
        if match[1] == kernel:
            return (int(match[3]), int(match[4])) if int(match[2]) == stack else None
    return None


def _static_shared(elf: ELFFile, kernel: str, target: Target) -> int:
    """The kernel's static shared memory as the driver counts it (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).

    On sm_90 and later, ptxas (12.8 and 13.x checked) lays the driver's per-block reserve out in the
    cubin: whenever the kernel touches shared memory, ``.nv.shared.<kernel>`` starts with that 1 KiB
    (the ``.nv.shared.reserved.*`` objects live inside it, and shared addresses start at 0x400), and
    the kernel's own static arrays follow. The driver subtracts the reserve: on an H200 a Triton GEMM
    with a 1024-byte ``.nv.shared.<kernel>`` reports SHARED_SIZE_BYTES 0, and a PTX kernel with a
    4096-byte static array (a 5120-byte section) reports 4096, which is also ``ptxas -v``'s
    "bytes smem". ``cuobjdump --dump-resource-usage`` prints the whole section as SHARED.
    """
    section = elf.get_section_by_name(f".nv.shared.{kernel}")
    if section is None:
        return 0
    size = int(section["sh_size"])
    has_reserve_layout = any(s.name.startswith(".nv.shared.reserved.") for s in elf.iter_sections())
    if not has_reserve_layout:
        return size  # an older layout: the section holds only the kernel's own arrays
    reserve = target.device.reserved_shared_memory_per_block
    if size < reserve:
        raise CorruptObjectError(
            f".nv.shared.{kernel} holds {size} bytes, less than the {reserve}-byte reserve it starts with"
        )
    return size - reserve


def nvidia_occupancy_blocks(*, regs: int, shared_bytes: int, num_warps: int, target: Target) -> int:
    """Thread blocks resident on one SM of ``target`` (cudaOccMaxActiveBlocksPerMultiprocessor), 0 if none fit.

    Registers: a warp takes regs x 32 rounded up to 256; each of the 4 sub-partitions holds
    (65536 / 4) // that many warps. Shared memory: a block takes ``shared_bytes`` (static + dynamic,
    without the reserve, as the driver reports it) + the 1 KiB the driver reserves per block, rounded
    up to 128 bytes, out of 228 KiB. Warps: 64 per SM; blocks: 32 per SM.
    """
    if num_warps < 1:
        raise ValueError(f"num_warps must be at least 1, not {num_warps}")
    partitions = target.reg_sub_partitions
    regs_per_warp = _align(regs * target.warp_size, target.reg_alloc_granule)
    # The hardware check at launch assumes the block's warps are spread over all sub-partitions.
    if regs > target.max_regs_per_thread or regs_per_warp * _align(num_warps, partitions) > target.regs_per_lane:
        return 0
    limits = [target.max_blocks_per_cu, target.max_waves_per_simd // num_warps]
    if regs_per_warp:
        warps_per_partition = target.regs_per_lane // partitions // regs_per_warp
        limits.append(warps_per_partition * partitions // num_warps)
    smem = _align(shared_bytes + target.device.reserved_shared_memory_per_block, target.shared_alloc_granule)
    limits.append(target.shared_bytes_per_cu // smem)
    return min(limits)


@functools.lru_cache(maxsize=8)
def disassemble(data: bytes) -> str:
    """The SASS of a cubin, from ``nvdisasm -c``; CorruptObjectError if nvdisasm rejects it.

    The last few results are kept: the survey reads spills and lints from the same SASS, and one
    nvdisasm run costs about 0.3 s.
    """
    return nvdisasm(data, ["-c"])


def nvdisasm(data: bytes, options: list[str], program: str | None = None) -> str:
    """nvdisasm's output for the cubin ``data`` with ``options``; CorruptObjectError for a damaged cubin.
    ``program``: the nvdisasm to run (another toolchain's), else the one bundled with this Triton."""
    check_cubin_for_tool(data)
    with tempfile.TemporaryDirectory(prefix="regsurvey-") as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(data)
        return run_tool("nvdisasm", [*options, path], path, program)


# One instruction line of nvdisasm's output, its address and what follows it.
_ADDRESSED = re.compile(r"^\s*/\*([0-9a-f]+)\*/(.*)$", re.M)


def disassemble_many(cubins: list[bytes]) -> list[str]:
    """The SASS of each cubin, from one ``nvdisasm`` run over all their kernels' code laid end to end.

    nvdisasm spends about 0.35 s of CPU starting (whatever the input) and little per instruction, so
    one run over a raw instruction stream (``--binary SM<arch>a``: each cubin's ``.text.*`` sections,
    128-byte aligned) costs a fraction of one run per cubin. Each cubin's text is its own
    instruction lines, addresses from 0, as ``nvdisasm -c`` prints them, except that a branch names its
    target (or a call its callee) by address where ``-c`` names a label (checked line by line against
    ``-c`` in the tests).
    Every cubin must be for the same architecture. Raises CorruptObjectError naming the first cubin
    that is not a readable one-kernel cubin, or for nvdisasm's own failure.
    """
    if not cubins:
        return []
    blob = bytearray()
    spans: list[tuple[int, int]] = []
    arch = None
    for index, data in enumerate(cubins):
        try:
            with _readable():
                elf = ELFFile(io.BytesIO(data))
                check_extent(elf, len(data), "cubin")
                kernel, _ = kernel_symbol(elf)
                sm = _sm_arch(elf)
                if elf.get_section_by_name(f".text.{kernel}") is None:
                    raise CorruptObjectError(f"cubin has no .text.{kernel}")
                code = bytearray()
                for section in elf.iter_sections():  # the kernel's code, and any function it calls
                    if section.name.startswith(".text."):
                        code += section.data()
                        code += bytes(-len(code) % 128)
        except CorruptObjectError as exc:
            raise CorruptObjectError(f"cubin {index} of {len(cubins)}: {exc}") from None
        if arch is not None and sm != arch:
            raise CorruptObjectError(f"cubin {index} of {len(cubins)} is for sm_{sm}, the first for sm_{arch}")
        arch = sm
        spans.append((len(blob), len(code)))
        blob += code  # a multiple of 128 bytes: the next cubin's code starts aligned
    with tempfile.TemporaryDirectory(prefix="regsurvey-") as tmp:
        path = os.path.join(tmp, "kernels.bin")
        with open(path, "wb") as f:
            f.write(blob)
        out = run_tool("nvdisasm", ["--binary", f"SM{arch}a", path], path)
    texts: list[list[str]] = [[] for _ in cubins]
    starts = [start for start, _ in spans]
    for match in _ADDRESSED.finditer(out):
        address = int(match[1], 16)
        index = bisect.bisect_right(starts, address) - 1
        start, size = spans[index]
        if address < start + size:  # not the padding between two kernels
            texts[index].append(f"        /*{address - start:04x}*/{match[2]}")
    return ["\n".join(lines) + "\n" for lines in texts]


def instruction_words(data: bytes) -> tuple[int, list[tuple[int, int]]]:
    """The architecture of a cubin and the two 64-bit words (little-endian) of each 16-byte instruction of its
    code (every ``.text.*`` section: the kernel and the functions it calls); CorruptObjectError where it does
    not read."""
    with _readable():
        elf = ELFFile(io.BytesIO(data))
        check_extent(elf, len(data), "cubin")
        words = []
        for section in elf.iter_sections():
            if section.name.startswith(".text."):
                code = section.data()
                words += [(int.from_bytes(code[i:i + 8], "little"), int.from_bytes(code[i + 8:i + 16], "little"))
                          for i in range(0, len(code) - 15, 16)]
        return _sm_arch(elf), words


def with_regcount_at_most(data: bytes, limit: int) -> bytes:
    """The cubin with its kernel's REGCOUNT attribute lowered to ``limit`` where it is above (a copy;
    ``data`` itself when nothing changes): for nvdisasm's life ranges, which refuse REGCOUNT 255."""
    with _readable():
        elf = ELFFile(io.BytesIO(data))
        _, symbol_index = kernel_symbol(elf)
        section = elf.get_section_by_name(".nv.info")
        if section is None:
            raise CorruptObjectError("cubin has no .nv.info section")
        start, raw = section["sh_offset"], section.data()
    out = bytearray(data)
    for attr, pos, size in _sval_entries(raw):
        if attr == _EIATTR_REGCOUNT and size == 8:
            symbol, number = struct.unpack_from("<II", raw, pos)
            if symbol == symbol_index and number > limit:
                struct.pack_into("<I", out, start + pos + 4, limit)
    return bytes(out)


def tool_path(name: str) -> str:
    """Path of a CUDA tool bundled with Triton (``nvdisasm``, ``cuobjdump``, ``ptxas``, ``ptxas-blackwell``).

    Honors Triton's own override, ``TRITON_<NAME>_PATH``. Found from the installed package's location
    rather than by importing ``triton``, which would pull in the whole compiler.
    """
    override = os.environ.get(f"TRITON_{name.upper().replace('-', '_')}_PATH")
    if override and os.access(override, os.X_OK):
        return override
    spec = importlib.util.find_spec("triton")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"cannot find {name}: the triton package is not installed")
    path = os.path.join(os.path.dirname(spec.origin), "backends", "nvidia", "bin", name)
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"cannot find {name} at {path}")
    return path


def run_tool(name: str, args: list[str], path: str, program: str | None = None) -> str:
    """Run a bundled tool (``program``, where another toolchain's is given) on the object at ``path``; its
    failure becomes a CorruptObjectError."""
    limit = tool_time_limit(os.path.getsize(path))
    try:
        done = subprocess.run(
            [program or tool_path(name), *args], capture_output=True, text=True, errors="replace", timeout=limit,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CorruptObjectError(f"{name} did not finish within {limit:.0f} s (a damaged object?)") from None
    if done.returncode != 0:
        said = done.stderr or done.stdout or f"exit status {done.returncode}"
        # Its error, not the warnings before it (nvdisasm 13 warns of a CUDA 12 cubin's format, then refuses).
        errors = [line for line in said.splitlines() if re.match(rf"\s*{re.escape(name)} error\b", line)]
        message = first_line(errors[0] if errors else said)
        raise CorruptObjectError(f"{name} rejected the cubin: {message.replace(path, 'the cubin')}")
    return done.stdout


def _sm_arch(elf: ELFFile) -> int:
    # EF_CUDA_SM: bits 8-15 of e_flags from ELF ABI version 8 (CUDA 13 ptxas), bits 0-7 before.
    flags = elf.header["e_flags"]
    if elf.header["e_ident"]["EI_ABIVERSION"] >= 8:
        return int(flags >> 8 & 0xFF)
    return int(flags & 0xFF)


def kernel_symbol(elf: ELFFile) -> tuple[str, int]:
    """Name and symbol index of the one entry function: the one with a ``.nv.info.<name>`` section."""
    symtab = elf.get_section_by_name(".symtab")
    if not isinstance(symtab, SymbolTableSection):
        raise CorruptObjectError("cubin has no symbol table")
    entries = {
        section.name[len(".nv.info.") :] for section in elf.iter_sections() if section.name.startswith(".nv.info.")
    }
    found = [
        (sym.name, index)
        for index, sym in enumerate(symtab.iter_symbols())
        if sym["st_info"]["type"] == "STT_FUNC" and sym.name in entries
    ]
    if len(found) != 1:
        raise CorruptObjectError(f"cubin holds {len(found)} kernels; Triton emits one")
    return found[0]


def _global_info(elf: ELFFile) -> dict[tuple[int, int], int]:
    """The per-symbol u32 attributes of the global ``.nv.info``, as {(attribute, symbol index): value}."""
    section = elf.get_section_by_name(".nv.info")
    if section is None:
        raise CorruptObjectError("cubin has no .nv.info section")
    raw = section.data()
    out: dict[tuple[int, int], int] = {}
    for attr, pos, size in _sval_entries(raw):
        if size == 8:
            symbol, number = struct.unpack_from("<II", raw, pos)
            out[(attr, symbol)] = number
    return out


def _sval_entries(raw: bytes) -> Iterator[tuple[int, int, int]]:
    """(attribute, payload offset, payload size) of each EIFMT_SVAL entry of an ``.nv.info`` section (the
    others hold a u16 in place: nothing read here); CorruptObjectError for one that runs past its end."""
    pos = 0
    while pos + 4 <= len(raw):
        fmt, attr, size = struct.unpack_from("<BBH", raw, pos)
        pos += 4
        if fmt != _EIFMT_SVAL:
            continue
        if pos + size > len(raw):
            raise CorruptObjectError(".nv.info entry runs past the end of its section")
        yield attr, pos, size
        pos += size


@dataclass(frozen=True)
class ParamBank:
    """Where ptxas put a kernel's parameters in constant bank 0: the area (``c[0x0][base]``) and each
    parameter's offset in it, by ordinal."""

    base: int
    offsets: dict[int, int]


def param_bank(data: bytes) -> ParamBank:
    """The cubin's parameter layout, from its ``.nv.info.<kernel>`` (EIATTR_PARAM_CBANK, EIATTR_KPARAM_INFO).

    The layout is not the PTX's alone: a parameter is aligned in the constant bank, not in the area (a
    64-byte aligned TMA descriptor passed by value as the first parameter starts 48 bytes in on sm_90, whose
    area starts at 0x210). CorruptObjectError for an unreadable cubin or one that records no layout."""
    _, kernel, _, raw = _kernel_info(data)
    base, offsets = None, {}
    for attr, pos, size in _sval_entries(raw):
        if attr == _EIATTR_PARAM_CBANK and size == 8:
            base = struct.unpack_from("<IHH", raw, pos)[1]
        elif attr == _EIATTR_KPARAM_INFO and size == 12:
            _, ordinal, offset, _ = struct.unpack_from("<IHHI", raw, pos)
            offsets[ordinal] = offset
    if base is None:
        raise CorruptObjectError(f"cubin records no parameter bank for kernel {kernel}")
    return ParamBank(base, offsets)


def driver_attributes(data: bytes, target: Target) -> tuple[int, int, int]:
    """What the CUDA driver reports for the cubin's kernel once loaded, as Triton reads it:
    ``CU_FUNC_ATTRIBUTE_NUM_REGS`` (REGCOUNT), ``LOCAL_SIZE_BYTES`` (the frame: local memory per
    thread) and ``MAX_THREADS_PER_BLOCK`` (the ``.reqntid``/``.maxntid`` block size, else 1024, and
    never more warps than the register file holds at the kernel's register count)."""
    elf, _, symbol_index, raw = _kernel_info(data)
    with _readable():
        info = _global_info(elf)
    sizes = _block_sizes(raw)
    regs = info.get((_EIATTR_REGCOUNT, symbol_index), 0)
    local = info.get((_EIATTR_FRAME_SIZE, symbol_index), 0)
    threads = min([target.device.max_threads_per_block, *sizes])
    regs_per_warp = _align(regs * target.warp_size, target.reg_alloc_granule)
    if regs_per_warp:
        warps = target.regs_per_lane // target.reg_sub_partitions // regs_per_warp * target.reg_sub_partitions
        threads = min(threads, warps * target.warp_size)
    return regs, local, threads


def _kernel_info(data: bytes) -> tuple[ELFFile, str, int, bytes]:
    """The cubin's ELF, its kernel, the kernel's symbol index and its own ``.nv.info.<kernel>`` (empty if
    none); CorruptObjectError for a cubin pyelftools cannot read."""
    with _readable():
        elf = ELFFile(io.BytesIO(data))
        kernel, symbol_index = kernel_symbol(elf)
        section = elf.get_section_by_name(f".nv.info.{kernel}")
        return elf, kernel, symbol_index, section.data() if section is not None else b""


@contextlib.contextmanager
def _readable() -> Iterator[None]:
    """pyelftools reports a cut or altered object in many ways: each is a CorruptObjectError."""
    try:
        yield
    except CorruptObjectError:
        raise
    except PARSE_ERRORS as exc:
        raise CorruptObjectError(f"not a readable cubin: {first_line(exc)}") from None


def _block_sizes(raw: bytes) -> list[int]:
    """The block sizes (x * y * z) a kernel's own ``.nv.info.<kernel>`` requires or allows."""
    sizes = []
    for attr, pos, size in _sval_entries(raw):
        if attr in (_EIATTR_REQNTID, _EIATTR_MAX_THREADS) and size == 12:
            x, y, z = struct.unpack_from("<III", raw, pos)
            sizes.append(x * y * z)
    return sizes


def _align(value: int, granule: int) -> int:
    return -(-value // granule) * granule
