"""The variant space and the ranking of ``regsurvey fix`` (tuning/sweep), on rows as a survey makes them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from regsurvey.model.figures import Figures
from regsurvey.model.fix import Effect, Variant
from regsurvey.model.results import ObjectRef, Row, Status
from regsurvey.tuning.sweep import (
    CONTROL,
    SpaceError,
    config_blocks,
    knobs_for,
    parse_knob,
    rank_key,
    ranked,
    variants_for,
)

AMD_OPTIONS = frozenset({"num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "llvm_fn_attrs"})


def _row(config: int | None = None, build: dict | None = None, sha: str = "a" * 64, target: str = "gfx942",
         **figures: int) -> Row:
    values = {"vgpr": 100, "agpr": 0, "vgpr_total": 100, "sgpr": 40, "vgpr_spill": 0, "sgpr_spill": 0,
              "scratch_bytes": 0, "lds_bytes": 0, "occupancy": 4, "kernarg_bytes": 64, "loop_spill_ops": 0,
              "loop_spill_depth": 0, **figures}
    return Row(key="gemm/w8", kind="gemm", axes={"w": 8}, target=target, kernel="matmul", status=Status.OK,
               resources=Figures.from_json(values), object=ObjectRef(f"objects/{sha[:2]}/{sha}.hsaco", sha),
               config=config, num_warps=4, num_stages=2, build=build or {"BLOCK_K": 64})


def test_default_knobs_each_alone_without_the_base_values_and_the_control_last() -> None:
    row = _row()
    knobs = knobs_for(row, [], AMD_OPTIONS)
    assert [k.name for k in knobs] == ["num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack",
                                       "sched_strategy", "llvm"]
    variants = variants_for(row, "matmul", knobs, [], combine=False)
    labels = [v.label for v in variants]
    assert "num_warps=4" not in labels and "num_stages=2" not in labels and "kpack=1" in labels
    assert "llvm_fn_attrs='amdgpu-sched-strategy=max-ilp'" in labels
    assert labels[-4:] == ["llvm=amdgpu-use-amdgpu-trackers", "llvm=amdgpu-disable-unclustered-high-rp-reschedule",
                           "launch_cooperative_grid=True", "llvm as compiled"]
    assert variants[-2] == Variant("matmul", options=(CONTROL,), control=True)
    assert variants[-1] == Variant("matmul", llvm=(), control=True)
    assert len(variants) == 2 + 2 + 4 + 2 + 2 + 5 + 2 + 2


def test_llvm_options_are_tried_alone_on_amd_only() -> None:
    row = _row()
    knobs = knobs_for(row, [parse_knob("llvm=amdgpu-use-amdgpu-trackers"), parse_knob("num_warps=8")], AMD_OPTIONS)
    labels = [v.label for v in variants_for(row, "matmul", knobs, [], combine=True)]
    assert labels == ["num_warps=8", "llvm=amdgpu-use-amdgpu-trackers", "launch_cooperative_grid=True",
                      "llvm as compiled"]
    (only,) = knobs_for(row, [parse_knob("llvm=amdgpu-use-amdgpu-trackers")], AMD_OPTIONS)
    variants = variants_for(row, "matmul", [only], [], combine=True)
    assert [v.label for v in variants] == ["llvm=amdgpu-use-amdgpu-trackers", "llvm as compiled"]
    assert not variants[0].is_base and variants[0].settings == ()
    nvidia = replace(_row(), target="sm90", resources=Figures.from_json({"regs": 128, "spill_store_bytes": 0}))
    with pytest.raises(SpaceError, match="sm90's code is made by ptxas, which takes no LLVM options"):
        knobs_for(nvidia, [("llvm", ("amdgpu-use-amdgpu-trackers",))], frozenset({"num_warps", "maxnreg"}))


def test_knobs_gfx950_and_nvidia() -> None:
    assert "kpack" not in [k.name for k in knobs_for(_row(target="gfx950"), [], AMD_OPTIONS)]
    with pytest.raises(SpaceError, match="gfx950's Triton ignores it"):
        knobs_for(_row(target="gfx950"), [("kpack", (2,))], AMD_OPTIONS)
    with pytest.raises(SpaceError, match="gfx942 has no launch option maxnreg, and it is no constexpr of matmul"):
        knobs_for(_row(), [("maxnreg", (128,))], AMD_OPTIONS)
    (knob,) = knobs_for(_row(), [("BLOCK_K", (32, 128))], AMD_OPTIONS)
    assert (knob.name, knob.values, knob.option) == ("BLOCK_K", (32, 128), False)


def test_asked_knobs_are_combined() -> None:
    row = _row()
    knobs = knobs_for(row, [parse_knob("num_warps=4,8"), parse_knob("BLOCK_K=32,64,128")], AMD_OPTIONS)
    labels = [v.label for v in variants_for(row, "matmul", knobs, [], combine=True)]
    # a combination keeping a base value changes less than it says: left out
    assert labels == ["num_warps=8 BLOCK_K=32", "num_warps=8 BLOCK_K=128", "launch_cooperative_grid=True"]


def test_the_block_sizes_of_the_other_configs() -> None:
    rows = [_row(0, {"BLOCK_M": 16, "BLOCK_N": 64, "K": 7168}), _row(1, {"BLOCK_M": 32, "BLOCK_N": 64, "K": 7168}),
            _row(2, {"BLOCK_M": 32, "BLOCK_N": 128, "K": 7168}), _row(3, {"BLOCK_M": 16, "BLOCK_N": 64, "K": 7168})]
    assert config_blocks(rows[1], rows) == [(("BLOCK_M", 16),), (("BLOCK_N", 128),)]


def test_ranked_by_loop_spills_spills_occupancy_registers() -> None:
    base = _row(loop_spill_ops=20, vgpr_spill=100, occupancy=1)
    fewer_in_loops = _row(sha="b" * 64, loop_spill_ops=2, vgpr_spill=300, occupancy=1)
    none = _row(sha="c" * 64, occupancy=1, vgpr_total=256)
    same = _row(sha="a" * 64)
    assert rank_key(none) < rank_key(fewer_in_loops) < rank_key(base)
    tried = [(Variant("matmul", (("waves_per_eu", 2),)), fewer_in_loops),
             (Variant("matmul", (("num_warps", 8),)), none),
             (Variant("matmul", (("kpack", 2),)), same), (Variant("matmul", (CONTROL,), control=True), same)]
    fix = ranked("gemm/w8 matmul", base, tried)
    assert [t.variant.label for t in fix.ranked] == ["num_warps=8", "waves_per_eu=2", "base", "kpack=2"]
    assert [t.effect for t in fix.ranked] == [Effect.CHANGED, Effect.CHANGED, Effect.CHANGED, Effect.NO_EFFECT]
    assert fix.control is not None and fix.control.effect is Effect.NO_EFFECT
    assert fix.improves and fix.best.variant.label == "num_warps=8"


def test_parse_knob() -> None:
    assert parse_knob("waves_per_eu=1,2") == ("waves_per_eu", (1, 2))
    assert parse_knob("sched_strategy=max-ilp") == ("sched_strategy", ("max-ilp",))
    with pytest.raises(SpaceError):
        parse_knob("num_warps")


def test_the_wave32_amd_targets_knobs() -> None:
    """RDNA and gfx1250: their Triton's own launch options; no kpack or 32-wide WMMA to try, waves_per_eu where
    it can still bind (a wave addresses 256 VGPRs of RDNA's 1536), and on RDNA one CU in place of the WGP."""
    from regsurvey.compile.toolchain import launch_option_names
    from regsurvey.model.targets import TARGETS

    for target in ("gfx1100", "gfx1151", "gfx1201", "gfx1250"):
        options = launch_option_names(TARGETS[target])
        knobs = {k.name: k.values for k in knobs_for(_row(target=target), [], options)}
        assert "kpack" not in knobs and "matrix_instr_nonkdim" not in knobs
        assert knobs["waves_per_eu"] == (6, 8, 12)
        assert knobs.get("wgp_cu_mode") == (None if target == "gfx1250" else ("cu",))
