"""What an AMDGCN instruction reads and writes: the registers of its operands, split into definitions
and uses. Shared by the kernarg lint (which follows values through registers) and the register
pressure analysis (which follows liveness).

The rules are those of LLVM's AMDGPU instruction syntax: the first operand is the destination except
for stores, compares into SCC, branches and the other instructions listed in ``NO_DEF_PREFIXES``; VOP3b
instructions with a carry-out write their first two operands; read-modify-write SALU reads its
destination too, and so do the VALU that accumulate into it (``v_fmac_f32``, ``v_dot2c_*``) or keep its
other lanes (``v_permlane16_b32``); packed math (VOP3P) reads only the dwords ``op_sel`` picks of a 64-bit
source.

RDNA and gfx1250 (wave32): a VOPD pair (``v_dual_X ... :: v_dual_Y ...``) writes both destinations and
reads both halves' sources (``v_dual_cndmask_b32`` reads VCC without naming it); ``v_cmpx_*`` has no
destination operand from gfx10 on (it writes EXEC only: ``v_cmpx_gt_i32_e32 s2, v0`` reads ``s2``); the
registers read without being named (VCC by ``s_cbranch_vccz``, ``v_div_fmas_*``) are ``vcc_lo`` alone in
wave32 code (``wave32=True``), where ``vcc_hi`` is an SGPR of its own.
"""

from __future__ import annotations

import re

from .amdgcn import Instruction, Register

# Instructions whose first operand is read, not written.
NO_DEF_PREFIXES = (
    "s_cmp", "s_bitcmp", "s_cbranch", "s_branch", "s_setpc", "s_waitcnt", "s_nop", "s_barrier", "s_endpgm",
    "s_sendmsg", "s_setprio", "s_sleep", "s_trap", "s_dcache", "s_icache", "s_set_gpr_idx", "s_ttracedata",
    "s_rfe", "s_store", "s_buffer_store", "s_scratch_store", "s_atomic", "s_buffer_atomic", "s_wakeup",
    "s_sethalt", "s_incperflevel", "s_decperflevel", "s_denorm_mode", "s_round_mode", "s_setkill",
    "s_code_end", "s_setreg", "s_clause", "s_delay_alu", "s_wait", "s_cbranch_join",
    # gfx11+/gfx12: VGPR-MSB mode, prefetches, gfx1250's tensor DMA (descriptors in, LDS out) and the other
    # instructions of no destination.
    "s_set_vgpr_msb", "s_prefetch", "s_singleuse_vdst", "s_version", "s_alloc_vgpr", "tensor_",
)
# Read-modify-write SALU: the first operand is read and written.
SCALAR_RMW = ("s_addk_i32", "s_mulk_i32", "s_bitset0_b32", "s_bitset0_b64", "s_bitset1_b32", "s_bitset1_b64",
              "s_bitreplicate")
# VALU with a carry-out or second result as the second operand (VOP3b): both first operands are written.
TWO_DEFS = ("v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_addc_co_u32", "v_subb_co_u32",
            "v_subbrev_co_u32", "v_div_scale_f32", "v_div_scale_f64", "v_mad_u64_u32", "v_mad_i64_i32",
            "v_add_co_ci_u32", "v_sub_co_ci_u32", "v_subrev_co_ci_u32", "v_mad_co_u64_u32", "v_mad_co_i64_i32")
# Branches and VALU that read vcc without naming it (VOPD's cndmask: VCC_LO, VOPD being wave32 only).
READS_VCC = ("s_cbranch_vccz", "s_cbranch_vccnz", "v_div_fmas_f32", "v_div_fmas_f64", "v_dual_cndmask_b32")
# Swaps: both operands are read and written.
SWAPS = ("v_swap_b32", "v_swap_b16", "v_swaprel_b32", "v_permlane16_swap_b32", "v_permlane32_swap_b32")
# VALU that read their destination: accumulating into it (MAC, FMAC, dot products into the destination) or
# keeping the lanes or rows they do not write (permlane).
_READS_DESTINATION = re.compile(r"^v_(?:dual_|pk_)?(?:f?mac(?:_legacy)?_|dot\d+c_|dot2acc_|permlanex?16_)")
VECTOR_MEMORY = ("buffer_", "global_", "flat_", "scratch_", "image_", "tbuffer_", "cluster_")


