"""Each target is one record holding every per-arch fact the readers, the lint and the occupancy rules use."""

from __future__ import annotations

from dataclasses import fields

from regsurvey.model.targets import TARGETS, Target

AMD_ONLY = ("sgprs_per_simd", "sgpr_alloc_granule", "trap_sgprs", "torch_hip_version")
NVIDIA_ONLY = ("reg_sub_partitions", "max_regs_per_thread", "param_bank_base")


def test_a_target_has_every_fact_of_its_vendor_and_none_of_the_other() -> None:
    # A vendor's facts have no default worth having: a new target that leaves one out fails here.
    assert {f.name for f in fields(Target)} >= {*AMD_ONLY, *NVIDIA_ONLY, "reg_alloc_granule", "shared_alloc_granule"}
    for target in TARGETS.values():
        mine, other = (AMD_ONLY, NVIDIA_ONLY) if target.is_amd else (NVIDIA_ONLY, AMD_ONLY)
        assert all(getattr(target, name) for name in mine), target.name
        assert not any(getattr(target, name) for name in other), target.name
        assert target.reg_alloc_granule > 0 and target.shared_alloc_granule > 0, target.name
