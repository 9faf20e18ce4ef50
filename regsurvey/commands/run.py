"""``regsurvey run``: survey one commit (or the working tree) and print or emit the result."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..engine.survey import SurveyOptions
from ..model.results import Survey
from ..model.targets import get_target
from ..revisions.obtain import obtain_survey, open_store
from .common import EXIT_FINDINGS, EXIT_OK, command_errors, split_csv, usable_cores


@click.command()
@click.option("--commit", "rev", metavar="REV", help="Survey this git revision (in a temporary worktree). "
              "Default: the working tree as it is.")
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET",
              help="Targets to compile for (repeat or comma-separate); overrides the keys' matrices.")
@click.option("--kind", "kinds", multiple=True, metavar="GLOB", help="Only kinds matching this pattern.")
@click.option("--key", "keys", multiple=True, metavar="GLOB",
              help="Only keys whose id matches, e.g. 'mla_decode/tp8/*'.")
@click.option("-j", "--jobs", type=click.IntRange(1), default=None,
              help="Worker processes (default: the number of usable cores).")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds one key may take before it is marked error.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where surveys and objects are kept (default: .regsurvey/ at the repository root).")
@click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), help="Run as if started in this directory.")
@click.option("--strict", is_flag=True, help="Exit 1 if any key fails to build.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--force", is_flag=True, help="Compile every key again: reuse neither a stored survey of this "
              "commit nor stored results of identical kernels.")
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
        with survey_progress(enabled=not quiet) as progress:
            survey = obtain_survey(start, rev, store, options, progress, reuse=not force)
    if fmt == "json":
        click.echo(survey.to_json())
    else:
        from rich.console import Console

        from ..output.table import print_survey

        print_survey(survey, Console())
    sys.exit(EXIT_FINDINGS if strict and _any_failed(survey) else EXIT_OK)


def _any_failed(survey: Survey) -> bool:
    return any(r.failed for r in survey.rows)
