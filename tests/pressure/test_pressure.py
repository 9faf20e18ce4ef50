"""Register pressure on the kernel's own source lines (issue #13), on kernels built so that the answer is
known (tests/pressure_kernels.py), compiled here for gfx942, gfx950, sm90 and sm100.

What is asserted: the peak is on the chosen line; spill stores and reloads are on the chosen lines; a
helper's code is attributed to the helper's line and counted at its call site; the spill instructions
add up to what the object readers report; the peak never exceeds what the compiler allocated, and on
NVIDIA equals the maximum of ``nvdisasm -plr --life-range-mode count``.
"""

from __future__ import annotations

import collections
import functools
import gzip
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import triton
from triton.compiler import ASTSource

from regsurvey.model.pressure import Pressure, attribution
from regsurvey.model.targets import get_target
from regsurvey.objects.amd_object import read_hsaco
from regsurvey.objects.nvidia_object import read_cubin, tool_path
from regsurvey.pressure.amd import amd_pressure
from regsurvey.pressure.nvidia import nvidia_pressure

from .. import pressure_kernels as pk
from ..objects_kernels import TARGETS

ALL = ("gfx942", "gfx950", "sm90", "sm100")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pressure"
# Frames are compared by file name: an object names the path it was compiled at, and Triton's own cache
# may serve one compiled from another checkout of these tests.
SOURCE = Path(pk.__file__).name


@functools.cache
def compiled(kernel: str, target: str, block: int) -> Any:
    fn = getattr(pk, kernel)
    constexprs = {"BLOCK": block} | ({"N": 4} if "spill" in kernel else {})
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", **{k: "constexpr" for k in constexprs}}
    return triton.compile(ASTSource(fn, signature, constexprs, {}), target=TARGETS[target], options={"num_warps": 1})


@functools.cache
def pressure(kernel: str, target: str, block: int) -> Pressure:
    ck = compiled(kernel, target, block)
    if target.startswith("gfx"):
        return amd_pressure(ck.asm["amdgcn"], target)
    return nvidia_pressure(ck.asm["cubin"], target, ck.asm["ptx"])


def named(frame: tuple[str, int] | None) -> tuple[str, int] | None:
    return (Path(frame[0]).name, frame[1]) if frame is not None else None


def own_line(frames: tuple) -> tuple[str, int] | None:
    own, _ = attribution(frames)
    return named(own)


def spill_lines(p: Pressure, kind: str) -> collections.Counter:
    return collections.Counter(own_line(s.site.frames) for s in p.spills if s.kind == kind)


@pytest.mark.parametrize("target", ALL)
def test_the_peak_is_on_the_chosen_line(target: str) -> None:
    p = pressure("peak_kernel", target, 4096)
    first = p.classes[0]
    assert own_line(p.peaks[first].frames) == (SOURCE, pk.marked_line("PEAK"))
    assert max(p.series[first]) == p.peaks[first].live[first] > 0


# The kernel that spills at known lines, per vendor (see tests/pressure_kernels.py).
SPILLING = {"gfx": ("spill_kernel", 8192), "sm": ("loop_spill_kernel", 4096)}


def spilling(target: str) -> tuple[str, int]:
    return SPILLING["gfx" if target.startswith("gfx") else "sm"]


@pytest.mark.parametrize("target", ALL)
def test_spills_are_on_the_chosen_lines(target: str) -> None:
    kernel, block = spilling(target)
    p = pressure(kernel, target, block)
    stores, reloads = spill_lines(p, "store"), spill_lines(p, "reload")
    assert stores and reloads
    if target.startswith("gfx"):  # the kept tile: stored after its load, reloaded at its use, nothing else
        assert set(stores) == {(SOURCE, pk.marked_line("KEEP"))}
        assert set(reloads) == {(SOURCE, pk.marked_line("USE"))}
    else:  # inside the unrolled loop
        loop = (SOURCE, pk.marked_line("LOOP2"))
        assert stores.most_common(1)[0][0] == loop and reloads.most_common(1)[0][0] == loop
    # The per-line table says the same.
    lines = {named(s.frame): s for s in p.lines}
    for frame, count in stores.items():
        assert lines[frame].spill_stores == count
    for frame, count in reloads.items():
        assert lines[frame].spill_reloads == count


@pytest.mark.parametrize("target", ALL)
def test_a_helper_is_attributed_to_its_line_and_its_call_site(target: str) -> None:
    p = pressure("peak_kernel", target, 4096)
    lines = {named(s.frame): s for s in p.lines}
    helper, call = (SOURCE, pk.marked_line("HELPER")), (SOURCE, pk.marked_line("CALL"))
    assert lines[helper].instructions > 0  # the helper's own code, on the helper's line
    assert lines[call].inlined_instructions >= lines[helper].instructions  # and counted where it is called
    assert lines[call].live[p.classes[0]] >= lines[helper].live[p.classes[0]]
    # Triton's own code (tl.sum's, in triton/language/) is attributed to the user's line that called it.
    assert not [s for s in p.lines if "/triton/language/" in s.frame[0]]
    assert lines[(SOURCE, pk.marked_line("PEAK"))].instructions > 0


