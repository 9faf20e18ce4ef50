"""``regsurvey run``: survey one commit (or the working tree) and print or emit the result."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import click

from ..engine.errors import SurveyError
from ..model.options import SurveyOptions
from ..model.results import Survey
from ..model.targets import get_target
from ..output.problems import ONLY_CHOICES, SurveyReport
from ..revisions.obtain import obtain_survey, open_store
from .common import EXIT_FINDINGS, EXIT_OK, command_errors, split_csv, usable_cores
from .helptext import examples
from .options import (
    columns_option,
    format_option,
    report_style,
    resolved_toolchain,
    survey_options,
    write_report,
)


@click.command(epilog=examples(
    ("regsurvey run --target gfx950,sm90 --kind 'mla_*'", "survey the working tree's MLA kinds for gfx950 and sm90"),
    ("regsurvey run --commit HEAD~1 --format json > base.json",
     "survey the parent commit, as a file that diff takes in place of a revision"),
    ("regsurvey run --target gfx1100,gfx1151,gfx1201,gfx1250,sm103,sm120",
     "the targets surveyed only where named: RDNA 3 to 4, gfx1250, B300, RTX 50-series"),
))
@click.option("--commit", "rev", metavar="REV", help="Survey this git revision (in a temporary worktree). "
              "Default: the working tree as it is.")
@survey_options
@format_option(SurveyReport)
@click.option("--only", "only", type=click.Choice(ONLY_CHOICES), default=None,
              help="Show only the builds that fail, spill or run at low occupancy (problems), or only those of one "
                   "of the three. Low: at most an eighth of the target's most, 1 of 8 waves per SIMD (AMD), 8 of "
                   "64 warps per SM (NVIDIA). Narrows the JSON too; --strict still judges every build.")
@columns_option
@click.option("--strict", is_flag=True, help="Exit 1 if any key fails to build.")
@click.option("--force", is_flag=True, help="Compile every key again: reuse neither a stored survey of this "
              "commit nor stored results of identical kernels, and have Triton compile every launch (warmups "
              "too) past its own cache (~/.triton/cache, TRITON_CACHE_DIR), which it writes anew. Stored as any "
              "survey, except that it leaves a stored survey of a target holding more kinds as it is.")
def run(rev: str | None, targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
        jobs: int | None, timeout: float, fmt: str, store_dir: Path | None, repo: Path, only: str | None,
        columns: int | None, strict: bool, quiet: bool, force: bool, toolchain: str | None) -> None:
    """Compile every key of a commit for every target and report its resources.

    The table ends with a line on what spills, what fails, and each target's lowest occupancy.
    """
    from ..output.formats import render
    from ..output.progress import survey_progress

    options = SurveyOptions(targets=split_csv(targets) or None, kinds=kinds, keys=keys,
                            jobs=jobs or usable_cores(), timeout=timeout, reuse_results=not force)
    start = repo.resolve()
    with command_errors():
        options = replace(options, toolchain=resolved_toolchain(toolchain))
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
    write_report(render(SurveyReport(survey, only), fmt, report_style(columns)), fmt)
    sys.exit(EXIT_FINDINGS if strict and _any_failed(survey) else EXIT_OK)


def _any_failed(survey: Survey) -> bool:
    return any(r.failed for r in survey.rows)
