"""Textual mutations of real amdgcn that lose a kernel argument, modelled on the miscompile the kernarg lint
looks for. Each takes the text of a real Triton compile and returns the mutated text, the kernarg-segment
offsets of the dwords it loses and what it did; the sites are found textually here (nothing of the lint is
used). Shared by tests/fixtures/lint/regenerate.py (gfx950's committed fixtures) and
tests/lint/test_kernarg_rdna.py (RDNA and gfx1250 compiles, mutated at test time).

- ``restore_removed``: a body-loaded 64-bit kernarg (a whole ``s_load_dwordx2``/``s_load_b64``, else an
  aligned pair of a wider load) is spilled to VGPR lanes (``v_writelane_b32``); every ``v_readlane_b32``
  restoring those lanes is deleted, so the spilled value is never restored.
- ``use_redirected``: every read of a body-loaded i32 argument, up to the instruction that overwrites its
  SGPR, is redirected to the next SGPR.
- ``wide_load_copy_dropped``: two adjacent 8-dword kernarg loads become one 16-dword load into free SGPRs,
  and the eight 64-bit values are copied on to where the 8-dword loads put them, except the last one: its
  destination pair is later spilled and restored without ever being defined, and the loaded argument is
  never read.

Both syntaxes: GFX9's (``s_load_dwordx8``, ``s_waitcnt lgkmcnt(0)``, a kernarg-preload prologue before the
real entry) and GFX11+'s (``s_load_b256``, gfx12's ``s_wait_kmcnt 0x0`` and ``nv``, no prologue, gfx1250's
VGPRs above v255 written ``v0 /*v256*/``).
"""

from __future__ import annotations

import re

Mutation = tuple[str, list[int], str]  # mutated text, the lost dwords' kernarg offsets, the description

_LOAD = re.compile(
    r"^\s*s_load_(?:dword(?:x(?P<x>\d+))?|b(?P<bits>\d+))\s+(?:s\[(?P<lo>\d+):(?P<hi>\d+)\]|s(?P<one>\d+)),"
    r"\s*s\[(\d+):(\d+)\],\s*(?P<offset>0x[0-9a-f]+|\d+)(?P<nv>\s+nv)?\s*$")
_LANE_VGPR = r"v\d+(?:\s*/\*v\d+\*/)?"  # gfx1250: `v0 /*v256*/` is v256
_WAIT_SCALAR = re.compile(r"^\s*(?:s_waitcnt lgkmcnt\(0\)|s_wait_kmcnt 0x0)\s*$")
# Instructions whose first operand is read, not written (for the scan that finds where a value dies).
_FIRST_READ = ("s_cmp", "s_bitcmp", "v_cmpx", "s_setreg", "s_wait", "buffer_store", "global_store", "scratch_store",
               "s_store", "s_buffer_store")


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _plain(line: str) -> str:
    """The line with gfx1250's annotated VGPRs written as the register meant (``v0 /*v256*/`` -> ``v256``)."""
    return re.sub(r"v\d+\s*/\*(v\d+)\*/", r"\1", line)


def _entry_line(lines: list[str]) -> int:
    """Index of the line where the kernel's code starts: the target of gfx9's kernarg-preload prologue (the
    kernel's first instructions: s_loads, waits, an s_branch), else the kernel's label (no preload, or gfx1250's,
    which has no prologue)."""
    label = next(j for j, ln in enumerate(lines) if re.match(r"^[A-Za-z_][\w$]*:", ln))
    for line in lines[label + 1:]:
        code = line.split(";", 1)[0].strip()
        if not code or code.startswith(".") or code.endswith(":"):
            continue
        branch = re.match(r"^s_branch\s+(\S+)", code)
        if branch:
            return next(j for j, ln in enumerate(lines) if ln.startswith(f"{branch[1]}:"))
        if not code.startswith(("s_load", "s_waitcnt", "s_nop")):
            break
    return label


def _kernarg_loads(lines: list[str], start: int) -> list[tuple[int, int, int, int]]:
    """(line index, first SGPR, count, offset) of each body s_load through an SGPR pair (the kernarg pointer
    or a copy of it)."""
    out = []
    for i in range(start, len(lines)):
        m = _LOAD.match(lines[i])
        if not m:
            continue
        first, count = (int(m["lo"]), int(m["hi"]) - int(m["lo"]) + 1) if m["lo"] else (int(m["one"]), 1)
        out.append((i, first, count, int(m["offset"], 0)))
    return out


