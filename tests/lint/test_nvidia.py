"""The NVIDIA side of the lint: PTX ``ld.param`` against the SASS's reads of the parameter constant bank.

Kernels are compiled here offline for sm90 and sm100; the parameter layout is checked against what ptxas
recorded in the cubin (``.nv.info.<kernel>``: EIATTR_PARAM_CBANK, EIATTR_KPARAM_INFO), and the mutations
delete SASS instructions that read a parameter.
"""

from __future__ import annotations

import re
import struct

import pytest

from regsurvey.compile.triton_facts import APPENDED_ARGS
from regsurvey.errors import CorruptObjectError
from regsurvey.lint import ERROR, lint_nvidia
from regsurvey.lint.nvidia import lint_ptx_sass, param_bank_base, ptx_params, sass_bank_reads
from regsurvey.objects.nvidia_object import ParamBank, disassemble, disassemble_many, param_bank
from regsurvey.objects.sass import spill_bytes

from ..objects_kernels import SIGNATURES, compile_kernel
from ..readings import nv_info_entries

APPENDED = len(APPENDED_ARGS)  # Triton's scratch pointers, never reported by the lint

MATMUL = {"BM": 128, "BN": 128, "BK": 64}
CASES = {
    "add-sm90": ("add_kernel", "sm90", (("num_warps", 4),), {"BLOCK": 1024}),
    "add-sm100": ("add_kernel", "sm100", (("num_warps", 4),), {"BLOCK": 1024}),
    "spill-sm90": ("hold_tile_kernel", "sm90", (("num_warps", 1),), {"BLOCK": 4096}),
    "many-sm90": ("many_buffers_kernel", "sm90", (("num_warps", 4),), {"BLOCK": 256}),
    "many-sm100": ("many_buffers_kernel", "sm100", (("num_warps", 4),), {"BLOCK": 256}),
    "matmul-sm90": ("matmul_kernel", "sm90", (("num_warps", 4), ("num_stages", 3)), MATMUL),
    "matmul-sm100": ("matmul_kernel", "sm100", (("num_warps", 4), ("num_stages", 3)), MATMUL),
    "tma-sm90": ("tma_scale_kernel", "sm90", (("num_warps", 4),), {"BLOCK": 64}),
    "tma-sm100": ("tma_scale_kernel", "sm100", (("num_warps", 4),), {"BLOCK": 64}),
}


def compiled(case: str):  # type: ignore[no-untyped-def]
    kernel, target, options, constexprs = CASES[case]
    ck = compile_kernel(kernel, target, options=options, **constexprs)
    return ck, [n for n, t in SIGNATURES[kernel].items() if t != "constexpr"]


def param_info(cubin: bytes) -> tuple[int, dict[int, int]]:
    """(param bank offset, {ordinal: offset}) from the cubin's .nv.info.<kernel>: what ptxas laid out."""
    base, offsets = -1, {}
    for attr, payload in nv_info_entries(cubin):
        if attr == 0x0A:  # EIATTR_PARAM_CBANK: symbol, offset, size
            base = struct.unpack_from("<IHH", payload)[1]
        elif attr == 0x17:  # EIATTR_KPARAM_INFO: index, ordinal, offset, flags
            _, ordinal, offset, _ = struct.unpack_from("<IHHI", payload)
            offsets[ordinal] = offset
    return base, offsets


@pytest.mark.parametrize("case", ["add-sm90", "add-sm100", "matmul-sm90", "matmul-sm100", "tma-sm90", "tma-sm100"])
def test_parameter_layout_matches_the_cubin(case: str) -> None:
    ck, _ = compiled(case)
    base, offsets = param_info(ck.asm["cubin"])
    assert param_bank_base(ck.metadata.target.arch) == base
    kernel, params = ptx_params(ck.asm["ptx"], base)
    assert kernel == ck.metadata.name
    assert {p.index: p.offset for p in params} == offsets
    assert param_bank(ck.asm["cubin"]) == ParamBank(base, offsets)  # what the lint reads from the cubin
    if case == "tma-sm90":  # the descriptor is aligned in the bank: 0x210 + 48 = 0x240
        assert offsets[0] == 48 and offsets[1] == 48 + 128


