"""Where a kernel's registers go, as the model keeps it (model/pressure.py): its JSON form read back equal
and refused at another version, the peaks and spill totals it answers, the user's lines it ranks and groups
(Triton's own source left out), and the frame each instruction is attributed to.

Pressures computed from real objects (gfx942, gfx950, sm90, sm100) are tests/pressure/test_pressure.py's."""

from __future__ import annotations

import json

import pytest

from regsurvey.model.pressure import PRESSURE_VERSION, LineStats, Pressure, Site, Spill, attribution, is_toolchain

USER = "/home/dev/project/kernels/attention.py"
HELPER = "/home/dev/project/kernels/helpers.py"
TRITON = "/usr/lib/python3.11/site-packages/triton/language/standard.py"


def site(index: int, frames: tuple[tuple[str, int], ...], **live: int) -> Site:
    return Site(index, f"v_add_f32 v{index}, v1, v2", frames, live)


def pressure() -> Pressure:
    """A small AMD kernel: a helper inlined at line 40, a ``tl.sum`` (Triton's own source) at line 52."""
    at_52 = site(7, ((TRITON, 290), (USER, 52)), vgpr=128, agpr=4, sgpr=22)
    demand = site(7, at_52.frames, vgpr=140, agpr=4, sgpr=22)
    spills = (Spill("store", "scratch", 2, site(5, ((USER, 44),), vgpr=110)),
              Spill("store", "vgpr-lane", 1, site(6, ((USER, 44),), sgpr=30)),
              *(Spill("reload", "scratch", 1, site(i, ((USER, 60),), vgpr=110)) for i in (8, 9, 10)))
    lines = (LineStats((USER, 40), {"vgpr": 96}, 4, 0, 0, 12),
             LineStats((HELPER, 12), {"vgpr": 96}, 12),
             LineStats((USER, 44), {"vgpr": 110, "sgpr": 30}, 6, 2, 0),
             LineStats((USER, 52), {"vgpr": 128}, 9, 0, 0, 30),
             LineStats((TRITON, 290), {"vgpr": 128}, 30),
             LineStats((USER, 60), {"vgpr": 110}, 3, 0, 3))
    return Pressure("attn_fwd", "gfx950", "amdgcn liveness", ("vgpr", "agpr", "sgpr"), 12,
                    {"vgpr": at_52, "agpr": at_52, "sgpr": spills[1].site}, {"vgpr": [0, 8, 64, 96, 96, 110]},
                    lines, spills, (HELPER, USER, TRITON), {"vgpr": demand})


def test_the_json_form_reads_back_equal() -> None:
    p = pressure()
    data = json.loads(json.dumps(p.to_dict()))
    assert data["version"] == PRESSURE_VERSION == 4
    assert data["lines"][0] == {"path": USER, "line": 40, "live": {"vgpr": 96}, "instructions": 4, "spill_stores": 0,
                                "spill_reloads": 0, "inlined_instructions": 12, "inlined_stores": 0,
                                "inlined_reloads": 0, "depth": 0}
    assert data["spills"][1]["site"] == {"index": 6, "text": "v_add_f32 v6, v1, v2", "frames": [[USER, 44]],
                                         "live": {"sgpr": 30}}
    assert Pressure.from_dict(data) == p


@pytest.mark.parametrize("stored", [3, None, "4"])
def test_a_pressure_of_another_version_is_computed_again(stored: object) -> None:
    data = pressure().to_dict()
    data["version"] = stored
    if stored is None:
        del data["version"]
    with pytest.raises(ValueError) as raised:
        Pressure.from_dict(data)
    assert str(raised.value) == f"pressure version {stored!r}, expected 4"


def test_peaks_and_spill_totals() -> None:
    p = pressure()
    assert p.demand_peak("vgpr") == 140  # the values live at once, spilled ones included
    assert p.demand_peak("sgpr") is None and p.demand_peak("gpr") is None  # none spilled, or not this vendor's
    assert (p.spill_total("store"), p.spill_total("reload"), p.spill_total("load")) == (3, 3, 0)  # their sizes


def test_the_users_lines_ranked_and_grouped_without_tritons_own() -> None:
    p = pressure()
    # The most live first; at a tie, the most spill instructions (line 60's three reloads before line 44's two
    # stores, whatever their sizes); then by file and line.
    assert [s.frame for s in p.top_lines(3)] == [(USER, 52), (USER, 60), (USER, 44)]
    assert [s.frame for s in p.top_lines(10)] == [(USER, 52), (USER, 60), (USER, 44), (USER, 40), (HELPER, 12)]
    assert p.top_lines(0) == []
    grouped = p.by_file()
    assert list(grouped) == [USER, HELPER]  # in the order first met
    assert list(grouped[USER]) == [40, 44, 52, 60] and grouped[HELPER][12].instructions == 12


@pytest.mark.parametrize(("path", "toolchain"), [
    (TRITON, True),
    ("triton/language/core.py", True),
    ("/opt/venv/lib/python3.12/site-packages/triton/runtime/jit.py", True),
    (USER, False),
    ("/home/dev/triton-kernels/ops.py", False),  # a project named after Triton is the user's
    ("/home/dev/project/triton/ops.py", False),
])
def test_tritons_own_source(path: str, toolchain: bool) -> None:
    assert is_toolchain(path) is toolchain


def test_the_installed_tritons_files_are_its_own() -> None:
    import triton

    assert is_toolchain(triton.__file__)


def test_an_instruction_is_attributed_to_its_innermost_user_frame() -> None:
    # A helper inlined at a call site: the helper's line, called from the kernel's.
    assert attribution(((HELPER, 12), (USER, 40))) == ((HELPER, 12), ((USER, 40),))
    # Triton's tl.sum, called at line 52: that line, whatever Triton's own frames say.
    assert attribution(((TRITON, 290), (TRITON, 180), (USER, 52))) == ((USER, 52), ())
    # The call sites, outermost last, each once, never the line itself.
    frames = ((HELPER, 12), (TRITON, 5), (HELPER, 30), (USER, 40), (HELPER, 30), (HELPER, 12))
    assert attribution(frames) == ((HELPER, 12), ((HELPER, 30), (USER, 40)))
    assert attribution(((TRITON, 290), (TRITON, 180))) == ((TRITON, 290), ())  # all Triton's: the innermost
    assert attribution(()) == (None, ())  # no line given