def _mentions(line: str, sgpr: int) -> bool:
    """Does the instruction on ``line`` name SGPR ``sgpr`` (alone or inside a range)?"""
    code = line.split(";", 1)[0]
    if re.search(rf"(?<![\w\[:])s{sgpr}(?![\w])", code):
        return True
    return any(int(a) <= sgpr <= int(b) for a, b in re.findall(r"s\[(\d+):(\d+)\]", code))


def _overwrites(line: str, sgpr: int) -> bool:
    """Does the instruction on ``line`` write SGPR ``sgpr`` as its first operand (alone or in a range)?"""
    code = line.split(";", 1)[0].strip()
    mnemonic, _, operands = code.partition(" ")
    if not mnemonic or mnemonic.startswith(_FIRST_READ) or mnemonic.startswith("."):
        return False
    first = operands.split(",", 1)[0].strip()
    return first == f"s{sgpr}" or any(int(a) <= sgpr <= int(b) for a, b in re.findall(r"^s\[(\d+):(\d+)\]$", first))


def restore_removed(text: str) -> Mutation:
    """Delete every v_readlane_b32 that restores a spilled, body-loaded 64-bit kernarg."""
    lines = _lines(text)
    loads = _kernarg_loads(lines, _entry_line(lines))
    # Whole 64-bit loads first (gfx950's fixture), then aligned pairs of wider ones (RDNA's s_load_b256).
    pairs = [(index, first, offset) for index, first, count, offset in loads if count == 2]
    pairs += [(index, first + 2 * k, offset + 8 * k) for index, first, count, offset in loads if count > 2
              for k in range(count // 2)]
    writes = [_plain(ln) for ln in lines if re.match(r"^\s*v_writelane_b32", ln)]
    for index, first, offset in pairs:
        lanes = []
        for half in (0, 1):
            sgpr = first + half
            for j in range(index + 1, len(lines)):
                m = re.match(rf"^\s*v_writelane_b32\s+(v\d+),\s*s{sgpr},\s*(\d+)\s*$", _plain(lines[j]))
                if m:
                    lanes.append((m[1], int(m[2])))
                    break
                if _overwrites(lines[j], sgpr):
                    break  # overwritten before any spill
        if len(lanes) != 2:
            continue
        if any(sum(1 for w in writes if re.search(rf"\b{v},\s*(?:s\d+|vcc_lo|vcc_hi),\s*{lane}\s*$", w)) != 1
               for v, lane in lanes):
            continue  # lanes reused for other values: removing their reads would hit those too
        restore = re.compile("|".join(rf"^\s*v_readlane_b32\s+s\d+,\s*{v},\s*{lane}\s*$" for v, lane in lanes))
        removed = [i for i, ln in enumerate(lines) if restore.match(_plain(ln))]
        if not removed:
            continue
        shown = "; ".join(f"line {i + 1}: {lines[i].strip()}" for i in removed)
        kept = [ln for i, ln in enumerate(lines) if i not in set(removed)]
        return "\n".join(kept), [offset, offset + 4], (
            f"`{lines[index].strip()}` (line {index + 1}) is spilled to {lanes[0][0]} lanes "
            f"{lanes[0][1]}-{lanes[1][1]}; its restores are deleted ({shown})")
    raise SystemExit("restore-removed: no spilled 64-bit kernarg with lanes written once")


def _forward(lines: list[str], at: int, label: str) -> bool:
    """Does the branch on line ``at`` jump forward?"""
    return any(ln.startswith(f"{label}:") for ln in lines[at + 1:])


def _redirect_half(code: str, reg: str, new_reg: str) -> tuple[str, bool, bool]:
    """One instruction (or one half of a VOPD pair) with its reads of ``reg`` made reads of ``new_reg``: the
    new text, whether it read ``reg``, whether it writes it."""
    mnemonic, _, operands = code.strip().partition(" ")
    parts = [p.strip() for p in operands.split(",")]
    defines = bool(parts) and parts[0] == reg and not mnemonic.startswith(_FIRST_READ)
    sources = parts[1:] if defines else parts
    if not any(p.split()[:1] == [reg] for p in sources):
        return code, False, defines
    new_sources = [" ".join([new_reg, *p.split()[1:]]) if p.split()[:1] == [reg] else p for p in sources]
    new = ([parts[0]] if defines else []) + new_sources
    return code.replace(operands, ", ".join(new), 1), True, defines


def use_redirected(text: str) -> Mutation:
    """Redirect every read of a body-loaded i32 (up to its SGPR's redefinition) to the next SGPR.

    The value must be overwritten before any backward branch or jump, so every read is on the scanned run.
    """
    lines = _lines(text)
    for index, first, count, offset in _kernarg_loads(lines, _entry_line(lines)):
        if count != 1:
            continue
        reg, new_reg = f"s{first}", f"s{first + 1}"
        edits = {}
        for j in range(index + 1, len(lines)):
            line = lines[j]
            code = line.split(";", 1)[0]
            if re.match(r"^\s*s_(branch|setpc|endpgm)", code):
                edits = {}
                break  # the value must die before control leaves the straight-line run (forward branches only)
            if re.match(r"^\s*s_cbranch", code) and not _forward(lines, j, code.split()[-1]):
                edits = {}
                break
            if not code.strip() or code.strip().startswith("."):
                continue
            if any(int(a) <= first <= int(b) for a, b in re.findall(r"s\[(\d+):(\d+)\]", code)):
                edits = {}
                break  # part of a range: a partial redirect would be another mutation
            halves = code.split(" :: ")
            done = [_redirect_half(h, reg, new_reg) for h in halves]
            if any(read for _, read, _ in done):
                edits[j] = line.replace(code.rstrip(), " :: ".join(h for h, _, _ in done).rstrip(), 1)
            if any(defines for _, _, defines in done):
                break
        else:
            edits = {}
        if not edits:
            continue
        shown = "; ".join(f"line {j + 1}: {lines[j].strip()} -> {edits[j].strip()}" for j in sorted(edits))
        for j, line in edits.items():
            lines[j] = line
        return "\n".join(lines), [offset], (
            f"the reads of `{lines[index].strip()}` (line {index + 1}) are redirected to {new_reg} ({shown})")
    raise SystemExit("use-redirected: no body-loaded i32 whose value dies inside its block")


def wide_load_copy_dropped(text: str) -> Mutation:
    """Merge two adjacent 8-dword kernarg loads into one 16-dword load into free SGPRs; copy on all but one pair."""
    lines = _lines(text)
    entry = _entry_line(lines)
    loads = _kernarg_loads(lines, entry)
    next_free = int(re.search(r"\.amdhsa_next_free_sgpr\s+(\d+)", text)[1])  # type: ignore[index]
    for a_index, a_first, a_count, a_offset in loads:
        for b_index, b_first, b_count, b_offset in loads:
            if a_count != 8 or b_count != 8 or b_offset != a_offset + 32 or b_index <= a_index:
                continue
            wait = next((j for j in range(b_index + 1, len(lines)) if _WAIT_SCALAR.match(lines[j])), None)
            if wait is None or any(re.match(r"^\.LBB\w*:", lines[j]) for j in range(a_index, wait)):
                continue
            # Free SGPRs: above the user/system SGPRs, inside the kernel's SGPR budget, and named nowhere
            # from the function's start to the copies (so nothing live is overwritten).
            for free in range(32, next_free - 15, 4):
                if all(not _mentions(lines[j], s) for s in range(free, free + 16) for j in range(wait + 1)):
                    break
            else:
                continue
            load = _LOAD.match(lines[a_index])
            assert load is not None
            wide = "s_load_dwordx16" if load["bits"] is None else "s_load_b512"
            src = lines[a_index].split(",")[1].strip()
            lines[a_index] = f"\t{wide} s[{free}:{free + 15}], {src}, {a_offset:#x}{load['nv'] or ''}"
            copies = [f"\ts_mov_b64 s[{a_first + 2 * i}:{a_first + 2 * i + 1}], s[{free + 2 * i}:{free + 2 * i + 1}]"
                      for i in range(4)]
            copies += [f"\ts_mov_b64 s[{b_first + 2 * i}:{b_first + 2 * i + 1}], "
                       f"s[{free + 8 + 2 * i}:{free + 9 + 2 * i}]" for i in range(3)]
            dropped = lines[b_index].strip()
            out = lines[: wait + 1] + copies + lines[wait + 1:]
            del out[b_index]
            first_load = "s_load_dwordx8" if load["bits"] is None else "s_load_b256"
            return "\n".join(out), [b_offset + 24, b_offset + 28], (
                f"`{first_load} s[{a_first}:{a_first + 7}]` (line {a_index + 1}) and `{dropped}` (line "
                f"{b_index + 1}) become `{wide} s[{free}:{free + 15}], {src}, {a_offset:#x}`; seven of "
                f"the eight pairs are copied on after line {wait + 1}, not s[{b_first + 6}:{b_first + 7}] "
                f"<- s[{free + 14}:{free + 15}]")
    raise SystemExit("wide-load-copy-dropped: no two adjacent 8-dword loads with 16 free SGPRs")


MUTATIONS = {
    "restore-removed": restore_removed,
    "use-redirected": use_redirected,
    "wide-load-copy-dropped": wide_load_copy_dropped,
}
