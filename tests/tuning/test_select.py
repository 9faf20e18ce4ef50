"""Which configs a survey prunes (:mod:`regsurvey.tuning.select`), on torchao's real gfx950 survey: the
builds that spill past the threshold (scratch bytes per lane, not VGPRs spilled into AGPRs), those that
cannot launch (LDS over the CU's 160 KiB: occupancy 0), and the table's JSON, read back."""

from __future__ import annotations

import pytest

from regsurvey.model.prune import PruneTable, PruneTableError, Reason
from regsurvey.tuning.select import prune_table, spill_bytes, table_lines


def _configs(table: PruneTable, target: str = "gfx950") -> set[tuple[int | None, int, str]]:
    return {(c.config, c.constexprs["M_BUCKET"], c.reason.value) for c in table.configs[target]}


def test_the_configs_that_spill_or_cannot_launch_are_pruned(torchao_survey) -> None:  # type: ignore[no-untyped-def]
    table = prune_table(torchao_survey)
    gemm = [r for r in torchao_survey.rows if r.kernel == "blockwise_fp8_gemm_kernel"]
    assert len(gemm) == 96 and table.surveyed == {"gfx950": 96}
    # Every build of the surveyed GEMM, judged from its own figures: the table holds exactly these.
    expected = {(r.config, r.build["M_BUCKET"], "cannot launch" if r.resources["occupancy"] == 0 else "spills")
                for r in gemm if r.resources["occupancy"] == 0 or r.resources["scratch_bytes"] > 64}
    assert _configs(table) == expected
    # 32 x 128 tiles at 4 to 6 stages, 32 x 64 and 128 x 32 at 6 spill; 128 x 128 at 5 and 6 stages need
    # 166,368 and 199,648 B of LDS, over the MI355X CU's 160 KiB.
    assert sorted({c for c, _, _ in expected}) == [19, 21, 22, 23, 39, 46, 47]
    worst = next(c for c in table.configs["gfx950"] if c.config == 23)
    assert (worst.num_warps, worst.num_stages, worst.constexprs["BLOCK_SIZE_M"], worst.constexprs["BLOCK_SIZE_N"],
            worst.spill_bytes) == (8, 6, 32, 128, 1828)
    no_launch = next(c for c in table.configs["gfx950"] if c.config == 46)
    assert [b.figures["lds_bytes"] for b in no_launch.builds] == [166368]
    assert no_launch.compile_s == no_launch.builds[0].compile_s > 0
    # Config 20 (32 x 128, 3 stages) spills VGPRs into AGPRs only: no scratch, not pruned at the default,
    # nor with any threshold.
    cfg20 = [r for r in gemm if r.config == 20]
    assert all(r.resources["vgpr_spill"] > 0 and spill_bytes(r) == 0 for r in cfg20)
    assert 20 not in {c.config for c in prune_table(torchao_survey, 0).configs["gfx950"]}


def test_a_higher_threshold_prunes_fewer(torchao_survey) -> None:  # type: ignore[no-untyped-def]
    table = prune_table(torchao_survey, spill_above=1000)
    assert sorted({c.config for c in table.configs["gfx950"]}) == [22, 23, 46, 47]
    assert {c.reason for c in table.configs["gfx950"]} == {Reason.SPILLS, Reason.CANNOT_LAUNCH}


def test_the_table_says_a_line_per_kernel(torchao_survey) -> None:  # type: ignore[no-untyped-def]
    [line] = table_lines(prune_table(torchao_survey))
    seconds = sum(c.compile_s for c in prune_table(torchao_survey).configs["gfx950"])
    assert line == (f"gfx950 blockwise_fp8_gemm_kernel: 7 configs pruned (14 builds: 10 spill past 64 B, "
                    f"4 cannot launch), {seconds:.1f} s of compile")


def test_the_json_reads_back_and_another_file_is_refused(torchao_survey) -> None:  # type: ignore[no-untyped-def]
    table = prune_table(torchao_survey)
    again = PruneTable.from_json(table.to_json())
    assert again == table
    with pytest.raises(PruneTableError, match="not a prune table"):
        PruneTable.from_json(torchao_survey.to_json())
    with pytest.raises(PruneTableError, match="schema version 2"):
        PruneTable.from_json(table.to_json().replace('"schema_version": 1', '"schema_version": 2'))
    with pytest.raises(PruneTableError, match="malformed prune table"):
        PruneTable.from_json(table.to_json().replace('"reason": "spills"', '"reason": "slow"'))