@pytest.mark.parametrize("case", ["tma-sm90", "tma-sm100"])
def test_a_parameter_after_a_tma_descriptor_is_found_where_ptxas_put_it(case: str) -> None:
    """triton_kernels' persistent matmul passes TMA descriptors first; before the layout came from the cubin,
    every parameter after one was looked for 48 bytes too early on sm_90, and reported as never read."""
    ck, _ = compiled(case)
    ptx, cubin, sass = ck.asm["ptx"], ck.asm["cubin"], disassemble(ck.asm["cubin"])
    assert lint_nvidia(ptx, cubin, sass=sass, appended_args=APPENDED) == []
    bank = param_bank(cubin)
    n_at = bank.base + bank.offsets[6]  # n: after the descriptor (param 0), its shape (1, 2) and strides (3, 4)
    # The instruction that reads n may read scale (param 7) with it, as one 64-bit load.
    found = {f.arg_index: f for f in lint_nvidia(ptx, cubin, sass=without(sass, f"c[0x0][{n_at:#x}]"),
                                                 appended_args=APPENDED)}
    assert 6 in found and set(found) <= {6, 7}, found
    for index, finding in found.items():
        assert finding.arg_offset == bank.offsets[index] and finding.load.endswith(f"_param_{index}];")
    assert f"c[0x0][{n_at:#x}..{n_at + 3:#x}]" in found[6].reason


@pytest.mark.parametrize("case", CASES)
def test_real_kernels_are_clean(case: str) -> None:
    ck, names = compiled(case)
    assert lint_nvidia(ck.asm["ptx"], ck.asm["cubin"], arg_names=names, appended_args=APPENDED) == []


def without(sass: str, *needles: str) -> str:
    """The SASS minus every instruction line that contains one of ``needles``."""
    return "\n".join(line for line in sass.splitlines() if not any(n in line for n in needles))


@pytest.mark.parametrize("case", ["add-sm90", "add-sm100"])
def test_a_parameter_read_deleted_from_the_sass_is_found(case: str) -> None:
    ck, names = compiled(case)
    ptx, sass = ck.asm["ptx"], disassemble(ck.asm["cubin"])
    base = param_bank_base(ck.metadata.target.arch)
    # out_ptr is parameter 2, 16 bytes in; n is parameter 3 (i32) right after it.
    out_ptr = f"c[0x0][{base + 16:#x}]"
    (found,) = lint_ptx_sass(ptx, without(sass, out_ptr), arg_names=names, appended_args=APPENDED)
    assert (found.arg_name, found.arg_index, found.arg_offset, found.severity) == ("out_ptr", 2, 16, ERROR)
    assert found.load.startswith("ld.param.b64") and found.load.endswith("_param_2];")
    assert ptx.splitlines()[found.line - 1].split("//")[0].split() == found.load.split()
    assert found.target == f"sm{ck.metadata.target.arch}"
    lost_both = lint_ptx_sass(ptx, without(sass, out_ptr, f"c[0x0][{base + 24:#x}]"), arg_names=names,
                              appended_args=APPENDED)
    assert [f.arg_name for f in lost_both] == ["out_ptr", "n"]


def test_widths_of_bank_reads() -> None:
    sass = """
        /*0020*/                   LDC.64 R176, c[0x0][0x230] ;
        /*0030*/                   ULDC UR4, c[0x0][0x23c] ;
        /*0040*/              @!P0 ISETP.GE.AND P0, PT, R0, c[0x0][0x228], PT ;
        /*0050*/                   LDCU.128 UR8, c[0x0][0x380] ;
"""
    assert sass_bank_reads(sass) == ([(0x230, 0x238), (0x23C, 0x240), (0x228, 0x22C), (0x380, 0x390)], False)
    assert sass_bank_reads("        /*0000*/  LDC R2, c[0x0][R0+0x210] ;")[1] is True


def test_indirect_reads_and_address_taken_params_are_never_reported() -> None:
    ck, names = compiled("add-sm90")
    ptx, sass = ck.asm["ptx"], disassemble(ck.asm["cubin"])
    gone = without(sass, "c[0x0][0x220]")
    # A read at a register offset may be of any parameter: nothing can be said.
    assert lint_ptx_sass(ptx, gone + "\n        /*9990*/  LDC R2, c[0x0][R0+0x210] ;", arg_names=names,
                         appended_args=APPENDED) == []
    # The PTX takes the parameter's address (as for a TMA descriptor): reads go through a pointer.
    taken = ptx.replace("\tret;", "\tmov.b64 \t%rd99, add_kernel_param_2;\n\tret;", 1)
    assert taken != ptx
    assert lint_ptx_sass(taken, gone, arg_names=names, appended_args=APPENDED) == []


