"""engine/ray_address.py: whether a survey runs on Ray, and which cluster, asked without importing Ray's
modules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from regsurvey.engine.ray_address import ENV_VAR, ray_address
from regsurvey.model.options import SurveyOptions


def test_the_cluster_is_the_one_asked_for_else_the_environments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert ray_address(SurveyOptions()) is None  # local workers
    assert ray_address(SurveyOptions(ray_address="local")) == "local"
    monkeypatch.setenv(ENV_VAR, "  ray://head:10001 ")
    assert ray_address(SurveyOptions()) == "ray://head:10001"
    assert ray_address(SurveyOptions(ray_address="10.0.0.2:6379")) == "10.0.0.2:6379"  # --ray wins
    monkeypatch.setenv(ENV_VAR, "   ")
    assert ray_address(SurveyOptions()) is None


def test_a_local_survey_does_not_import_rays_modules() -> None:
    # The point of the module: the local path asks it, and never loads ray_executor (about 30 ms a start).
    code = ("import sys; from regsurvey.engine import survey; from regsurvey.revisions import obtain; "
            "print(sorted(m for m in sys.modules if 'ray_executor' in m or m == 'ray' or 'transport_ray' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
