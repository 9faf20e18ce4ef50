"""``regsurvey stack BASE..HEAD``: every commit of a range against its parent, and HEAD against BASE."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from ..diff.core import stack as make_stack
from ..model.comparison import Comparison, Stack
from ..output.formats import render
from ..revisions.obtain import open_store
from ..revisions.range import commit_range, obtain_surveys, survey_store
from .common import EXIT_OK, command_errors, explained
from .helptext import examples
from .options import (
    columns_option,
    default_report_path,
    filename_part,
    make_survey_options,
    report_options,
    report_style,
    survey_options,
    write_report,
)


@click.command(epilog=examples(
    ("regsurvey stack main..HEAD", "each commit of the branch against its parent, and the branch against main"),
    ("regsurvey stack main..HEAD --format html --kind gemm",
     "the same for the gemm kind, written to reports/main..HEAD.stack.html"),
))
@click.argument("commits", metavar="BASE..HEAD")
@survey_options
@report_options(Stack, html_name="<base>..<head>.stack.html")
@columns_option
def stack(commits: str, targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
          jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool, fmt: str,
          output: Path | None, limit: int, columns: int | None, toolchain: str | None) -> None:
    """Survey every commit of BASE..HEAD (first parents, oldest first) and report each against its
    parent, plus HEAD against BASE, in one report. Stored surveys are reused. Exit status 0."""
    from ..output.progress import survey_progress

    start = repo.resolve()
    with command_errors():
        options = make_survey_options(targets, kinds, keys, jobs, timeout, toolchain)
        base, commits_in_range = commit_range(start, commits)
        store = open_store(store_dir, start)
        with survey_store(store, options) as used, survey_progress(enabled=not quiet) as progress:
            surveys = obtain_surveys(start, [base, *(c.sha for c in commits_in_range)], used, options, progress)
            # Name the ends as the user did ("main", "HEAD"); the commits between by short sha.
            base_rev, head_rev = commits.split("..")
            surveys = [replace(s, label=s.commit[:10] if s.commit else s.label) for s in surveys]
            surveys[0] = replace(surveys[0], label=f"{base_rev or 'HEAD'} ({base[:10]})")
            surveys[-1] = replace(surveys[-1], label=f"{head_rev or 'HEAD'} ({commits_in_range[-1].sha[:10]})")
            result = make_stack(surveys, [c.subject for c in commits_in_range])
            # Where each step's registers moved, and the first compiler stage each build differs at, from the
            # objects (while a selection's own store exists).
            def enriched(comparison: Comparison) -> Comparison:
                return explained(comparison, used.objects, start, options.jobs, progress,
                                 (options.toolchain, options.toolchain))
            result = replace(result, overall=enriched(result.overall),
                             steps=tuple(replace(step, comparison=enriched(step.comparison)) for step in result.steps))
    text = render(result, fmt, report_style(columns, terminal=output is None, limit=limit))
    name = (f"{filename_part(base_rev or 'HEAD', result.base.commit)}.."
            f"{filename_part(head_rev or 'HEAD', result.head.commit)}.stack.html")
    write_report(text, fmt, output, default_report_path(start, name))
    sys.exit(EXIT_OK)
