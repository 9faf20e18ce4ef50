"""What a survey is asked for (model/options.py): with nothing said, every key of every target the keys
files name, one worker, ten minutes a key, the result cache used, local workers."""

from __future__ import annotations

import dataclasses

import pytest

from regsurvey.model.options import SurveyOptions


def test_nothing_asked_is_the_whole_survey_on_local_workers() -> None:
    assert dataclasses.asdict(SurveyOptions()) == {
        "targets": None, "kinds": (), "keys": (), "jobs": 1, "timeout": 600.0, "triton_cache_dir": None,
        "reuse_results": True, "ray_address": None, "toolchain": None}  # toolchain None: this environment


def test_options_are_a_value() -> None:
    options = SurveyOptions(targets=("gfx950",), kinds=("gemm*",), jobs=4)
    assert options == SurveyOptions(targets=("gfx950",), kinds=("gemm*",), jobs=4) and hash(options)
    assert dataclasses.replace(options, reuse_results=False).reuse_results is False and options.reuse_results
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.jobs = 8  # type: ignore[misc]
