"""The lint's AMDGCN parser: registers, operands, functions, blocks and the CFG, directives and metadata.

Small hand-written pieces pin the syntax; the committed fixtures (real Triton compiles, see
tests/fixtures/lint/regenerate.py) check that Triton's text and llvm-objdump's disassembly of the same
code give the same CFG and that the text's layout matches the object's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from regsurvey.lint.disassembler import disassemble, find_objdump
from regsurvey.lint.kernarg import args_from_metadata, layout_from_directives, layout_from_hsaco
from regsurvey.objects import amdgcn
from regsurvey.objects.amd_object import parse_hsaco
from regsurvey.objects.amdgcn import Register, parse_functions, parse_instruction, parse_registers

FIXTURES = Path(__file__).parent.parent / "fixtures" / "lint"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
needs_objdump = pytest.mark.skipif(find_objdump() is None, reason="no llvm-objdump of LLVM >= 20 installed")


@pytest.mark.parametrize(("text", "expected"), [
    ("s5", [Register("s", 5)]),
    ("s[36:43]", [Register("s", 36, 8)]),
    ("v[0:3]", [Register("v", 0, 4)]),
    ("a[0:15]", [Register("a", 0, 16)]),
    ("ttmp[4:5]", [Register("ttmp", 4, 2)]),
    ("vcc", [Register("vcc", 0, 2)]),
    ("vcc_hi", [Register("vcc", 1, 1)]),
    ("exec_lo", [Register("exec", 0, 1)]),
    ("m0", [Register("m0", 0)]),
    ("-|v[2:3]|", [Register("v", 2, 2)]),
    ("abs(v7)", [Register("v", 7)]),
    ("0x100", []),
    ("off", []),
    (".LBB0_3", []),
    ("(.LBB0_5-.Lpost_getpc0)&4294967295", []),
])
def test_registers(text: str, expected: list[Register]) -> None:
    assert list(parse_registers(text)) == expected


def test_register_units_and_names() -> None:
    assert Register("s", 36, 4).units() == (("s", 36), ("s", 37), ("s", 38), ("s", 39))
    assert Register("vcc", 0, 2).units() == (("vcc", 0), ("vcc", 1))
    assert [str(r) for r in parse_registers("s[4:5]")] + [str(Register("vcc", 1, 1))] == ["s[4:5]", "vcc_hi"]
    with pytest.raises(ValueError, match="backwards"):
        parse_registers("s[5:4]")


def test_operands_and_modifiers() -> None:
    load = parse_instruction("buffer_load_dword v37, v3, s[4:7], 0 offen offset:1024", 7)
    assert load is not None and load.line == 7
    assert load.mnemonic == "buffer_load_dword"
    assert [op.text for op in load.operands] == ["v37", "v3", "s[4:7]", "0"]
    assert load.modifiers == ("offen", "offset:1024")
    assert load.modifier("offset") == "1024" and load.modifier("offen") == "" and load.modifier("glc") is None
    packed = parse_instruction("v_pk_mul_f32 v[4:5], v[4:5], s[0:1] op_sel_hi:[1,0]")
    assert packed is not None and [op.text for op in packed.operands] == ["v[4:5]", "v[4:5]", "s[0:1]"]
    assert packed.modifier("op_sel_hi") == "[1,0]"
    spill = parse_instruction("scratch_store_dword off, v53, off offset:12")
    assert spill is not None and [op.text for op in spill.operands] == ["off", "v53", "off"]
    wait = parse_instruction("s_waitcnt vmcnt(0) lgkmcnt(0)")
    assert wait is not None and wait.operands[0].registers == ()
    getreg = parse_instruction("s_getreg_b32 s0, hwreg(HW_REG_MODE, 0, 4)")
    assert getreg is not None and [op.text for op in getreg.operands] == ["s0", "hwreg(HW_REG_MODE, 0, 4)"]
    assert parse_instruction(".p2align 8") is None


# A kernel with a loop, a conditional exit and a long branch, as LLVM prints them.
TEXT = """\
\t.text
\t.globl\tk
\t.p2align\t8
\t.type\tk,@function
k:
.Lfunc_begin0:
\ts_load_dword s2, s[0:1], 0x0      ; the only block-0 load
\ts_waitcnt lgkmcnt(0)
.Ltmp0:
\ts_cmp_eq_u32 s2, 0
\ts_cbranch_scc1 .LBB0_3
\t.p2align\t6
.LBB0_1:                            ; =>This Inner Loop Header: Depth=1
\ts_add_i32 s2, s2, -1
\ts_cmp_lg_u32 s2, 0
\ts_cbranch_scc1 .LBB0_1
; %bb.2:
\ts_getpc_b64 s[4:5]
.Lpost_getpc0:
\ts_add_u32 s4, s4, (.LBB0_4-.Lpost_getpc0)&4294967295
\ts_addc_u32 s5, s5, (.LBB0_4-.Lpost_getpc0)>>32
\ts_setpc_b64 s[4:5]
.LBB0_3:
\ts_endpgm
.LBB0_4:
\ts_mov_b32 s3, s2
\ts_endpgm
.Lfunc_end0:
\t.size\tk, .Lfunc_end0-k
"""


def test_blocks_and_cfg() -> None:
    (function,) = parse_functions(TEXT)
    assert function.name == "k" and function.unresolved_jumps == 0
    labels = [b.labels for b in function.blocks]
    # .Ltmp0 and .Lpost_getpc0 split nothing: only labels something refers to start blocks.
    assert labels == [(), (".LBB0_1",), (), (".LBB0_3",), (".LBB0_4",)]
    assert [b.successors for b in function.blocks] == [[3, 1], [1, 2], [4], [], []]
    assert function.blocks[1].aligned == 6
    assert [i.line for i in function.blocks[0].instructions] == [7, 8, 10, 11]
    assert function.blocks[0].instructions[-1].target == ".LBB0_3"
    assert amdgcn.reachable(function, 0) == {0, 1, 2, 3, 4}
    assert amdgcn.reachable(function, 3) == {3}


def test_unknown_branch_target_is_an_edge_to_every_block() -> None:
    text = TEXT.replace("s_cbranch_scc1 .LBB0_3", "s_cbranch_scc1 .Lelsewhere")
    (function,) = parse_functions(text)
    assert function.unresolved_jumps == 1
    assert function.blocks[0].successors == [b.index for b in function.blocks]


def test_objdump_branches_and_long_branch() -> None:
    # The same shape as llvm-objdump prints it: targets are addresses, the long branch is numeric.
    dump = """
