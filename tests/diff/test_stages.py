"""The texts' normalizers and the first stage whose normalized texts differ (regsurvey/diff/stages.py): on
excerpts of real IR, then on whole texts of real builds (tests/fixtures/stages: Triton 3.6.0 against 3.9.0,
fp fusion on and off, a kernel moved three lines down)."""

from __future__ import annotations

import pytest

from regsurvey.diff.stages import (
    NORMALIZERS,
    fingerprint,
    first_text_difference,
    normalize_amdgcn,
    normalize_llir,
    normalize_mlir,
    normalize_ptx,
)
from regsurvey.model.stages import TEXT_STAGES, Stage

from ..stage_cases import StageCase, kept_texts, stage_cases

# ---- MLIR: the toy scale_rows kernel's TTIR for sm90, as Triton 3.9.0 printed it, and three lines lower ---

TTIR = "\n".join([
    '#loc = loc("/tmp/tmpjqa4bl9e/toy/toykernels/ops.py":9:1)',
    '#loc11 = loc("x_ptr"(#loc))',
    '#loc12 = loc("n_cols"(#loc))',
    'module {',
    '  tt.func public @scale_rows(%x_ptr: !tt.ptr<bf16> {tt.divisibility = 16 : i32} '
    'loc("x_ptr"(#loc)), %n_cols: i32 {tt.divisibility = 16 : i32} loc("n_cols"(#loc))) attributes '
    '{noinline = false} {',
    '    %x = arith.constant dense<0.000000e+00> : tensor<4096xbf16> loc(#loc16)',
    '    %row = tt.get_program_id x : i32 loc(#loc17)',
    '    %offs = tt.make_range {end = 4096 : i32, start = 0 : i32} : tensor<4096xi32> loc(#loc18)',
    '    %mask = tt.splat %n_cols : i32 -> tensor<4096xi32> loc(#loc19)',
    '    %mask_0 = arith.cmpi slt, %offs, %mask : tensor<4096xi32> loc(#loc19)',
    '    tt.return loc(#loc)',
    '  } loc(#loc)',
    '} loc(#loc)',
    '#loc1 = loc("/tmp/tmpjqa4bl9e/toy/toykernels/ops.py":13:9)',
    '#loc16 = loc("x"(#loc1))',
    '#loc17 = loc("row"(#loc2))',
    '',
])
MOVED = TTIR.replace("toy/toykernels", "toy-moved/toykernels").replace(":9:1)", ":12:1)").replace(":13:9)", ":16:9)")


def test_mlir_without_locations_and_value_names() -> None:
    text = normalize_mlir(TTIR)
    assert "loc" not in text.replace("tt.make_range", "")
    assert "ops.py" not in text and "%x_ptr" not in text and "%mask_0" not in text
    assert text.splitlines()[1] == ("  tt.func public @scale_rows(%v0: !tt.ptr<bf16> {tt.divisibility = 16 : i32}, "
                                    "%v1: i32 {tt.divisibility = 16 : i32}) attributes {noinline = false} {")
    assert "    %v5 = arith.cmpi slt, %v3, %v4 : tensor<4096xi32>" in text.splitlines()
    assert "arith.constant" not in text  # the constant (unused here) is written out where it is used


def test_mlir_moved_or_renamed_is_the_same_and_a_code_change_is_not() -> None:
    assert normalize_mlir(MOVED) == normalize_mlir(TTIR) != normalize_mlir(MOVED.replace("cmpi slt", "cmpi sle"))
    # A Python variable renamed: MLIR names the values after it, and the locations say it; the code is the same.
    renamed = TTIR.replace("%mask", "%in_bounds").replace('loc("x"', 'loc("vals"')
    assert normalize_mlir(renamed) == normalize_mlir(TTIR)


def test_mlir_locations_of_every_form() -> None:
    # A call site's location nests others; a file's name may hold parentheses; a string is not a location.
    line = ('    %0 = tt.load %1 {note = "keep loc(this)"} : tensor<16xf32> '
            'loc(callsite(#loc1 at loc("/src/a (copy).py":3:4)))')
    assert normalize_mlir(line) == '    %v0 = tt.load %v1 {note = "keep loc(this)"} : tensor<16xf32>\n'