def amd_resources(ck: Any, target: str) -> Any:
    return read_hsaco(ck.asm["hsaco"], lds_bytes=ck.metadata.shared, num_warps=1, target=get_target(target),
                      code_text=ck.asm["amdgcn"])


@pytest.mark.parametrize("target", ALL)
@pytest.mark.parametrize("kernel", ["peak_kernel", "spilling"])
def test_spills_add_up_to_the_object_readers(target: str, kernel: str) -> None:
    kernel, block = spilling(target) if kernel == "spilling" else (kernel, 4096)
    p = pressure(kernel, target, block)
    ck = compiled(kernel, target, block)
    by = collections.Counter()
    for s in p.spills:
        by[(s.kind, s.medium)] += s.size
    if target.startswith("gfx"):
        res = amd_resources(ck, target)
        assert by[("store", "scratch")] + by[("store", "agpr")] == res["vgpr_spill"]
        assert by[("store", "vgpr-lane")] == res["sgpr_spill"]
    else:
        res = read_cubin(ck.asm["cubin"], shared_bytes=ck.metadata.shared, num_warps=1, target=get_target(target))
        assert (by[("store", "local")], by[("reload", "local")]) == (res["spill_store_bytes"], res["spill_load_bytes"])


def test_sgpr_spills_from_vcc_count_as_the_metadata_counts_them() -> None:
    """conch's varlen attention on gfx942 (a fixture: tests/fixtures/pressure/regenerate.py): LLVM spills
    27 SGPR values to VGPR lanes, two of them a branch condition's lane mask held in ``vcc_lo``/``vcc_hi``;
    the lane spill stores add up to ``.sgpr_spill_count``, and each of VCC's is reloaded."""
    text = gzip.decompress((FIXTURES / "conch-varlen-gfx942.amdgcn.gz").read_bytes()).decode()
    (declared,) = (int(n) for n in re.findall(r"\.sgpr_spill_count:\s+(\d+)", text))
    p = amd_pressure(text, "gfx942")
    stores = [s for s in p.spills if s.kind == "store" and s.medium == "vgpr-lane"]
    reloads = [s for s in p.spills if s.kind == "reload" and s.medium == "vgpr-lane"]
    assert declared == 27 and sum(s.size for s in stores) == declared
    from_vcc = [s for s in stores if re.search(r"v_writelane_b32 v\d+, vcc_(lo|hi)", s.site.text)]
    assert len(from_vcc) == 2
    assert len([s for s in reloads if re.search(r"v_readlane_b32 vcc_(lo|hi),", s.site.text)]) == 2


@pytest.mark.parametrize("target", ALL)
@pytest.mark.parametrize("kernel", ["peak_kernel", "spilling"])
def test_the_peak_is_within_what_was_allocated(target: str, kernel: str) -> None:
    """Live registers are the allocated ones: the peak never exceeds the compiler's count, and on these
    register-limited kernels it comes within a few of it (tuple alignment leaves gaps)."""
    kernel, block = spilling(target) if kernel == "spilling" else (kernel, 4096)
    p = pressure(kernel, target, block)
    ck = compiled(kernel, target, block)
    peak = {c: p.peaks[c].live[c] for c in p.classes}
    if target.startswith("gfx"):
        res = amd_resources(ck, target)
        assert peak["vgpr"] <= res["vgpr"] and peak["agpr"] <= res["agpr"] and peak["sgpr"] <= res["sgpr"]
        if res["vgpr_spill"]:
            assert res["vgpr"] - peak["vgpr"] <= 8
    else:
        res = read_cubin(ck.asm["cubin"], shared_bytes=ck.metadata.shared, num_warps=1, target=get_target(target))
        assert peak["gpr"] <= res["regs"]
        if res["spill_store_bytes"]:
            assert res["regs"] - peak["gpr"] <= 8


def slot_words(p: Pressure) -> list[int]:
    """A second count of the spilled values waiting at each instruction, for straight-line code (the spilling
    kernels' loops are unrolled): each word of a spill slot (an AMD scratch offset, an NVIDIA ``[R1+offset]``)
    holds a value from a store to the last reload before the slot's next store, read off the spill list in
    code order."""
    ranges: list[list[int]] = []
    held: dict[int, list[int]] = {}
    for spill in p.spills:
        if spill.medium == "local":
            at = re.search(r"\[R1(?:\+0x([0-9a-f]+))?\]", spill.site.text)
            assert at, spill.site.text
            offset, words = int(at[1] or "0", 16), spill.size // 4
        else:
            assert spill.medium == "scratch", spill  # these kernels spill no SGPR and keep no VGPR in an AGPR
            at = re.search(r"offset:(\d+)", spill.site.text)
            offset, words = int(at[1]) if at else 0, spill.size
        for word in range(offset, offset + 4 * words, 4):
            if spill.kind == "store":
                if word in held and len(held[word]) == 2:
                    ranges.append(held[word])
                held[word] = [spill.site.index]
            elif word in held:
                held[word][1:] = [spill.site.index]
    ranges += [r for r in held.values() if len(r) == 2]
    waiting = [0] * p.instructions
    for first, last in ranges:
        for i in range(first, last + 1):
            waiting[i] += 1
    return waiting


