"""``regsurvey diff BASE [HEAD]``: every build of two revisions, figure by figure, as a report."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from ..diff.core import compare
from ..model.comparison import Comparison
from ..output.formats import render
from ..revisions.obtain import open_store
from ..revisions.range import is_survey_file, obtain_surveys, survey_store
from ..revisions.rebuild import rebuild_check
from .common import EXIT_OK, command_errors, explained, fail
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
    ("regsurvey diff main", "main against the working tree, as tables in the terminal"),
    ("regsurvey diff HEAD~1 HEAD --target gfx950 --format html",
     "the last commit against its parent on gfx950, written to reports/HEAD_1..HEAD.html"),
))
@click.argument("base")
@click.argument("head", required=False)
@survey_options
@report_options(Comparison)
@columns_option
@click.option("--across-toolchains", "across", is_flag=True,
              help="Judge the builds of a backend whose toolchain differs between the surveys (e.g. two survey "
                   "files made with two Tritons) as any others, instead of marking them not comparable; "
                   "`regsurvey upgrade` does for one revision.")
@click.option("--rebuild-check", "rebuild", is_flag=True,
              help="Also compile every key of HEAD twice more, each time from a cold Triton cache, and "
                   "report any object that differs (with its first differing ELF section).")
def diff(base: str, head: str | None, targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
         jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool, fmt: str,
         output: Path | None, limit: int, columns: int | None, across: bool, rebuild: bool,
         toolchain: str | None) -> None:
    """Compare the surveys of BASE and HEAD (default: the working tree) build by build.

    BASE and HEAD are git revisions (or survey JSON files from `regsurvey run --format json`). A stored
    survey made with the toolchain in use is reused; any other revision is surveyed in a temporary
    worktree and stored. Each build is marked worse, mixed (some figures worse, others better), newly
    failing, better, fixed, added, removed, changed (only kernel arguments or lint notes), still failing,
    not comparable (different toolchains, unless --across-toolchains) or unchanged. Exit status 0
    whatever changed.
    """
    from ..output.progress import survey_progress

    start = repo.resolve()
    with command_errors():
        options = make_survey_options(targets, kinds, keys, jobs, timeout, toolchain)
        if rebuild and is_survey_file(head):
            fail("--rebuild-check needs HEAD to be a git revision or the working tree, not a survey file")
        store = open_store(store_dir, start)
        with survey_store(store, options) as used, survey_progress(enabled=not quiet) as progress:
            before, after = obtain_surveys(start, [base, head], used, options, progress)
            comparison = explained(compare(before, after, across_toolchains=across), used.objects, start,
                                   options.jobs, progress, (options.toolchain, options.toolchain))
            if rebuild:
                check = rebuild_check(start, head, used, replace(options, targets=after.targets), progress)
                comparison = replace(comparison, rebuild=check)
    text = render(comparison, fmt, report_style(columns, terminal=output is None, limit=limit))
    name = f"{filename_part(base, comparison.base.commit)}..{filename_part(head, comparison.head.commit)}.html"
    write_report(text, fmt, output, default_report_path(start, name))
    sys.exit(EXIT_OK)
