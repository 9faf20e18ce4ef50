"""The one registry of figures against everything that names figures: the readers' records, real rows of
a survey, the table, the comparison's spill totals and the gate's rules."""

from __future__ import annotations

import dataclasses

import pytest

from regsurvey.check.baseline import Baseline, CheckRules
from regsurvey.check.gate import NEW_SPILL, OCCUPANCY_DROP, REGISTER_INCREASE, judge
from regsurvey.diff.core import compare
from regsurvey.model.figures import (
    AMD,
    FIGURES,
    JUDGED_REGISTERS,
    KINDS,
    NO_FIGURES,
    NVIDIA,
    SPILL,
    SPILL_FIGURES,
    Figures,
    figure,
    vendor_figures,
)
from regsurvey.model.results import Survey
from regsurvey.output.table import summary_line, survey_grids

from ..layer_survey import edited


def test_the_registry_is_consistent() -> None:
    assert all(f.kind in KINDS and f.worse in (-1, 0, 1) for f in FIGURES)
    assert all(figure(f.companion_of).vendor == f.vendor for f in FIGURES if f.companion_of)
    assert sorted(f.rank for f in FIGURES) == list(range(len(FIGURES)))


def test_every_surveyed_row_is_a_registry_record(layer: Survey) -> None:
    # Real rows (the layer survey compiles gfx950 and sm90): every built row has exactly its vendor's figures.
    for row in layer.rows:
        if row.ok:
            vendor = AMD if row.target.startswith("gfx") else NVIDIA
            assert list(row.resources) == [f.name for f in vendor_figures(vendor)], row.row_id


def test_spill_means_the_same_six_figures_everywhere(layer: Survey) -> None:
    assert set(SPILL_FIGURES) == {"vgpr_spill", "sgpr_spill", "scratch_bytes", "spill_store_bytes",
                                  "spill_load_bytes", "stack_bytes"}
    # A stack frame and scratch alone (no spill instruction): each is a spill in the table, the totals and the gate.
    amd = next(r for r in layer.rows if r.ok and r.target == "gfx950")
    nv = next(r for r in layer.rows if r.ok and r.target == "sm90")
    head = edited(layer, {(amd.row_id, amd.target): {"scratch_bytes": 64}, (nv.row_id, nv.target): {"stack_bytes": 32}})
    comparison = compare(layer, head)
    totals = {t.name: (t.before, t.after) for t in comparison.spill_totals}
    assert set(totals) == set(SPILL_FIGURES)
    assert totals["scratch_bytes"][1] - totals["scratch_bytes"][0] == 64 - amd.resources["scratch_bytes"]
    assert comparison.spilling_builds[1] >= comparison.spilling_builds[0] + (not amd.resources["scratch_bytes"])
    problems = judge(comparison, Baseline()).problems
    spilled = {(p.row.row_id, p.row.target, f.name) for p in problems if p.rule is NEW_SPILL for f in p.figures}
    assert (amd.row_id, amd.target, "scratch_bytes") in spilled and (nv.row_id, nv.target, "stack_bytes") in spilled
    nv_table = next(t for t in survey_grids(head, 200) if str(t.title).startswith("NVIDIA"))
    assert [c.header for c in nv_table.columns][3:] == [f.label for f in vendor_figures(NVIDIA)]
    assert "spill stores in" in summary_line(head) and "VGPR spills in" in summary_line(head)
    assert "not linted" not in summary_line(head)  # every build of the layer survey is linted
    unlinted = dataclasses.replace(head, rows=tuple(dataclasses.replace(r, lint=None) if r.key == nv.key else r
                                                    for r in head.rows))
    assert summary_line(unlinted).endswith(f"; {sum(r.key == nv.key and r.ok for r in head.rows)} builds not linted")


