"""``prune_by_survey`` in Triton's real autotuner (:mod:`regsurvey.tuning.autotune`): torchao's blockwise fp8
GEMM (48 configs) with the table made from its gfx950 survey, pruned through ``Autotuner.prune_configs``,
the path ``Autotuner.run`` takes before it benchmarks (``early_config_prune(self.configs, self.nargs,
**kwargs)``): exactly the configs the table keeps, matched by their values whatever their order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import regsurvey as rs
from regsurvey.compile import toolchain
from regsurvey.keys.session import CaptureSession
from regsurvey.model.prune import PruneTableError
from regsurvey.model.results import Survey
from regsurvey.model.targets import get_target
from regsurvey.tuning import prune_by_survey, running_target
from regsurvey.tuning.select import prune_table

GFX950 = get_target("gfx950")
SHAPES = {2: 4, 6: 64}  # M_BUCKET -> tokens (q_a: K 7168, N 1536)


@pytest.fixture(scope="module")
def torchao_gemm() -> Any:
    """torchao's own op and its ``@triton.autotune`` kernel (an Autotuner of 48 configs), imported as on an
    MI355X (torchao builds its Triton kernels only where torch sees a GPU)."""
    pytest.importorskip("torchao")
    with toolchain.device_as(GFX950):
        from torchao.kernel import blockwise_quantization as blockwise

        op = blockwise._get_triton_impls().gemm
    cells = dict(zip(op._init_fn.__code__.co_freevars, op._init_fn.__closure__ or ()))
    return op, cells["blockwise_fp8_gemm_kernel"].cell_contents


@pytest.fixture
def table_file(torchao_survey: Survey, tmp_path: Path) -> Path:
    path = tmp_path / "prune.json"
    path.write_text(prune_table(torchao_survey).to_json())
    return path


def _values(config: Any) -> tuple[int, int, int, int]:
    return (config.kwargs["BLOCK_SIZE_M"], config.kwargs["BLOCK_SIZE_N"], config.num_warps, config.num_stages)


def _bad(survey: Survey, m_bucket: int) -> set[tuple[int, int, int, int]]:
    """The configs whose build at this shape spills past 64 B of scratch or cannot launch, from the rows."""
    return {(r.build["BLOCK_SIZE_M"], r.build["BLOCK_SIZE_N"], r.num_warps, r.num_stages) for r in survey.rows
            if r.kernel == "blockwise_fp8_gemm_kernel" and r.build["M_BUCKET"] == m_bucket
            and (r.resources["scratch_bytes"] > 64 or r.resources["occupancy"] == 0)}


def _pruned(tuner: Any, tokens: int, n: int = 1536, k: int = 7168) -> list[Any]:
    """What the autotuner would benchmark for a launch of ``tokens`` rows (Triton's own prune_configs)."""
    m_bucket = (tokens - 1).bit_length()
    args = (rs.tensor((tokens, k), "e4m3"), rs.tensor((n, k), "e4m3"), rs.tensor((tokens, n), "bf16"),
            rs.tensor((tokens, k // 128), "fp32"), rs.tensor((n // 128, k // 128), "fp32"), tokens, n, k, m_bucket)
    tuner.nargs = dict(zip(tuner.arg_names, args))
    try:
        return list(tuner.prune_configs({"BLOCK_SIZE_K": 128}))
    finally:
        tuner.nargs = None


@pytest.mark.parametrize("m_bucket", sorted(SHAPES))
def test_the_autotuner_keeps_exactly_what_the_table_keeps(torchao_gemm: Any, table_file: Path,
                                                          torchao_survey: Survey, m_bucket: int) -> None:
    _, tuner = torchao_gemm
    configs = list(tuner.configs)
    assert len(configs) == 48
    prune = prune_by_survey(table_file, tuner, target="gfx950")
    tuner.early_config_prune = prune
    try:
        kept = _pruned(tuner, SHAPES[m_bucket])
        bad = _bad(torchao_survey, m_bucket)
        assert len(bad) == 7
        assert kept == [c for c in configs if _values(c) not in bad] and len(kept) == 41
        assert {_values(c) for c in configs} - {_values(c) for c in kept} == bad
        assert {p.config for p in prune.last_pruned} == {19, 21, 22, 23, 39, 46, 47}
        # The project's list reordered since the survey: the same configs go, by their values.
        tuner.configs = configs[::-1]
        assert _pruned(tuner, SHAPES[m_bucket]) == kept[::-1]
    finally:
        tuner.configs, tuner.early_config_prune = configs, None


def test_a_launch_no_key_surveyed_prunes_nothing(torchao_gemm: Any, table_file: Path) -> None:
    # The expert down projection (N 7168, K 2048) was not surveyed: its constexprs match no pruned build.
    _, tuner = torchao_gemm
    tuner.early_config_prune = prune_by_survey(table_file, "blockwise_fp8_gemm_kernel", target="gfx950")
    try:
        assert len(_pruned(tuner, 4, n=7168, k=2048)) == 48
        tuner.early_config_prune = prune_by_survey(table_file, "blockwise_fp8_gemm_kernel", target="sm90")
        assert len(_pruned(tuner, 4)) == 48  # the table has no sm90 configs
    finally:
        tuner.early_config_prune = None


def test_one_config_is_always_kept_the_least_bad(torchao_gemm: Any, table_file: Path) -> None:
    _, tuner = torchao_gemm
    # The project's own prune leaves configs 46 (cannot launch) and 23 (spills 1,828 B): the spilling one stays.
    own = lambda configs, named_args, **kwargs: [configs[46], configs[23]]  # noqa: E731
    tuner.early_config_prune = prune_by_survey(table_file, tuner, target="gfx950", then=own)
    try:
        assert _pruned(tuner, 4) == [tuner.configs[23]]
    finally:
        tuner.early_config_prune = None


def test_a_survey_sees_every_config(torchao_gemm: Any, table_file: Path) -> None:
    # Under regsurvey's capture the table prunes nothing, or the next survey would lose the configs it prunes.
    op, tuner = torchao_gemm
    tuner.early_config_prune = prune_by_survey(table_file, tuner)  # the running target: the stand-in's gfx950
    session = CaptureSession(GFX950)
    try:
        with toolchain.capturing(session):
            assert running_target() == "gfx950"
            fp8 = rs.tensor((1,), "e4m3").dtype
            op._init_fn(rs.tensor((4, 7168), fp8), rs.tensor((4, 56), "fp32"), rs.tensor((1536, 7168), fp8),
                        rs.tensor((12, 56), "fp32"), 128)
    finally:
        tuner.early_config_prune = None
    assert sorted(launch.config for launch in session.launches) == list(range(48))


def test_the_running_gpu_names_the_target() -> None:
    # ROCm's gcnArchName ("gfx942:sramecc+:xnack-"), CUDA's capability; none without a GPU.
    for name in ("gfx942", "gfx950", "sm90", "sm100"):
        with toolchain.device_as(get_target(name)):
            assert running_target() == name
    assert running_target() is None


def test_a_table_of_another_schema_is_refused_at_once(tmp_path: Path, torchao_survey: Survey) -> None:
    survey = tmp_path / "survey.json"
    survey.write_text(torchao_survey.to_json())
    with pytest.raises(PruneTableError, match="not a prune table"):
        prune_by_survey(survey, "blockwise_fp8_gemm_kernel")
    with pytest.raises(ValueError, match="unknown target 'gfx999'"):
        prune_by_survey(prune_table(torchao_survey), "blockwise_fp8_gemm_kernel", target="gfx999")