# ---- MLIR: what only the printer chose, and the spellings Triton 3.6.0 and 3.9.0 print differently ----------
# Lines of the demo's gfx942 kv_write/bf16/nostop TTGIR as each release printed them (locations set aside).

TTGIR_36 = "\n".join([
    '#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [64], warpsPerCTA = [2], order = [0]}>',
    '#blocked1 = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [64], warpsPerCTA = [2], order = [0]}>',
    'module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 2 : i32, ttg.target = "hip:gfx942", '
    '"ttg.threads-per-warp" = 64 : i32} {',
    '  tt.func public @kv_write(%kv_a_ptr: !tt.ptr<bf16>, %cache_ptr: !tt.ptr<bf16>) attributes {noinline = false} {',
    '    %c576_i32 = arith.constant 576 : i32',
    '    %c512_i32 = arith.constant 512 : i32',
    '    %pid = tt.get_program_id x : i32',
    '    %row = arith.muli %pid, %c576_i32 : i32',
    '    %d = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #blocked>',
    '    %lat_3 = amdg.buffer_load %kv_a_ptr[%d] : tensor<512xbf16, #blocked>',
    '    %x1 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #blocked1>',
    '    %x1_17 = amdg.buffer_load %kv_a_ptr[%x1] : tensor<32xbf16, #blocked1>',
    '    gpu.barrier',
    '    amdg.buffer_store %lat_3, %cache_ptr[%d] : tensor<512xbf16, #blocked>',
    '    tt.return',
    '  }',
    '}',
])
# 3.9: the constants in another order, the aliases numbered otherwise, ``ttg.barrier all``, buffer operations
# naming their pointer's type and carrying contiguity hints.
TTGIR_39 = "\n".join([
    '#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [64], warpsPerCTA = [2], order = [0]}>',
    '#blocked1 = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [64], warpsPerCTA = [2], order = [0]}>',
    'module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 2 : i32, ttg.target = "hip:gfx942", '
    '"ttg.threads-per-warp" = 64 : i32} {',
    '  tt.func public @kv_write(%kv_a_ptr: !tt.ptr<bf16>, %cache_ptr: !tt.ptr<bf16>) attributes {noinline = false} {',
    '    %c512_i32 = arith.constant 512 : i32',
    '    %c576_i32 = arith.constant 576 : i32',
    '    %pid = tt.get_program_id x : i32',
    '    %row = arith.muli %pid, %c576_i32 : i32',
    '    %d = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #blocked1>',
    '    %lat_3 = amdg.buffer_load %kv_a_ptr[%d] {contiguity = 4 : i32} : !tt.ptr<bf16> -> tensor<512xbf16, #blocked1>',
    '    %x1 = tt.make_range {end = 32 : i32, start = 0 : i32} : tensor<32xi32, #blocked>',
    '    %x1_17 = amdg.buffer_load %kv_a_ptr[%x1] : !tt.ptr<bf16> -> tensor<32xbf16, #blocked>',
    '    ttg.barrier all',
    '    amdg.buffer_store %lat_3, %cache_ptr[%d] {contiguity = 4 : i32} : !tt.ptr<bf16> -> '
    'tensor<512xbf16, #blocked1>',
    '    tt.return',
    '  }',
    '}',
])


def test_mlir_printer_choices_and_release_spellings_are_set_aside() -> None:
    assert normalize_mlir(TTGIR_36) != normalize_mlir(TTGIR_39)  # the hints: compared by the fingerprints
    old, new = fingerprint(Stage.TTGIR, TTGIR_36), fingerprint(Stage.TTGIR, TTGIR_39)
    assert not old.hinted and new.hinted and old.same(new) and new.same(old)
    text = normalize_mlir(TTGIR_36)
    assert "#blocked" not in text and "arith.constant" not in text and "gpu.barrier" not in text
    assert "%v3 = arith.muli %v2, const(576 : i32) : i32" in text and "ttg.barrier all" in text