k.co:\tfile format elf64-amdgpu

Disassembly of section .text:

0000000000001000 <k>:
\ts_cmp_eq_u32 s2, 0                                         // 000000001000: BF068002
\ts_cbranch_scc1 5                                           // 000000001004: BF850005 <k+0x1c>
\ts_getpc_b64 s[4:5]                                         // 000000001008: BE841C00
\ts_add_u32 s4, s4, 16                                       // 00000000100C: 80049004
\ts_addc_u32 s5, s5, 0                                       // 000000001010: 82058005
\ts_setpc_b64 s[4:5]                                         // 000000001014: BE801D04
\ts_endpgm                                                   // 000000001018: BF810000
\ts_endpgm                                                   // 00000000101C: BF810000
\ts_mov_b32 s3, s2                                           // 000000001020: BE830002
\ts_endpgm                                                   // 000000001024: BF810000
"""
    (function,) = parse_functions(dump)
    assert [i.address for i in function.instructions][:3] == [0, 4, 8]
    by_start = {b.instructions[0].address: b for b in function.blocks}
    assert by_start[0].successors == [by_start[0x1c].index, by_start[8].index]
    # s_getpc_b64 at 0x8 reads the address of the next instruction, 0xc; plus 16 is 0x1c.
    assert by_start[8].successors == [by_start[0x1c].index]
    assert function.unresolved_jumps == 0


@pytest.mark.parametrize("name", list(MANIFEST["bases"]))
def test_text_layout_matches_the_object(name: str) -> None:
    entry = MANIFEST["bases"][name]
    text = (FIXTURES / entry["amdgcn"]).read_text()
    kernel = parse_hsaco((FIXTURES / entry["hsaco"]).read_bytes()).kernels[0]
    meta = amdgcn.metadata(text)
    assert meta is not None and meta["amdhsa.target"].endswith(entry["target"])
    (listed,) = [k for k in meta["amdhsa.kernels"] if k[".name"] == entry["kernel"]]
    assert args_from_metadata(listed) == kernel.args
    directives = amdgcn.amdhsa_directives(text)[entry["kernel"]]
    assert layout_from_directives(directives, kernel.args) == layout_from_hsaco(kernel)
    assert amdgcn.amdgcn_target(text) is not None


def test_async_copy_pipeline_moves_the_kernarg_pointer() -> None:
    kernel = parse_hsaco((FIXTURES / "matmul-gfx950.hsaco").read_bytes()).kernels[0]
    layout = layout_from_hsaco(kernel)
    # dispatch ptr and queue ptr come first: s[4:5]; 8 preloaded dwords after the dispatch id.
    assert (layout.kernarg_ptr_sgpr, layout.preload_sgpr, layout.preload_length) == (4, 8, 8)


def cfg_shape(function: amdgcn.Function) -> list[tuple[list[str], list[int]]]:
    """Mnemonics and successors of the reachable blocks, in order: the disassembly also shows the s_nop padding
    before the 256-byte aligned entry and after s_endpgm, which nothing reaches."""
    live = amdgcn.reachable(function, 0)
    order = sorted(live)
    index = {b: n for n, b in enumerate(order)}
    return [([i.mnemonic for i in function.blocks[b].instructions if i.mnemonic != "s_nop"],
             [index[s] for s in function.blocks[b].successors]) for b in order]


@needs_objdump
@pytest.mark.parametrize("name", list(MANIFEST["bases"]))
def test_text_and_disassembly_give_the_same_cfg(name: str) -> None:
    entry = MANIFEST["bases"][name]
    (text_fn,) = parse_functions((FIXTURES / entry["amdgcn"]).read_text())
    (dump_fn,) = parse_functions(disassemble((FIXTURES / entry["hsaco"]).read_bytes()))
    assert cfg_shape(text_fn) == cfg_shape(dump_fn)
