"""``regsurvey upgrade --from A [--to B] [REV]``: one revision surveyed with two toolchains, compared build by
build as ``diff`` compares two commits."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..diff.core import compare
from ..engine.other_toolchain import toolchain_name
from ..model.comparison import Comparison
from ..output.formats import render
from ..revisions.obtain import open_store
from ..revisions.range import survey_store, upgrade_surveys
from .common import EXIT_OK, command_errors, explained, fail
from .helptext import examples
from .options import (
    columns_option,
    default_report_path,
    filename_part,
    make_survey_options,
    report_options,
    report_style,
    resolved_toolchain,
    selection_options,
    store_options,
    write_report,
)

_TOOLCHAIN = ("a Python environment whose Triton and torch the survey uses: its interpreter or its directory (a "
              "venv's bin/python), or 'current' (this environment's)")


@click.command(epilog=examples(
    ("regsurvey upgrade --from old",
     "the working tree with the Triton of the venv old/ against this environment's, build by build"),
    ("regsurvey upgrade --from .venv-main --to .venv HEAD --target gfx950 --format html",
     "HEAD on gfx950 under two venvs' Tritons, written to reports/upgrade.HEAD.<from>..<to>.html"),
))
@click.argument("rev", required=False, metavar="[REV]")
@click.option("--from", "from_toolchain", required=True, metavar="PATH", help=f"The toolchain before: {_TOOLCHAIN}.")
@click.option("--to", "to_toolchain", default="current", show_default=True, metavar="PATH",
              help="The toolchain after, named the same way.")
@selection_options()
@store_options
@click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), help="Run as if started in this directory.")
@report_options(Comparison, html_name="upgrade.<rev>.<from>..<to>.html")
@columns_option
def upgrade(rev: str | None, from_toolchain: str, to_toolchain: str, targets: tuple[str, ...],
            kinds: tuple[str, ...], keys: tuple[str, ...], jobs: int | None, timeout: float, quiet: bool,
            store_dir: Path | None, repo: Path, fmt: str, output: Path | None, limit: int,
            columns: int | None) -> None:
    """Survey REV (a git revision; default: the working tree) with two toolchains and compare the surveys
    build by build.

    Each build is marked as `diff` marks two commits' (worse, mixed, newly failing, better, fixed ...),
    judged across the toolchains instead of "not comparable"; the report names each part of the toolchain
    that differs (Triton, ptxas, the AMD codegen revision, the fp-fusion default). Stored surveys made
    with either toolchain are reused. Exit status 0 whatever changed; `regsurvey check --base REV
    --base-toolchain PATH` gates the same comparison.
    """
    from ..output.progress import survey_progress

    start = repo.resolve()
    with command_errors():
        options = make_survey_options(targets, kinds, keys, jobs, timeout)
        before = resolved_toolchain(from_toolchain, "--from")
        after = resolved_toolchain(to_toolchain, "--to")
        if before == after:
            fail(f"--from {from_toolchain} and --to {to_toolchain} are the same toolchain "
                 f"({before or 'this environment'}): nothing to compare")
        store = open_store(store_dir, start)
        with survey_store(store, options) as used, survey_progress(enabled=not quiet) as progress:
            old, new = upgrade_surveys(start, rev, used, options, (before, after), progress)
            comparison = explained(compare(old, new, across_toolchains=True), used.objects, start, options.jobs,
                                   progress, (before, after))
    text = render(comparison, fmt, report_style(columns, terminal=output is None, limit=limit))
    name = (f"upgrade.{filename_part(rev, comparison.head.commit)}.{filename_part(toolchain_name(before))}.."
            f"{filename_part(toolchain_name(after))}.html")
    write_report(text, fmt, output, default_report_path(start, name))
    sys.exit(EXIT_OK)
