"""``regsurvey history A..B``: chosen figures over every commit of a range, as charts; ``regsurvey history
--toolchains A,B,... [REV]``: over a list of toolchains (Python environments' Tritons) surveying one revision."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..model.history import History
from ..model.words import count
from ..repo.checkout import commit_message
from ..revisions.obtain import open_store
from ..revisions.range import commit_range, selection_survey
from .common import EXIT_OK, command_errors, fail, split_csv
from .helptext import examples
from .options import (
    check_figures,
    default_report_path,
    filename_part,
    format_option,
    make_survey_options,
    resolved_toolchain,
    survey_options,
    write_report,
)

if TYPE_CHECKING:
    from ..model.options import SurveyOptions


@click.command(epilog=examples(
    ("regsurvey history HEAD~20..HEAD --kind mla_decode",
     "mla_decode's registers and spills over the last 20 commits, as charts in reports/"),
    ("regsurvey history v1.0..main --figure vgpr_spill,spill_store_bytes --every 5 --format markdown",
     "two spill figures at every fifth commit since v1.0, as Markdown tables on stdout"),
    ("regsurvey history --toolchains .venv-36,.venv-37,.venv-38,current HEAD",
     "HEAD under four Tritons in turn, each against the one before: which release moved a figure"),
))
@click.argument("commits", metavar="A..B|REV", required=False)
@click.option("--toolchains", "toolchains", multiple=True, metavar="PATH,PATH...",
              help="Instead of commits, one revision (REV; default: the working tree) under each of these "
                   "toolchains in turn, each judged against the one before across the toolchains (as upgrade "
                   "judges two): Python environments, each its interpreter or its directory (a venv's "
                   "bin/python), or 'current' (this environment's); two or more, comma-separated or repeated, "
                   "in the order to draw them (oldest first, as a rule).")
@click.option("--figure", "figures", multiple=True, metavar="NAME",
              help="Figures to draw (repeat or comma-separate; names as in the survey JSON, e.g. vgpr, "
                   "vgpr_spill, occupancy, regs, spill_store_bytes; compile_s: compile time in seconds). "
                   "Default: registers and spills of each vendor.")
@click.option("--every", type=click.IntRange(1), default=1, show_default=True,
              help="Survey one commit in N of a long range (the last one always).")
@survey_options
@format_option(History)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the report here (default: HTML to reports/<A>..<B>[.<selection>].history.html at the "
                   "repository root, the selection's targets, kinds, keys, figures and --every in its name; across "
                   "--toolchains reports/<REV>.<triton>..<triton>[.<selection>].history.html; the others to stdout).")
def history(commits: str | None, figures: tuple[str, ...], every: int, targets: tuple[str, ...], kinds: tuple[str, ...],
            keys: tuple[str, ...], jobs: int | None, timeout: float, store_dir: Path | None, repo: Path,
            quiet: bool, fmt: str, output: Path | None, toolchain: str | None,
            toolchains: tuple[str, ...]) -> None:
    """Figures over the commits of A..B: A, then every commit up to B along first parents, each
    surveyed (stored surveys are reused; a selection of kinds or keys reuses a stored survey of every
    key, else surveys only those keys, their unchanged kernels from the store's results). With
    --toolchains: over those toolchains instead, one revision (REV, default the working tree) surveyed
    under each.

    The HTML page draws, per kind and target, each figure over the commits: the largest value over the
    kind's builds as a line, the spread to the smallest as a band, failing builds as red crosses; each
    point links to its commit's diff against the one before it, summarized below the charts. Across
    toolchains each point is a toolchain, named by its Triton (triton 3.8.0), and each step says what
    differs in the toolchain and the first compiler stage whose output differs.
    """
    from ..diff.history import DEFAULT_FIGURES
    from ..diff.history import history as make_history
    from ..output.formats import render
    from ..output.progress import survey_progress

    chosen = check_figures(split_csv(figures) or DEFAULT_FIGURES, measured=True)
    start = repo.resolve()
    if toolchains:
        _refuse_with_toolchains(commits, every, toolchain)
        with command_errors():
            options = make_survey_options(targets, kinds, keys, jobs, timeout)
            result, commit = _toolchain_history(start, commits, split_csv(toolchains), options, store_dir, chosen,
                                                quiet)
        names = "..".join(filename_part(c.toolchain or "") for c in result.commits)
        if len(names) > 100:  # many, or told apart by where each is: cut, with a hash of the whole
            import hashlib

            names = names[:84] + "-" + hashlib.sha256(names.encode()).hexdigest()[:10]
        name = (f"{filename_part(commits, commit)}.{names}"
                f"{_selection_part(options.targets or (), kinds, keys, chosen, 1)}.history.html")
        write_report(render(result, fmt), fmt, output, default_report_path(start, name))
        sys.exit(EXIT_OK)
    if commits is None:
        raise click.MissingParameter(param_hint="'A..B'", param_type="argument")
    with command_errors():
        options = make_survey_options(targets, kinds, keys, jobs, timeout, toolchain)
        base, in_range = commit_range(start, commits)
        indices = list(range(len(in_range)))[::-1][::every][::-1]  # one in N, counted back from B (always in)
        picked = [in_range[i] for i in indices]
        # The commits each point's diff covers: a change it shows lies in one of them.
        spans = [0, *(i - before for before, i in zip([-1, *indices], indices))]
        shas = [base, *(c.sha for c in picked)]
        subjects = [commit_message(start, base).partition("\n")[0], *(c.subject for c in picked)]
        store = open_store(store_dir, start)
        surveys = []
        made = 0
        with survey_progress(enabled=not quiet) as progress:
            for number, sha in enumerate(shas, start=1):
                named = progress.numbered(number, len(shas), "commit").named(sha[:10])
                survey, fresh = selection_survey(start, sha, store, options, named)
                surveys.append(survey)
                made += fresh
        if not quiet:
            click.echo(f"regsurvey: {count(len(shas), 'commit')}, {made} surveyed now, {len(shas) - made} from the "
                       "store", err=True)
        result = make_history(commits, surveys, subjects, chosen, every, spans)
    text = render(result, fmt)
    base_rev, head_rev = commits.split("..")
    name = (f"{filename_part(base_rev or 'HEAD', base)}..{filename_part(head_rev or 'HEAD', picked[-1].sha)}"
            f"{_selection_part(options.targets or (), kinds, keys, chosen, every)}.history.html")
    write_report(text, fmt, output, default_report_path(start, name))
    sys.exit(EXIT_OK)


def _refuse_with_toolchains(rev: str | None, every: int, toolchain: str | None) -> None:
    """Bad input beside --toolchains, in one line: a range (a history over commits), --every, --toolchain."""
    if rev is not None and ".." in rev and not rev.endswith(".json"):
        fail(f"--toolchains surveys one revision under each toolchain, not the range {rev} (a history over "
             "commits takes no --toolchains; --toolchain surveys a range with another toolchain)")
    if every != 1:
        fail("--every samples commits of a range: a history across --toolchains surveys one revision under each")
    if toolchain is not None:
        fail("--toolchain and --toolchains: name every toolchain in --toolchains ('current' for this environment's)")


def _toolchain_history(start: Path, rev: str | None, specs: tuple[str, ...], options: SurveyOptions,
                       store_dir: Path | None, figures: tuple[str, ...], quiet: bool) -> tuple[History, str | None]:
    """The history of ``rev`` (None: the working tree) over the toolchains ``specs`` name (``--toolchains``),
    and the revision's commit: each toolchain's survey (stored ones reused, each in its toolchain's part of
    the store: revisions.range.upgrade_surveys), each step compared across the toolchains with each build's
    first differing compiler stage. SurveyError, CheckoutError for bad input."""
    from ..diff.core import compare
    from ..diff.history import toolchain_history
    from ..engine.errors import SurveyError
    from ..engine.ray_address import ray_address
    from ..first_stage import first_differences
    from ..model.history import WORKING_TREE
    from ..output.progress import survey_progress
    from ..revisions.range import survey_store, toolchain_names, upgrade_surveys

    if len(specs) < 2:
        raise SurveyError(f"--toolchains needs two toolchains or more to compare, got {len(specs)} "
                          f"({', '.join(specs) or 'none'}); upgrade --from A compares one with this environment's")
    resolved: list[str | None] = []
    for spec in specs:
        python = resolved_toolchain(spec, "--toolchains")
        if python in resolved:
            first = specs[resolved.index(python)]
            same = f"{first} and {spec} are" if first != spec else f"{spec} is"
            raise SurveyError(f"--toolchains: {same} the same toolchain ({python or 'this environment'}) given "
                              "twice: name each toolchain once")
        resolved.append(python)
    if ray_address(options) is not None:
        raise SurveyError("--toolchains surveys with local workers only: it cannot be used with --ray (or "
                          "REGSURVEY_RAY)")
    store = open_store(store_dir, start)
    with survey_store(store, options) as used, survey_progress(enabled=not quiet) as progress:
        surveys = upgrade_surveys(start, rev, used, options, resolved, progress, command="history --toolchains")
        comparisons = [first_differences(compare(before, after, across_toolchains=True), used.objects)
                       for before, after in zip(surveys, surveys[1:])]
    names = toolchain_names(surveys, resolved)
    if not quiet:
        click.echo(f"regsurvey: {count(len(surveys), 'toolchain')}: " + ", ".join(names), err=True)
    return (toolchain_history(rev if rev is not None else WORKING_TREE, surveys, list(zip(names, resolved)), figures,
                              comparisons), surveys[0].commit)


def _selection_part(targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
                    figures: tuple[str, ...], every: int) -> str:
    """What the history drew besides its range, as a part of its default file name (``.kind-attn.figure-
    occupancy.every-5``; empty for every key's default figures): two histories of one range over other
    selections or figures are two reports, not one overwriting the other. A part too long for a file name
    is cut, with a hash of the whole so that it stays apart."""
    import hashlib

    from ..diff.history import DEFAULT_FIGURES

    parts = [f"{label}-{'+'.join(values)}" for label, values in (
        ("target", targets), ("kind", kinds), ("key", keys),
        ("figure", () if tuple(figures) == DEFAULT_FIGURES else figures)) if values]
    if every > 1:
        parts.append(f"every-{every}")
    text = ".".join(re.sub(r"[^A-Za-z0-9+_-]+", "_", part) for part in parts)
    if len(text) > 80:
        text = text[:64] + "-" + hashlib.sha256(text.encode()).hexdigest()[:10]
    return f".{text}" if text else ""
