"""Survey to tuning: the prune table a survey makes (``select``) and the run-time helper a project imports to
prune its autotuners' configs with it (``autotune``: ``from regsurvey.tuning import prune_by_survey``).

Importing this package imports neither torch nor Triton nor regsurvey's compile side (tested in a fresh
interpreter): it runs in the project's serving process.
"""

from ..model.prune import PrunedConfig, PruneTable, PruneTableError, Reason
from .autotune import SurveyPrune, load_table, prune_by_survey, running_target

__all__ = ["PruneTable", "PruneTableError", "PrunedConfig", "Reason", "SurveyPrune", "load_table",
           "prune_by_survey", "running_target"]
