"""The real survey gate tests start from (see tests/layer_survey.py), shared with the diff tests."""

from __future__ import annotations

import pytest

from regsurvey.results import Survey

from ..layer_survey import layer_survey


@pytest.fixture(scope="session")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    """The toy layer's survey, surveyed once per session."""
    return layer_survey(tmp_path_factory.mktemp("layer"))[0]