def test_mlir_code_changes_still_differ() -> None:
    old = fingerprint(Stage.TTGIR, TTGIR_36)
    for change in (("arith.constant 576", "arith.constant 640"),  # a constant's value
                   ("sizePerThread = [4]", "sizePerThread = [8]"),  # a layout
                   ("%row = arith.muli %pid", "%row = arith.addi %pid"),  # an operation
                   ("gpu.barrier", "amdg.sched_barrier")):
        assert not old.same(fingerprint(Stage.TTGIR, TTGIR_36.replace(*change))), change
    # Two texts that both print contiguity hints compare them.
    new = fingerprint(Stage.TTGIR, TTGIR_39)
    assert not new.same(fingerprint(Stage.TTGIR, TTGIR_39.replace("contiguity = 4", "contiguity = 2", 1)))


def test_constants_are_a_functions_own() -> None:
    two = "\n".join([
        "  tt.func private @f() {", "    %c = arith.constant 1 : i32", "    %x = arith.addi %c, %c : i32", "  }",
        "  tt.func public @g() {", "    %c = arith.constant 2 : i32", "    %x = arith.addi %c, %c : i32", "  }"])
    lines = normalize_mlir(two).splitlines()
    assert lines[1].strip().endswith("arith.addi const(1 : i32), const(1 : i32) : i32")
    assert lines[4].strip().endswith("arith.addi const(2 : i32), const(2 : i32) : i32")


def test_cache_policy_and_module_defaults_in_either_spelling() -> None:
    # Triton 3.6 wrote the cache modifier and eviction policy before the attributes; 3.9 writes one attribute.
    pairs = [
        ("%x = tt.load %p evictionPolicy = evict_last : tensor<128x!tt.ptr<f16>>",
         "%x = tt.load %p {cachePolicy = #tt.cache_policy<cache_modifier = none, eviction_policy = evict_last>} "
         ": tensor<128x!tt.ptr<f16>>"),
        ("%x = tt.load %p, %m, %o cacheModifier = cg : tensor<128x!tt.ptr<f16>>",
         "%x = tt.load %p, %m, %o {cachePolicy = #tt.cache_policy<cache_modifier = cg, eviction_policy = "
         "evict_normal>} : tensor<128x!tt.ptr<f16>>"),
        ("%t = ttg.async_copy_global_to_local %p, %s mask %m evictionPolicy = evict_first {contiguity = 4 : i32} "
         ": tensor<128x128x!tt.ptr<i32>> -> <128x128xi32, #shared, #smem, mutable>",
         "%t = ttg.async_copy_global_to_local %p, %s mask %m {cachePolicy = #tt.cache_policy<cache_modifier = "
         "none, eviction_policy = evict_first>, contiguity = 4 : i32} : tensor<128x128x!tt.ptr<i32>> -> "
         "<128x128xi32, #shared, #smem, mutable>"),
        ('module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {',
         'module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", '
         '"ttng.two-ctas" = false} {'),
    ]
    for old, new in pairs:
        assert normalize_mlir(old) == normalize_mlir(new), old
    assert normalize_mlir(pairs[0][0]) != normalize_mlir(pairs[0][0].replace("evict_last", "evict_first"))
    assert normalize_mlir(pairs[3][0]) != normalize_mlir(pairs[3][1].replace("= false", "= true"))


# ---- LLVM IR: the same kernel's LLIR (excerpts) -----------------------------------------------------------