@pytest.mark.parametrize("target", ALL)
def test_the_demand_before_spilling_counts_the_spilled_values(target: str) -> None:
    """The peak counts registers after allocation and spilling; the demand adds the values waiting in spill
    slots. On AMD the kept tile's 38 dwords wait in scratch across the loop where the VGPRs peak: the demand
    is the peak plus all of them. On NVIDIA it passes what any allocation could hold (255 registers). Both
    equal a second count of the slots' lives added to the live registers."""
    kernel, block = spilling(target)
    p = pressure(kernel, target, block)
    first = p.classes[0]
    peak, demand = p.peaks[first].live[first], p.demand_peak(first)
    assert demand is not None and set(p.demand) == {first}
    assert demand == max(n + w for n, w in zip(p.series[first], slot_words(p)))
    assert p.demand[first].live[first] == demand
    ck = compiled(kernel, target, block)
    if target.startswith("gfx"):
        res = amd_resources(ck, target)
        assert res["vgpr_spill"] == 38 and demand == peak + res["vgpr_spill"]
    else:
        res = read_cubin(ck.asm["cubin"], shared_bytes=ck.metadata.shared, num_warps=1, target=get_target(target))
        assert peak <= res["regs"] == 255 < demand
    # A kernel that does not spill has no demand apart from its peak.
    assert pressure("peak_kernel", target, 1024).demand == {}


def test_the_demand_of_sgprs_spilled_to_vgpr_lanes() -> None:
    """conch's varlen attention on gfx942 (27 SGPR values spilled to VGPR lanes): its SGPR demand is above
    the SGPR peak, by no more than the values spilled; the VGPRs that hold the lanes are spill space."""
    text = gzip.decompress((FIXTURES / "conch-varlen-gfx942.amdgcn.gz").read_bytes()).decode()
    p = amd_pressure(text, "gfx942")
    peak, demand = p.peaks["sgpr"].live["sgpr"], p.demand_peak("sgpr")
    assert set(p.demand) == {"sgpr"} and demand is not None
    assert (peak, demand) == (99, 126) and peak < demand <= peak + 27


@pytest.mark.parametrize("target", ["sm90", "sm100"])
def test_nvidia_counts_are_nvdisasms(target: str) -> None:
    """The live counts are nvdisasm's: checked against a run of it here (on a kernel under 255
    registers, where nvdisasm reads the cubin as it is)."""
    ck = compiled("peak_kernel", target, 1024)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "k.cubin"
        path.write_bytes(ck.asm["cubin"])
        out = subprocess.run([tool_path("nvdisasm"), "-c", "-plr", "-lrm", "count", str(path)], capture_output=True,
                             text=True, check=True).stdout
    counts = [int(m[1]) for m in re.finditer(r"^\s*/\*[0-9a-f]+\*/.*//\s*\|\s*(\d+)\s*\|", out, re.M)]
    p = pressure("peak_kernel", target, 1024)
    assert max(counts) == p.peaks["gpr"].live["gpr"]
    assert len(p.series["gpr"]) == sum(1 for _ in re.finditer(r"^\s*/\*[0-9a-f]+\*/", out, re.M))


def test_a_kernel_at_255_registers_is_read_through_a_copy_at_254() -> None:
    """nvdisasm refuses REGCOUNT 255 for its life ranges; the copy it reads says 254, nothing else changes."""
    from regsurvey.objects.nvidia_object import with_regcount_at_most

    cubin = compiled("peak_kernel", "sm90", 4096).asm["cubin"]
    assert read_cubin(cubin, shared_bytes=0, num_warps=1, target=get_target("sm90"))["regs"] == 255
    lowered = with_regcount_at_most(cubin, 254)
    assert read_cubin(lowered, shared_bytes=0, num_warps=1, target=get_target("sm90"))["regs"] == 254
    assert len(lowered) == len(cubin) and sum(a != b for a, b in zip(lowered, cubin)) == 1
    assert with_regcount_at_most(lowered, 254) == lowered


@pytest.mark.parametrize("target", ["gfx950", "sm90"])
def test_the_json_form_round_trips(target: str) -> None:
    kernel, block = spilling(target)
    p = pressure(kernel, target, block)
    assert Pressure.from_dict(json.loads(json.dumps(p.to_dict()))) == p