def test_a_broken_cubin_is_a_corrupt_object() -> None:
    ck, names = compiled("add-sm90")
    with pytest.raises(CorruptObjectError):
        lint_nvidia(ck.asm["ptx"], ck.asm["cubin"][:600], arg_names=names, appended_args=APPENDED)


_BRANCH = re.compile(r"^(@!?U?P\w+ )?(BRA|CALL|BSSY|JMP|BREAK|BSYNC|RET|WARPSYNC|JMX|BRX)\b")
_TARGET = re.compile(r"`\([^)]*\)|0x[0-9a-f]+(?= ?;)")


def instructions(sass: str) -> list[tuple[int, str]]:
    """(address, instruction) of each SASS line; a branch's or call's target left out (a label in ``-c``
    output, an address in raw-binary output)."""
    out = []
    for address, text in re.findall(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?;)", sass, re.M):
        text = re.sub(r"\s+", " ", text).replace(" ;", ";")
        out.append((int(address, 16), _TARGET.sub("T", text) if _BRANCH.match(text) else text))
    return out


@pytest.mark.parametrize("arch", ["sm90", "sm100"])
def test_disassembling_many_cubins_at_once_equals_one_by_one(arch: str) -> None:
    cubins = [compiled(case)[0].asm["cubin"] for case in CASES if case.endswith(arch)]
    assert len(cubins) >= 3
    together = disassemble_many(cubins)
    for cubin, sass in zip(cubins, together, strict=True):
        alone = instructions(disassemble(cubin))
        assert alone and instructions(sass) == alone
        assert spill_bytes(sass) == spill_bytes(disassemble(cubin))
    if arch == "sm90":  # a kernel that spills: the same STL/LDL bytes from either reading
        spilling = compiled("spill-sm90")[0].asm["cubin"]
        assert spill_bytes(disassemble_many([cubins[0], spilling])[1]) == spill_bytes(disassemble(spilling)) != (0, 0)


def test_disassembling_many_names_the_bad_cubin() -> None:
    good, other = compiled("add-sm90")[0].asm["cubin"], compiled("add-sm100")[0].asm["cubin"]
    with pytest.raises(CorruptObjectError, match="cubin 1 of 2"):
        disassemble_many([good, good[:600]])
    with pytest.raises(CorruptObjectError, match="cubin 1 of 2 is for sm_100, the first for sm_90"):
        disassemble_many([good, other])
    assert disassemble_many([]) == []


@pytest.mark.parametrize("decl", [".param .align 0 .b8 p[16]", ".param .align q .b8 p[16]", ".param .align 3 .b8 p[16]",
                                  ".param .b8 .align p[16]"])
def test_a_parameter_whose_align_is_not_a_power_of_two_is_one_line(decl: str) -> None:
    # Issue #12: `.align 0` divided by zero, `.align q` raised a bare ValueError.
    from regsurvey.lint import LintInputError

    with pytest.raises(LintInputError, match=r"has no power-of-two \.align$"):
        ptx_params(f".visible .entry k(\n\t{decl},\n\t.param .u32 n\n)\n{{\n}}\n")


def test_a_struct_parameter_takes_its_own_align() -> None:
    # A byte array with `.align 16` (how PTX passes a struct by value) starts at the next 16-byte boundary.
    ptx = ".visible .entry k(\n\t.param .u32 n,\n\t.param .align 16 .b8 s[32],\n\t.param .u64 p\n)\n{\n}\n"
    _, params = ptx_params(ptx)
    assert [(p.name, p.offset, p.size) for p in params] == [("n", 0, 4), ("s", 16, 32), ("p", 48, 8)]


def test_parameters_of_any_names_are_found_where_the_ptx_reads_them() -> None:
    from regsurvey.lint.nvidia import _ptx_reads

    # Names with no common prefix (not Triton's): every line is searched; a name inside another name, or
    # in a comment, is no mention.
    ptx = (".visible .entry k(\n\t.param .u64 p,\n\t.param .u32 n\n)\n{\n\tld.param.u32 \t%r1, [n];\n"
           "\tmov.b64 \t%rd2, p; // n\n\tadd.s32 \t%r3, %r1, pn;\n\tret;\n}\n")
    _, params = ptx_params(ptx)
    loads, escaped = _ptx_reads(ptx, params)
    assert loads == {1: ("ld.param.u32 %r1, [n];", 6)} and escaped == {0}


