"""Register pressure on RDNA 3 and 4 (gfx1100, gfx1201) and GFX12.5 (gfx1250), on test_pressure.py's kernels
(tests/pressure_kernels.py) compiled here for one 32-lane wave at BLOCK=4096.

What differs from CDNA and is checked here: wave32 code holds 128 values a lane of such a tile; RDNA's 256
VGPRs spill it, to scratch in clauses whose ``s_clause`` carries LLVM's spill comment (the spills are its
members: stored on the kept tile's line, reloaded where it is used); VOPD pairs write two registers; gfx1250
addresses 1024 VGPRs (``v0 /*v256*/`` in the text: live registers above v255 are counted) and spills SGPRs
to lanes of them.

A large frame and 16-bit spills come from a real kernel too big to compile here: the demo's MLA decode on
gfx1100 (tests/fixtures/pressure/mla-decode-e4m3-gfx1100.amdgcn.gz, its regenerate.py says how it is made).
"""

from __future__ import annotations

import collections
import gzip
from pathlib import Path

import pytest

from regsurvey.objects.amd_spills import is_16bit, slot_addresses, spill_accesses
from regsurvey.objects.amdgcn import parse_functions
from regsurvey.pressure.amd import amd_pressure

from .. import pressure_kernels as pk
from ..readings import asm_comment, asm_metadata, vgpr_spills
from .test_pressure import SOURCE, amd_resources, compiled, named, own_line, pressure, slot_words, spill_lines

MLA_DECODE = Path(__file__).resolve().parents[1] / "fixtures" / "pressure" / "mla-decode-e4m3-gfx1100.amdgcn.gz"

RDNA = ("gfx1100", "gfx1201")
ALL = (*RDNA, "gfx1250")
BLOCK = 4096


@pytest.mark.parametrize("target", ALL)
def test_the_peak_is_on_the_chosen_line(target: str) -> None:
    p = pressure("peak_kernel", target, BLOCK)
    assert own_line(p.peaks["vgpr"].frames) == (SOURCE, pk.marked_line("PEAK"))
    assert max(p.series["vgpr"]) == p.peaks["vgpr"].live["vgpr"] > 0


def test_gfx1250_counts_the_vgprs_above_v255() -> None:
    """peak_kernel's tiles take 271 VGPRs on gfx1250, all live at its peak: counted, past v255, as LLVM does."""
    p = pressure("peak_kernel", "gfx1250", BLOCK)
    res = amd_resources(compiled("peak_kernel", "gfx1250", BLOCK), "gfx1250")
    assert p.peaks["vgpr"].live["vgpr"] == res["vgpr"] == 271


@pytest.mark.parametrize("target", ALL)
def test_a_helper_is_attributed_to_its_line_and_its_call_site(target: str) -> None:
    p = pressure("peak_kernel", target, BLOCK)
    lines = {named(s.frame): s for s in p.lines}
    helper, call = (SOURCE, pk.marked_line("HELPER")), (SOURCE, pk.marked_line("CALL"))
    assert lines[helper].instructions > 0
    assert lines[call].inlined_instructions >= lines[helper].instructions


@pytest.mark.parametrize("target", RDNA)
def test_the_kept_tile_is_spilled_on_its_line_and_reloaded_at_its_use(target: str) -> None:
    """spill_kernel keeps a tile of 128 values a lane across its loop: stored (in clauses) right after its load,
    reloaded where it is used; the loop's own spills are on the loop's line."""
    p = pressure("spill_kernel", target, BLOCK)
    stores, reloads = spill_lines(p, "store"), spill_lines(p, "reload")
    keep, use, loop = ((SOURCE, pk.marked_line(m)) for m in ("KEEP", "USE", "LOOP"))
    assert set(stores) <= {keep, loop} and set(reloads) <= {use, loop}
    kept = sum(s.size for s in p.spills if s.kind == "store" and own_line(s.site.frames) == keep)
    assert kept == 127 and sum(s.size for s in p.spills if s.kind == "reload" and own_line(s.site.frames) == use) == 128
    # The spills are the clauses' scratch stores and loads, never their s_clause.
    assert all(s.site.text.startswith(("scratch_store_", "scratch_load_")) for s in p.spills)
    lines = {named(s.frame): s for s in p.lines}
    assert lines[keep].spill_stores == stores[keep] and lines[use].spill_reloads == reloads[use]


