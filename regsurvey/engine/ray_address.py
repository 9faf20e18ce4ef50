"""Whether a survey runs on a Ray cluster, and which: what the local path asks before it starts workers,
without importing :mod:`.ray_executor` (Ray's transport and actor modules: about 30 ms of every start)."""

from __future__ import annotations

import os

from ..model.options import SurveyOptions

ENV_VAR = "REGSURVEY_RAY"


def ray_address(options: SurveyOptions) -> str | None:
    """The Ray cluster the survey runs on (``--ray``, else ``REGSURVEY_RAY``), or None: local workers."""
    return options.ray_address or os.environ.get(ENV_VAR, "").strip() or None
