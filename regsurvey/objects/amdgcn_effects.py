"""What an AMDGCN instruction reads and writes: the registers of its operands, split into definitions
and uses. Shared by the kernarg lint (which follows values through registers) and the register
pressure analysis (which follows liveness).

The rules are those of LLVM's AMDGPU instruction syntax: the first operand is the destination except
for stores, compares into SCC, branches and the other instructions listed in ``NO_DEF_PREFIXES``; VOP3b
instructions with a carry-out write their first two operands; read-modify-write SALU reads its
destination too; packed math (VOP3P) reads only the dwords ``op_sel`` picks of a 64-bit source.
"""

from __future__ import annotations

from .amdgcn import Instruction, Register

# Instructions whose first operand is read, not written.
NO_DEF_PREFIXES = (
    "s_cmp", "s_bitcmp", "s_cbranch", "s_branch", "s_setpc", "s_waitcnt", "s_nop", "s_barrier", "s_endpgm",
    "s_sendmsg", "s_setprio", "s_sleep", "s_trap", "s_dcache", "s_icache", "s_set_gpr_idx", "s_ttracedata",
    "s_rfe", "s_store", "s_buffer_store", "s_scratch_store", "s_atomic", "s_buffer_atomic", "s_wakeup",
    "s_sethalt", "s_incperflevel", "s_decperflevel", "s_denorm_mode", "s_round_mode", "s_setkill",
    "s_code_end", "s_setreg", "s_clause", "s_delay_alu", "s_wait", "s_cbranch_join",
)
# Read-modify-write SALU: the first operand is read and written.
SCALAR_RMW = ("s_addk_i32", "s_mulk_i32", "s_bitset0_b32", "s_bitset0_b64", "s_bitset1_b32", "s_bitset1_b64",
              "s_bitreplicate")
# VALU with a carry-out or second result as the second operand (VOP3b): both first operands are written.
TWO_DEFS = ("v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_addc_co_u32", "v_subb_co_u32",
            "v_subbrev_co_u32", "v_div_scale_f32", "v_div_scale_f64", "v_mad_u64_u32", "v_mad_i64_i32",
            "v_add_co_ci_u32", "v_sub_co_ci_u32", "v_subrev_co_ci_u32")
# Branches and VALU that read vcc without naming it.
READS_VCC = ("s_cbranch_vccz", "s_cbranch_vccnz", "v_div_fmas_f32", "v_div_fmas_f64")
VECTOR_MEMORY = ("buffer_", "global_", "flat_", "scratch_", "image_", "tbuffer_")


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
    if m.startswith(VECTOR_MEMORY):
        return "_load" in m and "lds" not in inst.modifiers and not m.startswith("global_load_lds")
    if m.startswith("ds_"):
        return any(word in m for word in ("read", "rtn", "permute", "swizzle", "consume", "append", "load"))
    return not m.startswith("exp")


def defs_and_uses(inst: Instruction) -> tuple[list[Register], list[Register]]:
    """The registers ``inst`` writes and those it reads, as its operands name them (a register both read
    and written, as by ``s_addk_i32``, is in both)."""
    m = inst.mnemonic
    ops = inst.operands
    defs: list[Register] = []
    uses: list[Register] = []
    if has_def(inst):
        ndefs = 2 if base_mnemonic(m) in TWO_DEFS and len(ops) >= 3 else 1
        for op in ops[:ndefs]:
            defs.extend(op.registers)
        for n, op in enumerate(ops[ndefs:]):
            uses.extend(packed_source(inst, n, op.registers) if m.startswith("v_pk_") else op.registers)
        if m in SCALAR_RMW or m.startswith(("s_movreld", "s_cmovk")):
            uses.extend(ops[0].registers)
    else:
        for op in ops:
            uses.extend(op.registers)
    if m in READS_VCC:
        uses.append(Register("vcc", 0, 2))
    return defs, uses
