"""Knobs that did nothing (model/no_effect.py): on a real survey (tests/knob_survey.py: fla's ``NB``, which its
L2 norm kernel never reads, reported on both targets; ``num_warps``, which changes the object, not), then
the cases a survey's rows can mislead on, each with rows as a survey writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.no_effect import KnobKind, NoEffect, knobs_without_effect
from regsurvey.model.results import ObjectRef, Row, Survey

from ..knob_survey import knob_survey


@pytest.fixture(scope="module")
def survey(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    return knob_survey(tmp_path_factory.mktemp("knobs")).survey


def test_fla_nb_gives_one_object_and_num_warps_does_not(survey: Survey) -> None:
    built = [r for r in survey.rows if r.ok]
    assert len(built) == 12 and {r.build["NB"] for r in built if r.build} == {1, 2, 4}
    # Three NB values compiled apart (three Triton hashes per target and config), one object.
    for target in ("gfx950", "sm90"):
        fours = [r for r in built if r.target == target and r.num_warps == 4]
        assert len({r.triton_hash for r in fours}) == 3 and len({r.object.sha256 for r in fours if r.object}) == 1
        assert len({r.object.sha256 for r in built if r.target == target and r.object}) == 2  # 4 and 8 warps
    facts = knobs_without_effect(survey.rows)
    assert facts == tuple(NoEffect("l2norm", target, "NB", KnobKind.CONSTEXPR, (1, 2, 4), ("l2norm_fwd_kernel",),
                                   builds=6, axes=("rows",)) for target in ("gfx950", "sm90"))
    # Neither num_warps nor the warps axis (they change the object), nor the rows axis again (told with NB).


def row(key: str, sha: str | None, *, target: str = "gfx950", kernel: str = "k", build: dict[str, Any] | None = None,
        num_warps: int = 4, config: int | None = None, launch: int = 0, **axes: Any) -> Row:
    """A row of kind ``key``'s first part; ``sha`` None: a failed build."""
    ok = sha is not None
    return Row(key=key, kind=key.split("/")[0], axes=axes, target=target, kernel=kernel,
               status="ok" if ok else "error", error=None if ok else "error: no", num_warps=num_warps, num_stages=2,
               object=ObjectRef(f"objects/{sha}", sha) if sha else None, build=dict(build or {}), config=config,
               launch=launch, triton_hash=f"h-{key}-{target}-{config}")


def knobs(rows: list[Row]) -> dict[tuple[str, str], NoEffect]:
    return {(f.target, f.knob): f for f in knobs_without_effect(rows)}


def test_a_value_that_only_sizes_the_grid_is_an_axis_not_a_constexpr() -> None:
    rows = [row(f"copy/b{b}", "a", build={"BLOCK": 64}, batch=b) for b in (1, 8, 32)]
    (fact,) = knobs_without_effect(rows)
    assert (fact.knob, fact.what, fact.values, fact.builds) == ("batch", KnobKind.AXIS, (1, 8, 32), 3)


def test_a_knob_is_judged_per_target() -> None:
    rows = [row(f"norm/nb{nb}", "a", build={"NB": nb}, nb=nb) for nb in (1, 2)]
    rows += [row(f"norm/nb{nb}", f"s{nb}", target="sm90", build={"NB": nb}, nb=nb) for nb in (1, 2)]
    assert set(knobs(rows)) == {("gfx950", "NB")}


def test_one_comparison_that_differs_means_the_knob_changes_the_object() -> None:
    # NB gives one object under BLOCK 64 and two under BLOCK 128.
    rows = [row(f"norm/nb{nb}/b{block}", "a" if block == 64 else f"b{nb}", build={"NB": nb, "BLOCK": block},
                nb=nb, block=block) for nb in (1, 2) for block in (64, 128)]
    assert ("gfx950", "NB") not in knobs(rows)


def test_builds_compared_differ_in_the_knob_alone() -> None:
    # D and BD move together: no two builds differ in one of them alone, so neither is judged.
    rows = [row(f"norm/d{d}", f"o{d}", build={"D": d, "BD": d}, d=d) for d in (64, 128)]
    rows += [row(f"norm/d{d}", "same", kernel="other", build={"D": d, "BD": d}, d=d) for d in (64, 128)]
    assert "D" not in {f.knob for f in knobs_without_effect(rows)}
    # Keys that differ in two axes (one of them a dtype, which no constexpr records) are not compared.
    mixed = [row("gemm/t1/bf16", "x", build={"NB": 1}, t=1, dtype="bf16"),
             row("gemm/t2/fp32", "y", build={"NB": 2}, t=2, dtype="fp32")]
    assert knobs_without_effect(mixed) == ()


def test_autotune_configs_of_one_key_compare_their_options() -> None:
    rows = [row("fwd/t4", "a", num_warps=w, config=i, build={"BT": 32}, t=4) for i, w in enumerate((4, 8))]
    rows += [row("fwd/t4", f"s{s}", num_warps=4, config=2 + s, build={"BT": 64 * (s + 1)}, t=4) for s in (0, 1)]
    fact = knobs(rows)[("gfx950", "num_warps")]
    assert (fact.what, fact.values, fact.axes) == (KnobKind.OPTION, (4, 8), ())
    assert ("gfx950", "BT") not in knobs(rows)


def test_a_constexpr_only_some_builds_have_is_not_a_knob_of_the_others() -> None:
    # Triton makes an integer argument equal to 1 a constexpr: in one build's ``build``, absent from the other's.
    rows = [row("scale/s1", "a", build={"stride": 1}, s=1), row("scale/s4", "a", build={}, s=4)]
    assert {f.knob for f in knobs_without_effect(rows)} == {"s"}


def test_an_axis_whose_values_build_or_launch_differently_has_an_effect() -> None:
    failing = [row("gemm/w1", "a", w=1), row("gemm/w2", None, w=2)]
    assert knobs_without_effect(failing) == ()
    more = [row("gemm/w1", "a", w=1), row("gemm/w2", "a", w=2), row("gemm/w2", "b", kernel="extra", launch=1, w=2)]
    assert knobs_without_effect(more) == ()


def test_the_json_form_reads_back() -> None:
    fact = NoEffect("l2norm", "sm90", "NB", KnobKind.CONSTEXPR, (1, 2, 4), ("l2norm_fwd_kernel",), 6, ("rows",))
    assert NoEffect.from_dict(fact.to_dict()) == fact
    assert fact.to_dict()["what"] == "constexpr"


def test_the_survey_json_holds_them_only_where_given(survey: Survey, tmp_path: Path) -> None:
    assert "no_effect" not in Survey.to_json(survey)  # the store's: derived from the rows, not kept
    written = survey.to_json(no_effect=knobs_without_effect(survey.rows))
    assert '"no_effect"' in written and Survey.from_json(written) == survey