LLIR = "\n".join([
    "; ModuleID = 'LLVMDialectModule'",
    'source_filename = "LLVMDialectModule"',
    '',
    '; Function Attrs: nounwind',
    'define ptx_kernel void @scale_rows(ptr addrspace(1) %0, i32 %2) local_unnamed_addr #0 !dbg !4 {',
    '  %8 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x(), !dbg !11',
    '  %10 = shl nuw nsw i32 %9, 3, !dbg !12',
    '  %20 = load i32, ptr addrspace(1) %0, align 4, !dbg !13, !amdgpu.noclobber !22',
    '    #dbg_value(i32 %10, !23, !DIExpression(), !12)',
    '  ret void, !dbg !21',
    '}',
    '',
    '!llvm.dbg.cu = !{!0}',
    '!llvm.module.flags = !{!2, !3}',
    '',
    '!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !1, producer: "triton", isOptimized: '
    'true, runtimeVersion: 0, emissionKind: LineTablesOnly)',
    '!1 = !DIFile(filename: "ops.py", directory: "/tmp/tmpjqa4bl9e/toy/toykernels")',
    '!2 = !{i32 2, !"Debug Info Version", i32 3}',
    '!3 = !{i32 4, !"nvvm-reflect-ftz", i32 1}',
    '!4 = distinct !DISubprogram(name: "scale_rows", linkageName: "scale_rows", scope: !1, file: '
    '!1, line: 9, type: !5, scopeLine: 9, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)',
    '!5 = !DISubroutineType(cc: DW_CC_normal, types: !6)',
    '!6 = !{null, !7}',
    '!7 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)',
    '!11 = !DILocation(line: 10, column: 11, scope: !4)',
    '!12 = !DILocation(line: 11, column: 12, scope: !4)',
    '!13 = !DILocation(line: 12, column: 12, scope: !4)',
    '!21 = !DILocation(line: 9, column: 1, scope: !4)',
    '!22 = !{}',
    '!23 = !DILocalVariable(name: "x", scope: !4, file: !1, line: 13, type: !7)',
    '',
])


def test_llvm_ir_without_debug_information() -> None:
    assert normalize_llir(LLIR).splitlines() == [
        "define ptx_kernel void @scale_rows(ptr addrspace(1) %0, i32 %2) local_unnamed_addr #0 {",
        "  %8 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()",
        "  %10 = shl nuw nsw i32 %9, 3",
        # The metadata the code uses is kept, numbered by first use; the module flags keep theirs.
        "  %20 = load i32, ptr addrspace(1) %0, align 4, !amdgpu.noclobber !0",
        "  ret void",
        "}",
        "!llvm.module.flags = !{!1, !2}",
        "!0 = !{}",
        '!1 = !{i32 2, !"Debug Info Version", i32 3}',
        '!2 = !{i32 4, !"nvvm-reflect-ftz", i32 1}',
    ]


def test_llvm_ir_debug_nodes_pushing_others_along_compare_equal() -> None:
    # One more location node before the code's own metadata: its number moves, the code does not.
    more = LLIR.replace("!22 = !{}", "!22 = !DILocation(line: 14, column: 3, scope: !4)\n!24 = !{}")
    more = more.replace("!amdgpu.noclobber !22", "!amdgpu.noclobber !24")
    assert normalize_llir(more) == normalize_llir(LLIR)
    assert normalize_llir(LLIR.replace("shl nuw nsw i32 %9, 3", "shl nuw nsw i32 %9, 4")) != normalize_llir(LLIR)


# ---- AMDGCN: the same kernel's for gfx942 (excerpts) -----------------------------------------------------

AMDGCN = '''\t.amdgcn_target "amdgcn-amd-amdhsa--gfx942"
\t.text
scale_rows:                             ; @scale_rows
.Lfunc_begin0:
\t.cfi_sections .debug_frame
\t.cfi_startproc
; %bb.1:
\t.file\t1 "/tmp/tmpjqa4bl9e/toy/toykernels" "ops.py"
\t.loc\t1 9 0 prologue_end              ; ops.py:9:0
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
.Ltmp0:
\t.loc\t1 13 17                         ; ops.py:13:17
\tv_lshlrev_b32_e32 v0, 3, v0           ; 4-byte Folded Spill
\ts_endpgm
.Ltmp1:
\t.cfi_endproc
; NumVgprs: 29
\t.section\t.AMDGPU.csdata,"",@progbits
; ScratchSize: 0
\t.section\t.debug_abbrev,"",@progbits
\t.byte\t1                               ; Abbreviation Code
\t.section\t.debug_str,"MS",@progbits,1
.Linfo_string2:
\t.asciz\t"/tmp/tmpjqa4bl9e/toy/toykernels" ; string offset=14
\t.section\t".note.GNU-stack","",@progbits
\t.amdgpu_metadata
amdhsa.kernels:
  - .vgpr_count:     29
\t.end_amdgpu_metadata
\t.section\t.debug_line,"",@progbits
.Lline_table_start0:
'''


