"""Each key's expected compile seconds (engine/costs.py): the order keys are handed out in, longest first, and
how many workers each target gets before the keys are listed."""

from __future__ import annotations

from pathlib import Path

from regsurvey.engine.costs import KeyCosts
from regsurvey.model.keys import Key


def test_slowest_keys_are_scheduled_first(tmp_path: Path) -> None:
    def key(name: str) -> Key:
        return Key(kind=name.split("/")[0], axes=(), target="sm90", id=name)

    costs = KeyCosts(tmp_path / "costs.json")
    costs.seconds = {"sm90:a/1": 0.5, "sm90:b/1": 9.0, "sm90:c/1": 2.0}
    order = [k.id for k in costs.longest_first([key("a/1"), key("b/1"), key("new/1"), key("c/1")])]
    assert order == ["new/1", "b/1", "c/1", "a/1"]  # a kind never surveyed first: its cost is unknown
    (tmp_path / "costs.json").write_text("{broken")
    assert KeyCosts(tmp_path / "costs.json").seconds == {}


def test_keys_never_surveyed_are_estimated_from_their_kind_then_their_axes(tmp_path: Path) -> None:
    def key(kind: str, target: str, **axes: object) -> Key:
        return Key(kind=kind, axes=tuple(axes.items()), target=target,
                   id="/".join([kind, *((a if v else f"no{a}") if isinstance(v, bool) else f"{a}{v}"
                                        for a, v in axes.items())]))

    costs = KeyCosts(tmp_path / "costs.json")
    # Stored by earlier surveys (other commits, other keys): attention is slow, norm fast, on sm90 only.
    costs.seconds = {"sm90:attention/w2": 12.0, "sm90:attention/w4": 14.0, "sm90:norm/w2": 0.4,
                     "gfx950:attention/w2": 30.0}
    big, small = key("attention", "sm90", w=8, stop=True), key("attention", "sm90", w=1, stop=False)
    assert costs.estimate(small) == 13.0  # its kind's mean on its target; w1, no path switched on: unscaled
    assert costs.estimate(big) == 13.0 * (1 + 0.05 * (3 + 1))  # w8: three doublings; stop: a path on
    assert costs.estimate(key("norm", "gfx950", w=1)) == 0.4  # the kind on another target
    assert costs.estimate(key("attention", "gfx950", w=2)) == 30.0  # known: its own stored cost
    new = key("moe", "sm90", w=4)
    assert costs.estimate(new) == 30.0 * 1.1  # a kind never surveyed: above every known key
    # With no history at all, a fresh store: the order its axes say, the biggest build first.
    fresh = KeyCosts(tmp_path / "none.json")
    keys = [key("gemm", "sm90", w=w, stages=s) for w in (16, 64) for s in (2, 4)]
    assert [k.id for k in fresh.longest_first(keys)] == ["gemm/w64/stages4", "gemm/w64/stages2", "gemm/w16/stages4",
                                                         "gemm/w16/stages2"]
    # Known and estimated keys together: the never-surveyed kind, then the estimates and costs by size.
    order = [k.id for k in costs.longest_first([small, new, key("norm", "sm90", w=2), big])]
    assert order == ["moe/w4", "attention/w8/stop", "attention/w1/nostop", "norm/w2"]


def test_workers_start_in_proportion_to_each_targets_known_compile_seconds(tmp_path: Path) -> None:
    """Before the keys are listed: sm90 keys took 1.35x gfx950's seconds before, so of 16 workers 9 are
    sm90's (an even split ran gfx950's out of keys a second early on the device); the first, the listing
    worker, is the first target asked for; with a target never surveyed, or too few workers, in turn."""
    costs = KeyCosts(tmp_path / "costs.json")
    costs.seconds = {"sm90:a/1": 2.7, "sm90:b/1": 4.05, "gfx950:a/1": 2.0, "gfx950:b/1": 3.0, "gfx942:a/1": 9.9}
    plan = costs.workers_for(["gfx950", "sm90"], 16)
    assert plan[0] == "gfx950" and (plan.count("gfx950"), plan.count("sm90")) == (7, 9)
    assert costs.workers_for(["gfx950", "sm90"], 3) == ["gfx950", "sm90", "sm90"]
    assert costs.workers_for(["gfx950", "sm90"], 2) == ["gfx950", "sm90"]
    assert costs.workers_for(["sm100", "sm90"], 4) == ["sm100", "sm90", "sm100", "sm90"]  # sm100: none known
