"""The gate's sentences: what fails, said for each report (the Markdown check report, SARIF, the terminal)."""

from __future__ import annotations

from ..check.gate import COMPILE_SLOWDOWN, KERNARG_NEVER_READ, NEWLY_FAILING, OCCUPANCY_DROP, Problem
from ..model.comparison import FigureDelta, RowComparison
from ..model.figures import figure
from ..model.results import error_line
from ..model.words import ARROW, agree
from .compile_text import compile_time_text
from .figure_text import finding_text, no_launch_text


def build_subject(row: RowComparison) -> str:
    """A build as the check's sentences name it (its :class:`~regsurvey.model.names.BuildName`):
    ``gemm/w2 on sm90 (matmul)``, ``moe/tp8 on sm90 (fused_moe_kernel [down])``, ``moe/tp8 on sm90 (no
    kernel)`` for a key's own row."""
    return f"{row.key} on {row.target} ({row.name.text or 'no kernel'})"


def problem_subject(problem: Problem) -> str:
    """The build failing ``problem`` (:func:`build_subject`)."""
    return build_subject(problem.row)


def problem_message(problem: Problem, arrow: str = ARROW) -> str:
    """One sentence: the build, and what fails."""
    subject = problem_subject(problem)
    if problem.rule is NEWLY_FAILING:
        error = error_line(problem.row.error)
        was = "is new and fails to build" if problem.row.before is None else "no longer builds"
        return f"{subject} {was}" + (f": {error[:200]}" if error else "")
    if problem.rule is KERNARG_NEVER_READ:
        args = ", ".join(map(finding_text, problem.findings))
        n = len(problem.findings)
        return (f"{subject}: {agree(n, 'kernel argument')} {args} loaded and never read, though the source "
                f"uses {agree(n, 'it', 'them')} (a miscompile suspect)")
    if problem.rule is COMPILE_SLOWDOWN and problem.row.compile_time is not None:
        # Which build, its seconds before and after, the stage that grew most, and the rule's thresholds.
        rule = "; ".join(problem.limits)
        return f"{subject}: {compile_time_text(problem.row.compile_time, arrow)}" + (f"; {rule}" if rule else "")
    told = ", ".join(figure_change(f, arrow) for f in problem.figures)
    if problem.rule is OCCUPANCY_DROP and problem.row.no_longer_launches:
        told += f" ({no_launch_text(problem.row)})"
    allowed = "; " + "; ".join(problem.limits) if problem.limits else "; no baseline entry allows it"
    return f"{subject}: {told}{allowed}"


def figure_change(f: FigureDelta, arrow: str = ARROW) -> str:
    """``spill stores 0 → 72 B`` (a new build: ``spill stores 72 B (new build)``)."""
    fig = figure(f.name)
    if f.before is None:
        return f"{fig.noun} {f.after}{fig.unit} (new build)"
    return f"{fig.noun} {f.before} {arrow} {f.after}{fig.unit}"