def test_amdgcn_without_locations_labels_cfi_and_debug_sections() -> None:
    assert normalize_amdgcn(AMDGCN).splitlines() == [
        '\t.amdgcn_target "amdgcn-amd-amdhsa--gfx942"', "\t.text",
        "scale_rows:                             ; @scale_rows", ".Lfunc_begin0:", "; %bb.1:",
        "\ts_load_dwordx2 s[2:3], s[0:1], 0x0",
        "\tv_lshlrev_b32_e32 v0, 3, v0           ; 4-byte Folded Spill", "\ts_endpgm", "; NumVgprs: 29",
        '\t.section\t.AMDGPU.csdata,"",@progbits', "; ScratchSize: 0", '\t.section\t".note.GNU-stack","",@progbits',
        "\t.amdgpu_metadata", "amdhsa.kernels:", "  - .vgpr_count:     29", "\t.end_amdgpu_metadata"]


# ---- PTX: the same kernel's for sm90 (excerpts; an inlined call's location and an fma from the demo's MoE) --

PTX = '''\t// .globl\tscale_rows
.visible .entry scale_rows(
\t.param .u64 .ptr .global .align 1 scale_rows_param_0
)
{
$L__tmp0:
\t.loc\t1 10 11                         // ops.py:10:11
\tmov.u32 \t%r33, %ctaid.x;
\t.loc\t2 16 34                         // masks.py:16:34 @[ moe.py:142:52 ]
\tfma.rn.f32 \t%r41, %r29, %r29, %r38;
\tret;
$L__tmp1:
$L__func_end0:
}
\t.file\t1 "/tmp/tmpjqa4bl9e/toy/toykernels/ops.py"
\t.section\t.debug_abbrev
\t{
.b8 1                                   // Abbreviation Code
.b64 $L__tmp0                           // DW_AT_low_pc
\t}
\t.section\t.debug_macinfo\t{\t}
'''


def test_ptx_without_locations_labels_and_debug_sections() -> None:
    assert normalize_ptx(PTX).splitlines() == [
        "\t// .globl\tscale_rows", ".visible .entry scale_rows(",
        "\t.param .u64 .ptr .global .align 1 scale_rows_param_0", ")", "{",
        "\tmov.u32 \t%r33, %ctaid.x;", "\tfma.rn.f32 \t%r41, %r29, %r29, %r38;", "\tret;", "$L__func_end0:",
        "}"]


# ---- whole texts of real builds --------------------------------------------------------------------------


@pytest.mark.parametrize("case", stage_cases(), ids=lambda c: c.name)
def test_the_first_stage_whose_texts_differ(case: StageCase) -> None:
    """Once normalized, the texts of the stages before a case's answer agree and its own (a text stage's)
    differs; a case answered by the objects has every text alike."""
    before, after = kept_texts(case.before), kept_texts(case.after)
    expected = case.stage if case.stage in TEXT_STAGES else None
    assert first_text_difference(before, after) is expected
    for stage in TEXT_STAGES[:TEXT_STAGES.index(case.stage) if case.stage in TEXT_STAGES else None]:
        if stage in before:
            assert fingerprint(stage, before[stage]).same(fingerprint(stage, after[stage])), stage


@pytest.mark.parametrize("case", [c for c in stage_cases() if c.stage is Stage.LOCATIONS], ids=lambda c: c.name)
def test_a_kernel_moved_down_differs_only_in_locations(case: StageCase) -> None:
    """Three comment lines above the kernel: every raw text names the other lines (and the copy's path),
    and no normalized one keeps a path, a file name or a line."""
    before, after = kept_texts(case.before), kept_texts(case.after)
    for stage, text in before.items():
        assert text != after[stage], stage
        assert fingerprint(stage, text) == fingerprint(stage, after[stage]), stage
        assert "ops.py" not in NORMALIZERS[stage](text) and "/tmp/" not in NORMALIZERS[stage](text), stage


def test_stages_both_sides_hold_are_compared() -> None:
    assert first_text_difference({Stage.TTIR: TTIR}, {Stage.TTIR: MOVED, Stage.TTGIR: "x"}) is None
    assert first_text_difference({Stage.TTIR: TTIR, Stage.LLIR: LLIR},
                                 {Stage.TTIR: MOVED, Stage.LLIR: LLIR.replace("i32 %9, 3", "i32 %9, 4")}) is Stage.LLIR
