"""``regsurvey history A..B``: chosen figures over every commit of a range, as charts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ..model.history import History
from ..model.words import count
from ..repo.checkout import commit_message
from ..revisions.obtain import open_store
from ..revisions.range import commit_range, selection_survey
from .common import EXIT_OK, command_errors, split_csv
from .helptext import examples
from .options import (
    check_figures,
    default_report_path,
    filename_part,
    format_option,
    make_survey_options,
    survey_options,
    write_report,
)


@click.command(epilog=examples(
    ("regsurvey history HEAD~20..HEAD --kind mla_decode",
     "mla_decode's registers and spills over the last 20 commits, as charts in reports/"),
    ("regsurvey history v1.0..main --figure vgpr_spill,spill_store_bytes --every 5 --format markdown",
     "two spill figures at every fifth commit since v1.0, as Markdown tables on stdout"),
))
@click.argument("commits", metavar="A..B")
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
                   "repository root, the selection's targets, kinds, keys, figures and --every in its name; the others "
                   "to stdout).")
def history(commits: str, figures: tuple[str, ...], every: int, targets: tuple[str, ...], kinds: tuple[str, ...],
            keys: tuple[str, ...], jobs: int | None, timeout: float, store_dir: Path | None, repo: Path,
            quiet: bool, fmt: str, output: Path | None, toolchain: str | None) -> None:
    """Figures over the commits of A..B: A, then every commit up to B along first parents, each
    surveyed (stored surveys are reused; a selection of kinds or keys reuses a stored survey of every
    key, else surveys only those keys, their unchanged kernels from the store's results).

    The HTML page draws, per kind and target, each figure over the commits: the largest value over the
    kind's builds as a line, the spread to the smallest as a band, failing builds as red crosses; each
    point links to its commit's diff against the one before it, summarized below the charts.
    """
    from ..diff.history import DEFAULT_FIGURES
    from ..diff.history import history as make_history
    from ..output.formats import render
    from ..output.progress import survey_progress

    chosen = check_figures(split_csv(figures) or DEFAULT_FIGURES, measured=True)
    start = repo.resolve()
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