def _read_elsewhere(cubin: bytes, offset: int) -> bytes:
    """The cubin with every instruction that reads constant bank 0 at ``offset`` (a form the table knows)
    made to read 4 bytes in instead (the bank's header, no parameter): as a miscompile that loses a
    parameter's read."""
    import io

    from elftools.elf.elffile import ELFFile

    from regsurvey.objects.sass_words import FORM_MASK, forms

    const, _ = forms(int(ck_arch(cubin)))  # type: ignore[misc]
    out = bytearray(cubin)
    changed = 0
    for section in ELFFile(io.BytesIO(cubin)).iter_sections():
        if not section.name.startswith(".text."):
            continue
        start = section["sh_offset"]
        for at in range(start, start + section["sh_size"] - 15, 16):
            low = int.from_bytes(out[at:at + 8], "little")
            if low & FORM_MASK not in const or (low >> 54) & 0x1F:
                continue
            bit = const[low & FORM_MASK][0]
            field = ((1 << (54 - bit)) - 1) << bit
            if (low & field) >> bit == offset:
                out[at:at + 8] = (low & ~field | 4 << bit).to_bytes(8, "little")
                changed += 1
    assert changed
    return bytes(out)


def ck_arch(cubin: bytes) -> int:
    from regsurvey.objects.nvidia_object import instruction_words

    return instruction_words(cubin)[0]


@pytest.mark.parametrize("case", CASES)
def test_reads_decoded_from_the_words_are_reads_nvdisasm_prints(case: str) -> None:
    """Issue 37, item 3: the lint reads a cubin's instruction words before disassembling it. Each read it
    decodes there (form, bank, offset, width: objects/sass_forms.json) is one nvdisasm prints, no wider; a
    kernel whose every loaded parameter such a read covers is clean, as the full lint says."""
    from regsurvey.lint.nvidia import read_in_words
    from regsurvey.objects.sass_words import bank_zero_reads

    ck, names = compiled(case)
    cubin, ptx = ck.asm["cubin"], ck.asm["ptx"]
    printed, _ = sass_bank_reads(disassemble(cubin))
    decoded = bank_zero_reads(cubin)
    if decoded is None:  # a form the table does not know: the lint disassembles the cubin
        assert not read_in_words(ptx, cubin, appended_args=APPENDED)
        return
    assert all(any(s == start and end <= e for s, e in printed) for start, end in decoded)
    assert read_in_words(ptx, cubin, appended_args=APPENDED)  # clean kernels: no disassembly needed


def test_the_table_covers_the_kernels_it_was_learned_on() -> None:
    from regsurvey.objects.sass_words import bank_zero_reads

    assert all(bank_zero_reads(compiled(case)[0].asm["cubin"]) is not None
               for case in ("add-sm90", "many-sm90", "matmul-sm90", "add-sm100", "matmul-sm100"))


@pytest.mark.parametrize("case", ["add-sm90", "many-sm90", "add-sm100"])
def test_a_parameter_read_lost_in_the_cubin_is_found_by_the_full_lint(case: str) -> None:
    """A cubin whose instruction reading ``out_ptr`` reads another offset instead (bits changed in the
    object): no decoded read covers the parameter, so the lint disassembles the cubin and reports it, as
    it did before the words were read."""
    from regsurvey.lint.nvidia import read_in_words

    ck, names = compiled(case)
    base = param_bank_base(ck.metadata.target.arch)
    lost = _read_elsewhere(ck.asm["cubin"], base + 16)
    ptx = ck.asm["ptx"]
    assert not read_in_words(ptx, lost, appended_args=APPENDED)
    found = lint_nvidia(ptx, lost, arg_names=names, appended_args=APPENDED)
    assert [(f.arg_index, f.arg_name) for f in found] == [(2, names[2])]  # add_kernel's out_ptr
    assert found == lint_ptx_sass(ptx, disassemble(lost), arg_names=names, appended_args=APPENDED,
                                  bank=param_bank(lost))
