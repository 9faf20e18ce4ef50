"""``regsurvey prune``: the autotune configs a survey found not worth benchmarking, as a table a project ships
and reads at run time (``regsurvey.tuning.prune_by_survey``)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from ..model.words import ARROW
from ..revisions.obtain import obtain_survey, open_store
from ..revisions.range import is_survey_file, load_survey_file
from ..store.files import write_text
from ..tuning.select import DEFAULT_SPILL_ABOVE, prune_table, table_lines
from .common import EXIT_OK, command_errors, writing
from .helptext import examples
from .options import make_survey_options, survey_options


@click.command(epilog=examples(
    ("regsurvey prune --target gfx950,sm90 -o prune.json",
     "survey the working tree and write the configs each target should not benchmark"),
    ("regsurvey prune --commit survey.json --spill-above 0 -o prune.json",
     "from a saved survey: prune every config that spills at all"),
))
@click.option("--commit", "rev", metavar="REV", help="Survey this git revision (in a temporary worktree), or read "
              "this survey JSON file. Default: the working tree as it is.")
@survey_options
@click.option("--spill-above", "spill_above", type=click.IntRange(0), default=DEFAULT_SPILL_ABOVE, show_default=True,
              metavar="BYTES", help="Prune a config whose builds spill more than this many bytes per lane (AMD "
              "scratch) or thread (NVIDIA spill stores). Configs that cannot launch or fail to build are "
              "always pruned.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the table here (default: stdout).")
@click.option("--force", is_flag=True, help="Compile every key again, as run --force does.")
def prune(rev: str | None, targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
          jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool,
          toolchain: str | None, spill_above: int, output: Path | None, force: bool) -> None:
    """Write the prune table: per target, the autotune configs that spill past --spill-above, cannot
    launch (occupancy 0: LDS or shared memory over the limit) or fail to build, with their figures and
    compile seconds, as JSON.

    A project passes it to triton.autotune(prune_configs_by={"early_config_prune":
    regsurvey.tuning.prune_by_survey("prune.json", "kernel_name")}) to skip those configs on the GPU it
    runs on.
    """
    from ..output.progress import survey_progress

    start = repo.resolve()
    with command_errors():
        options = replace(make_survey_options(targets, kinds, keys, jobs, timeout, toolchain), reuse_results=not force)
        if is_survey_file(rev):
            assert rev is not None
            survey = load_survey_file(rev, options)
        else:
            store = open_store(store_dir, start)
            with survey_progress(enabled=not quiet) as progress:
                survey = obtain_survey(start, rev, store, options, progress, reuse=not force)
    table = prune_table(survey, spill_above)
    text = table.to_json() + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        with writing(output):
            output.parent.mkdir(parents=True, exist_ok=True)
            write_text(output, text)
    for line in table_lines(table):
        click.echo(line, err=True)
    if output is not None:
        click.echo(f"prune table {ARROW} {output}", err=True)
    sys.exit(EXIT_OK)