def base_mnemonic(mnemonic: str) -> str:
    """The mnemonic without its encoding suffix (``_e32``, ``_e64``, ``_dpp``, ``_sdwa``)."""
    for suffix in ("_e32", "_e64", "_dpp", "_sdwa", "_e64_dpp"):
        if mnemonic.endswith(suffix):
            return mnemonic[: -len(suffix)]
    return mnemonic


def packed_source(inst: Instruction, n: int, regs: tuple[Register, ...]) -> list[Register]:
    """The dwords packed math (VOP3P) really reads of its source ``n``: with 64-bit sources
    (``v_pk_mul_f32 v[4:5], v[4:5], s[0:1] op_sel_hi:[1,0]``), ``op_sel`` picks the dword of the low
    half and ``op_sel_hi`` that of the high half (defaults 0 and 1)."""
    if len(regs) != 1 or regs[0].count != 2:
        return list(regs)
    reg = regs[0]
    sel = _bits(inst.modifier("op_sel"), n, 0)
    sel_hi = _bits(inst.modifier("op_sel_hi"), n, 1)
    return [Register(reg.file, reg.index + half, 1) for half in (0, 1) if half in (sel, sel_hi)]


def _bits(value: str | None, n: int, default: int) -> int:
    if not value:
        return default
    bits = value.strip("[]").split(",")
    return int(bits[n]) if n < len(bits) and bits[n].strip() in ("0", "1") else default


def has_def(inst: Instruction) -> bool:
    """Whether the instruction's first operand is written."""
    m = inst.mnemonic
    if not inst.operands or m.startswith(NO_DEF_PREFIXES):
        return False
    if m.startswith("v_cmpx_") and len(inst.operands) == 2:
        return False  # gfx10+: no destination operand, EXEC alone is written (gfx9 names VCC first)
    if m.startswith(VECTOR_MEMORY):
        # A load into LDS (`lds` modifier, global_load_lds_*, gfx1250's global_load_async_to_lds_b128 v43,
        # v[18:19], off) reads its first operand: an LDS address, or nothing at all.
        return "_load" in m and "lds" not in inst.modifiers and "lds" not in m
    if m.startswith("ds_"):
        return any(word in m for word in ("read", "rtn", "permute", "swizzle", "consume", "append", "load"))
    return not m.startswith("exp")


def defs_and_uses(inst: Instruction, *, wave32: bool = False) -> tuple[list[Register], list[Register]]:
    """The registers ``inst`` writes and those it reads, as its operands name them (a register both read
    and written, as by ``s_addk_i32``, is in both). Both halves of a VOPD pair count; ``wave32``: the code
    runs in waves of 32, where VCC is ``vcc_lo``."""
    defs: list[Register] = []
    uses: list[Register] = []
    for half in inst.halves:
        d, u = _half_defs_and_uses(half, wave32 or inst.dual is not None)  # VOPD is wave32 only
        defs.extend(d)
        uses.extend(u)
    return defs, uses


def _half_defs_and_uses(inst: Instruction, wave32: bool) -> tuple[list[Register], list[Register]]:
    m = inst.mnemonic
    ops = inst.operands
    defs: list[Register] = []
    uses: list[Register] = []
    if base_mnemonic(m) in SWAPS:
        for op in ops[:2]:
            defs.extend(op.registers)
            uses.extend(op.registers)
    elif has_def(inst):
        ndefs = 2 if base_mnemonic(m) in TWO_DEFS and len(ops) >= 3 else 1
        for op in ops[:ndefs]:
            defs.extend(op.registers)
        for n, op in enumerate(ops[ndefs:]):
            uses.extend(packed_source(inst, n, op.registers) if m.startswith("v_pk_") else op.registers)
        if m in SCALAR_RMW or m.startswith(("s_movreld", "s_cmovk")) or _READS_DESTINATION.match(m):
            uses.extend(ops[0].registers)
    else:
        for op in ops:
            uses.extend(op.registers)
    if base_mnemonic(m) in READS_VCC:
        uses.append(Register("vcc", 0, 1 if wave32 else 2))
    return defs, uses
