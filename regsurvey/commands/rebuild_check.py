"""``regsurvey rebuild-check [--commit REV]``: does every key build the same object twice?"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..model.rebuild import RebuildCheck
from ..revisions.obtain import open_store
from ..revisions.rebuild import rebuild_check as check_rebuild
from .common import EXIT_FINDINGS, EXIT_OK, command_errors
from .helptext import examples
from .options import format_option, make_survey_options, survey_options, write_report


@click.command("rebuild-check", epilog=examples(
    ("regsurvey rebuild-check", "every key of the working tree, built twice from a cold cache"),
    ("regsurvey rebuild-check --commit HEAD --kind gemm --target sm90 --format json",
     "the gemm kind of HEAD on sm90, the result as JSON"),
))
@click.option("--commit", "rev", metavar="REV", help="Check this git revision (in a temporary worktree). "
              "Default: the working tree as it is.")
@survey_options
@format_option(RebuildCheck)
def rebuild_check(rev: str | None, targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
                  jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool,
                  fmt: str, toolchain: str | None) -> None:
    """Compile every key twice, each time from a cold Triton cache, and compare the objects.

    Both builds run in one checkout (the objects' debug sections record the source path), each with
    a fresh, empty TRITON_CACHE_DIR. Each build whose object differs is listed with the first
    differing ELF section. Exit status 1 when any build differs, else 0.
    """
    from ..output.formats import Style, render
    from ..output.progress import survey_progress
    from ..revisions.range import survey_store

    start = repo.resolve()
    with command_errors():
        options = make_survey_options(targets, kinds, keys, jobs, timeout, toolchain)
        store = open_store(store_dir, start)
        with survey_store(store, options) as used, survey_progress(enabled=not quiet) as progress:
            result = check_rebuild(start, rev, used, options, progress)
    # The terminal's own width, as rich finds it (no --columns here).
    write_report(render(result, fmt, Style(color=sys.stdout.isatty())), fmt)
    sys.exit(EXIT_OK if result.deterministic else EXIT_FINDINGS)
