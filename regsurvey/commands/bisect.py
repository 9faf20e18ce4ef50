"""``regsurvey bisect GOOD BAD``: the first commit where a figure of the matching builds changes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..model.bisect import BisectResult
from ..model.words import ARROW, ASCII_ARROW
from ..revisions.obtain import open_store
from .common import EXIT_FINDINGS, EXIT_OK, command_errors, split_csv
from .helptext import examples
from .options import (
    TARGET_NAMES,
    check_figures,
    columns_option,
    format_option,
    make_survey_options,
    report_style,
    store_options,
    toolchain_option,
    write_report,
)


@click.command(epilog=examples(
    ("regsurvey bisect v1.0 main --key 'mla_decode/tp4/*' --figure vgpr",
     "the first commit after v1.0 where the VGPRs of mla_decode/tp4's builds differ from v1.0's"),
    ("regsurvey bisect HEAD~50 HEAD --key 'gemm/*' --figure spill_store_bytes --above 0 --target sm90",
     "the first of the last 50 commits where a gemm build spills on sm90"),
))
@click.argument("good", metavar="GOOD")
@click.argument("bad", metavar="BAD")
@click.option("--key", "key", required=True, metavar="GLOB",
              help="The builds to watch: keys whose id matches, e.g. 'mla_decode/tp4/*'. Only these are surveyed.")
@click.option("--figure", required=True, metavar="NAME",
              help="The figure to watch (its name in the survey JSON: vgpr, vgpr_spill, regs, spill_store_bytes ...).")
@click.option("--above", type=int, default=None, metavar="N",
              help="Look for the first commit where the figure exceeds N in a matching build (default: where it "
                   "differs from GOOD's in a build GOOD has).")
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET",
              help=f"Only builds for these targets (repeat or comma-separate: {TARGET_NAMES}).")
@format_option(BisectResult, help="How the found commit's diff against its parent is shown.")
@click.option("-j", "--jobs", type=click.IntRange(1), default=None, help="Worker processes (default: usable cores).")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds one key may take before it is marked error.")
@store_options
@click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), help="Run as if started in this directory.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress on stderr (bars in a terminal, a line every 10 s elsewhere).")
@columns_option
@toolchain_option
def bisect(good: str, bad: str, key: str, figure: str, above: int | None, targets: tuple[str, ...], fmt: str,
           jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool,
           columns: int | None, toolchain: str | None) -> None:
    """Find the first commit of GOOD..BAD (first parents) where FIGURE of the builds matching --key
    changes from GOOD's (or, with --above N, exceeds N), by binary search: about log2(n) commits are
    surveyed, only for the matching keys, stored surveys and unchanged kernels reused. A commit whose
    matching builds fail (or that has none) is skipped, as `git bisect skip` does.

    Prints the commit, its message, and its diff against its parent. Exit status 0 when found, 1 when
    no commit of the range shows the change or skipped commits leave it open, 2 for bad input.
    """
    from ..output.bisect import verdict_line
    from ..output.formats import render
    from ..output.progress import survey_progress
    from ..revisions.bisect import BisectError, Verdict, bisect_range

    check_figures((figure,))
    arrow = ASCII_ARROW if fmt == "json" else ARROW  # in the verdicts' words: the JSON's are ASCII
    start = repo.resolve()

    def said(sha: str, verdict: Verdict) -> None:
        if not quiet:
            click.echo(verdict_line(sha, verdict, arrow), err=True)

    with command_errors(BisectError):
        options = make_survey_options(tuple(split_csv(targets)), (), (key,), jobs, timeout, toolchain)
        store = open_store(store_dir, start)
        result = bisect_range(start, good, bad, store, options, figure, above,
                              lambda: survey_progress(enabled=not quiet), said)
    write_report(render(result, fmt, report_style(columns) if fmt == "table" else report_style()), fmt)
    sys.exit(EXIT_OK if result.first is not None else EXIT_FINDINGS)