@pytest.mark.parametrize("target", ALL)
@pytest.mark.parametrize("kernel", ["peak_kernel", "spill_kernel"])
def test_spills_add_up_to_the_object_readers(target: str, kernel: str) -> None:
    p = pressure(kernel, target, BLOCK)
    res = amd_resources(compiled(kernel, target, BLOCK), target)
    by: collections.Counter = collections.Counter()
    for s in p.spills:
        by[(s.kind, s.medium)] += s.size
    assert by[("store", "scratch")] == res["vgpr_spill"] and by[("store", "vgpr-lane")] == res["sgpr_spill"]
    assert res["vgpr_spill"] or res["sgpr_spill"] or kernel == "peak_kernel"


@pytest.mark.parametrize("target", ALL)
@pytest.mark.parametrize("kernel", ["peak_kernel", "spill_kernel"])
def test_the_peak_is_within_what_was_allocated(target: str, kernel: str) -> None:
    p = pressure(kernel, target, BLOCK)
    res = amd_resources(compiled(kernel, target, BLOCK), target)
    assert p.peaks["vgpr"].live["vgpr"] <= res["vgpr"] and p.peaks["sgpr"].live["sgpr"] <= res["sgpr"]
    assert p.peaks["agpr"].live["agpr"] == 0


@pytest.mark.parametrize("target", RDNA)
@pytest.mark.parametrize("kernel", ["peak_kernel", "spill_kernel"])
def test_the_demand_before_spilling_counts_the_spilled_values(target: str, kernel: str) -> None:
    """The VGPRs live plus the values waiting in scratch slots, by a second count of the slots' lives; above
    what one wave may address (256)."""
    p = pressure(kernel, target, BLOCK)
    demand = p.demand_peak("vgpr")
    assert set(p.demand) == {"vgpr"} and demand is not None
    assert demand == max(n + w for n, w in zip(p.series["vgpr"], slot_words(p))) > 256 >= p.peaks["vgpr"].live["vgpr"]


def test_gfx1250_sgpr_demand_counts_the_lanes_of_v256() -> None:
    """spill_kernel on gfx1250 keeps its tiles in 582 VGPRs and spills 6 SGPRs to lanes of v256: those lanes are
    spill space, the SGPR demand is above the SGPR peak by no more than the values spilled."""
    p = pressure("spill_kernel", "gfx1250", BLOCK)
    assert {s.site.text.split(",")[0] for s in p.spills if s.kind == "store"} == {"v_writelane_b32 v0 /*v256*/"}
    peak, demand = p.peaks["sgpr"].live["sgpr"], p.demand_peak("sgpr")
    assert set(p.demand) == {"sgpr"} and demand is not None and peak < demand <= peak + 6


def test_a_frame_past_the_offsets_reach_and_16_bit_spills() -> None:
    """The MLA decode's 1,874 spilled VGPRs (602 of the stores 16-bit halves, each counted one) fill 4,276 bytes
    of scratch: the slots past 4 KiB are addressed through an SGPR set just before (``s_movk_i32 s3, 0x10b0``).
    Each slot is told by its address, not by the register's name (which would make 3 slots of 45), and every
    reload reads a slot a spill store wrote."""
    text = gzip.decompress(MLA_DECODE.read_bytes()).decode()
    (function,) = [f for f in parse_functions(text) if f.instructions]
    accesses = spill_accesses(function, text.splitlines())
    rows = [(inst, access, address) for inst, access, address in
            zip(function.instructions, accesses, slot_addresses(function)) if access and access[1] == "scratch"]
    stores = [(inst, address) for inst, access, address in rows if access[0] == "store"]
    assert sum(access[2] for _, access, _ in rows if access[0] == "store") == asm_metadata(text, "vgpr_spill_count") \
        == vgpr_spills(text) == 1874
    assert sum(is_16bit(inst) for inst, _ in stores) == 602
    assert asm_comment(text, "ScratchSize") == 4276 and all(address is not None for _, _, address in rows)
    by_sgpr = [(inst, address) for inst, _, address in rows if inst.operands[2].text != "off"]
    assert len(by_sgpr) == 133 and min(a[1] for _, a in by_sgpr) == 4096
    by_name = {(inst.operands[2].text, inst.modifier("offset")) for inst, _ in by_sgpr}
    assert len(by_name) == 3 < len({address for _, address in by_sgpr}) == 45
    written = {address for _, address in stores}
    assert all(address in written for _, access, address in rows if access[0] == "reload")
    p = amd_pressure(text, "gfx1100")
    peak, demand = p.peaks["vgpr"].live["vgpr"], p.demand_peak("vgpr")
    assert demand is not None and peak <= 256 < demand <= peak + 1874