def test_the_gate_rules_take_their_figures_from_the_registry(layer: Survey) -> None:
    assert JUDGED_REGISTERS == ("vgpr", "agpr", "sgpr", "regs")
    amd = next(r for r in layer.rows if r.ok and r.target == "gfx950")
    head = edited(layer, {(amd.row_id, amd.target): {"occupancy": amd.resources["occupancy"] - 1,
                                                     "vgpr": amd.resources["vgpr"] + 64,
                                                     "vgpr_total": amd.resources["vgpr_total"] + 64}})
    baseline = Baseline(rules=CheckRules(register_increase=16))
    problems = judge(compare(layer, head), baseline).problems
    by_rule = {p.rule: [f.name for f in p.figures] for p in problems}
    assert by_rule[OCCUPANCY_DROP] == ["occupancy"]
    assert by_rule[REGISTER_INCREASE] == ["vgpr"]  # the unified count restates it: not judged twice
    assert all(figure(name).kind == SPILL for name in by_rule.get(NEW_SPILL, []))


def test_figures_are_a_frozen_mapping_of_one_vendors_registry_names() -> None:
    """What the readers make and a row holds: the registry's names of one vendor, whole numbers of zero or
    more, iterated in the registry's order whatever order they came in; equal to a dict of the same
    figures, hashable, frozen, and the same after a pickle (workers and Ray actors send rows)."""
    import pickle

    figures = Figures(AMD, {"sgpr": 80, "vgpr": 128})
    assert list(figures) == ["vgpr", "sgpr"] and figures == {"sgpr": 80, "vgpr": 128} and figures["vgpr"] == 128
    assert figures.get("regs") is None and dict(figures.items()) == figures.to_json() == {"vgpr": 128, "sgpr": 80}
    assert hash(figures) == hash(Figures(AMD, {"vgpr": 128, "sgpr": 80})) and len({figures, figures}) == 1
    assert pickle.loads(pickle.dumps(figures)) == figures and pickle.loads(pickle.dumps(NO_FIGURES)).vendor is None
    with pytest.raises(AttributeError):
        figures.vendor = NVIDIA  # type: ignore[misc]
    for vendor, values, problem in [
        (AMD, {"regs": 1}, "figure 'regs' is NVIDIA's, not AMD's"),
        (AMD, {"vgprs": 1}, "unknown figure 'vgprs'"),
        (AMD, {"vgpr": True}, "figure vgpr is True, not a whole number"),
        (NVIDIA, {"regs": -1}, "figure regs is -1, not a whole number of zero or more"),
    ]:
        with pytest.raises(ValueError, match=problem):
            Figures(vendor, values)
    with pytest.raises(ValueError, match="NVIDIA figures without .*occupancy_warps"):
        Figures.complete(NVIDIA, regs=1)
    assert list(Figures.complete(NVIDIA, **{f.name: 0 for f in reversed(vendor_figures(NVIDIA))})) == [
        f.name for f in vendor_figures(NVIDIA)]


def test_figures_from_json_take_their_vendor_from_their_names() -> None:
    assert Figures.from_json({"regs": 40}).vendor == NVIDIA and Figures.from_json({}) == NO_FIGURES
    with pytest.raises(ValueError, match=r"figures of AMD and NVIDIA together \(vgpr, regs\)"):
        Figures.from_json({"vgpr": 1, "regs": 2})
    with pytest.raises(ValueError, match="figures are list"):
        Figures.from_json([1])


def test_a_row_holds_its_targets_vendors_figures() -> None:
    """A plain dict is taken (as a status string is) and checked: an sm90 row with VGPRs is refused, built
    in a process or read from a stored survey."""
    from regsurvey.model.results import Row

    row = Row(key="k", kind="k", axes={}, target="sm90", kernel="k", status="ok", resources={"regs": 40})
    assert isinstance(row.resources, Figures) and row.resources.vendor == NVIDIA
    with pytest.raises(ValueError, match="sm90 has NVIDIA's figures, not AMD's"):
        Row(key="k", kind="k", axes={}, target="sm90", kernel="k", status="ok", resources={"vgpr": 40})
    data = row.to_dict()
    assert data["resources"] == {"regs": 40} and type(data["resources"]) is dict
    with pytest.raises(ValueError, match=r"row k \(sm90\): sm90 has NVIDIA's figures, not AMD's"):
        Row.from_dict({**data, "resources": {"vgpr": 40}})
