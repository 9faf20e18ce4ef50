"""The real survey comparison tests start from (see tests/layer_survey.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey.results import Survey

from ..layer_survey import layer_survey


@pytest.fixture(scope="session")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    """The toy layer's survey, surveyed once per session."""
    return layer_survey(tmp_path_factory.mktemp("layer"))[0]


@pytest.fixture(scope="session")
def layer_store(layer: Survey) -> Path:
    """The root of the store holding the layer survey's objects."""
    return layer_survey(Path("unused"))[1]
