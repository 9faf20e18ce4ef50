"""``from regsurvey.replay import replay``: what every keys file ``regsurvey capture`` writes imports (its
generated files are committed in projects, so this import path stays). The code is
:mod:`regsurvey.capture.replay`."""

from .capture.replay import ReplayError, replay

__all__ = ["ReplayError", "replay"]
