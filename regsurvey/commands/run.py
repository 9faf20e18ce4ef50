"""``regsurvey run``: survey one commit (or the working tree) and print or emit the result."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..engine.errors import SurveyError
from ..model.options import SurveyOptions
from ..model.results import Survey
from ..model.targets import get_target
from ..revisions.obtain import obtain_survey, open_store
from .common import EXIT_FINDINGS, EXIT_OK, command_errors, split_csv, usable_cores
from .options import survey_options


@click.command()
@click.option("--commit", "rev", metavar="REV", help="Survey this git revision (in a temporary worktree). "
              "Default: the working tree as it is.")
@survey_options
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--strict", is_flag=True, help="Exit 1 if any key fails to build.")
@click.option("--force", is_flag=True, help="Compile every key again: reuse neither a stored survey of this "
              "commit nor stored results of identical kernels, and have Triton compile every launch (warmups "
              "too) past its own cache (~/.triton/cache, TRITON_CACHE_DIR), which it writes anew. Stored as any "
              "survey, except that it leaves a stored survey of a target holding more kinds as it is.")
def run(rev: str | None, targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
        jobs: int | None, timeout: float, fmt: str, store_dir: Path | None, repo: Path, strict: bool,
        quiet: bool, force: bool) -> None:
    """Compile every key of a commit for every target and report its resources."""
    from ..output.progress import survey_progress

    options = SurveyOptions(targets=split_csv(targets) or None, kinds=kinds, keys=keys,
                            jobs=jobs or usable_cores(), timeout=timeout, reuse_results=not force)
    start = repo.resolve()
    with command_errors():
        if options.targets:
            options = SurveyOptions(**{**options.__dict__,
                                       "targets": tuple(get_target(t).name for t in options.targets)})
        store = open_store(store_dir, start)
        try:
            with survey_progress(enabled=not quiet) as progress:
                survey = obtain_survey(start, rev, store, options, progress, reuse=not force)
        except SurveyError as exc:
            if fmt == "json" and exc.traceback:  # a keys file raised: the whole traceback for whoever reads the JSON
                click.echo(json.dumps({"error": str(exc), "traceback": exc.traceback}, indent=1))
            raise
    if fmt == "json":
        click.echo(survey.to_json())
    else:
        from rich.console import Console

        from ..output.table import print_survey

        print_survey(survey, Console())
    sys.exit(EXIT_FINDINGS if strict and _any_failed(survey) else EXIT_OK)


def _any_failed(survey: Survey) -> bool:
    return any(r.failed for r in survey.rows)
