"""``regsurvey bisect GOOD BAD``: the first commit where a figure of the matching builds changes."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import click

from ..model.results import Survey
from ..model.words import ARROW, ASCII_ARROW, count
from ..revisions.checkout import commit_message
from ..revisions.obtain import open_store
from ..revisions.range import commit_range, selection_survey
from .common import EXIT_FINDINGS, EXIT_OK, command_errors, fail, split_csv
from .helptext import examples
from .options import check_figures, columns_option, make_survey_options, store_options, table_style


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
              help="Only builds for these targets (repeat or comma-separate).")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table", show_default=True,
              help="How the found commit's diff against its parent is shown.")
@click.option("-j", "--jobs", type=click.IntRange(1), default=None, help="Worker processes (default: usable cores).")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds one key may take before it is marked error.")
@store_options
@click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), help="Run as if started in this directory.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress on stderr (bars in a terminal, a line every 10 s elsewhere).")
@columns_option
def bisect(good: str, bad: str, key: str, figure: str, above: int | None, targets: tuple[str, ...], fmt: str,
           jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool,
           columns: int | None) -> None:
    """Find the first commit of GOOD..BAD (first parents) where FIGURE of the builds matching --key
    changes from GOOD's (or, with --above N, exceeds N), by binary search: about log2(n) commits are
    surveyed, only for the matching keys, stored surveys and unchanged kernels reused. A commit whose
    matching builds fail (or that has none) is skipped, as `git bisect skip` does.

    Prints the commit, its message, and its diff against its parent. Exit status 0 when found, 1 when
    no commit of the range shows the change or skipped commits leave it open, 2 for bad input.
    """
    from ..diff.core import compare
    from ..output.formats import get_format
    from ..output.progress import survey_progress
    from ..revisions.bisect import SKIP, Verdict, judge_survey, search

    check_figures((figure,))
    arrow = ASCII_ARROW if fmt == "json" else ARROW  # in the verdicts' words: the JSON's are ASCII
    start = repo.resolve()
    with command_errors():
        options = make_survey_options(tuple(split_csv(targets)), (), (key,), jobs, timeout)
        base, commits = commit_range(start, f"{good}..{bad}")
        store = open_store(store_dir, start)
        surveys: dict[str, Survey] = {}
        made = 0
        # How each survey is announced: GOOD, or the commit's place in the range.
        places = {base: "GOOD", **{c.sha: f"commit {i} of {len(commits)}" for i, c in enumerate(commits, start=1)}}

        def survey_of(sha: str) -> Survey:
            nonlocal made
            if sha not in surveys:
                with survey_progress(enabled=not quiet) as progress:
                    named = progress.named(f"{sha[:10]}, {places[sha]}")
                    survey, fresh = selection_survey(start, sha, store, options, named)
                surveys[sha] = survey
                made += fresh
            return surveys[sha]

        reference: dict[str, int] | None = None
        if above is None:
            first = judge_survey(survey_of(base), figure, None, None, arrow)
            if first.verdict == SKIP:
                fail(f"GOOD ({good}) cannot be judged: {first.why}")
            reference = first.values
        verdicts: dict[int, Verdict] = {}

        def judge(i: int) -> str:
            verdicts[i] = judge_survey(survey_of(commits[i].sha), figure, reference, above, arrow)
            v = verdicts[i]
            if not quiet:
                detail = f": {v.why}" if v.why else ""
                click.echo(f"regsurvey: bisect: {commits[i].sha[:10]} {v.verdict}{detail}", err=True)
            return v.verdict

        def parent_of(i: int) -> str:
            return commits[i - 1].sha if i else base

        found = search(len(commits), judge)
        if found.first is not None:
            # The answer is shown against its parent: a probe judged that one, or it is GOOD, which --above
            # does not judge (surveyed here).
            survey_of(parent_of(found.first))
    n = len(commits)
    what = f"{figure} of {key!r}" + (f" above {above}" if above is not None else " changes from GOOD's")
    tally = (f"{len(surveys)} of {count(n + 1, 'commit')} surveyed for the matching keys ({made} now, "
             f"{len(surveys) - made} from the store)")
    if found.first is None:
        if not found.candidates:
            click.echo(f"no commit of {good}..{bad} shows {what}: {bad} itself does not. {tally}")
        else:
            listed = "\n".join(f"  {commits[i].sha[:10]} {commits[i].subject}"
                               + (f" (skipped: {verdicts[i].why})" if i in verdicts and verdicts[i].verdict == SKIP
                                  else "") for i in found.candidates)
            click.echo(f"skipped commits leave it open: the first commit showing {what} is one of\n{listed}\n{tally}")
        sys.exit(EXIT_FINDINGS)
    commit, parent = commits[found.first], parent_of(found.first)
    comparison = compare(surveys[parent], surveys[commit.sha])
    short = lambda sha: sha[:10]  # noqa: E731
    comparison = replace(comparison, base=replace(comparison.base, label=short(parent)),
                         head=replace(comparison.head, label=short(commit.sha)))
    message = commit_message(start, commit.sha)
    shown = verdicts.get(found.first)
    if fmt == "json":
        data = {"commit": commit.sha, "subject": commit.subject, "message": message, "figure": figure, "key": key,
                "above": above, "shows": shown.why if shown else "", "surveyed": len(surveys), "surveyed_now": made,
                "steps": [{"commit": commits[i].sha, "verdict": verdicts[i].verdict, "why": verdicts[i].why}
                          for i in found.probes],
                "diff": json.loads(get_format("json").format(comparison))}
        click.echo(json.dumps(data, indent=1))
        sys.exit(EXIT_OK)
    click.echo(f"first commit where {what}: {commit.sha}")
    click.echo("")
    click.echo("\n".join(f"    {line}" for line in message.splitlines()) or "    (no message)")
    click.echo("")
    if shown and shown.why:
        click.echo(f"it shows in: {shown.why}")
    click.echo(", ".join(f"{commits[i].sha[:10]} {verdicts[i].verdict}" for i in found.probes))
    click.echo(tally)
    click.echo("")
    style = table_style(columns) if fmt == "table" else {}
    click.echo(get_format(fmt, **style).format(comparison).rstrip())
    sys.exit(EXIT_OK)
