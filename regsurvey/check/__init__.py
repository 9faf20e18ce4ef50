"""The pre-merge gate behind ``regsurvey check``: judge a comparison against the project's rules and its
committed baseline of accepted figures.

- :mod:`.baseline` reads (and, for ``--update-baseline``, writes) ``regsurvey.baseline.toml``: the
  ``[check]`` rules and the ``[[allow]]`` entries, each with a reason.
- :mod:`.gate` turns a :class:`~regsurvey.model.comparison.Comparison` and a baseline into a :class:`GateResult`:
  the problems that fail the gate (newly failing builds, new miscompile suspects, spill increases,
  occupancy drops, register increases past a threshold, pathological compile-time slowdowns) and the worse
  figures the baseline allows;
  :func:`~.gate.rebaseline` writes the entries ``--update-baseline`` adds and judges again.
- :mod:`.sites` finds where in the repository a build's kernel is launched (for SARIF locations).

Everything here is a pure function of surveys and the baseline's text except :mod:`.sites`, which reads
the repository's file tree. Presentation (Markdown, SARIF) lives in :mod:`regsurvey.output`.
"""

from .baseline import (
    BASELINE_FILE,
    Allowance,
    Baseline,
    BaselineError,
    CheckRules,
    load_baseline,
    parse_baseline,
    updated_baseline_text,
)
from .gate import RULES, GateResult, Problem, Rule, judge, rebaseline

__all__ = ["BASELINE_FILE", "RULES", "Allowance", "Baseline", "BaselineError", "CheckRules", "GateResult", "Problem",
           "Rule", "judge", "load_baseline", "parse_baseline", "rebaseline", "updated_baseline_text"]
