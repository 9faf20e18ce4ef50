"""``regsurvey fix``: a build that spills (or runs at low occupancy) compiled again with the knobs a kernel
engineer turns, the variants ranked."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..model.fix import FixReport
from ..model.words import count
from ..revisions.fix import DEFAULT_MAX_VARIANTS, FixInputError, sweep
from ..revisions.obtain import open_store
from ..tuning.sweep import SpaceError, parse_knob
from .common import EXIT_OK, command_errors
from .helptext import examples
from .options import format_option, make_survey_options, report_style, survey_options, write_report


@click.command(epilog=examples(
    ("regsurvey fix 'fp8_linear/q_a/width4' --config 22 -t gfx950",
     "rank the variants of one autotune config's build: each knob alone, then the other configs' block sizes"),
    ("regsurvey fix 'moe/*' -t sm90 --knob num_warps=4,8 --knob maxnreg=168,255",
     "every spilling build of the moe keys, the knobs' values combined"),
))
@click.argument("key", required=False)
@click.option("--commit", "rev", metavar="REV", help="Sweep the builds of this git revision (default: the working "
              "tree). Its stored survey is reused.")
@click.option("--kernel", metavar="NAME", help="Only the builds of this kernel, or of the launches the kind body "
              "gave this name (rs.name).")
@click.option("--config", type=click.IntRange(0), default=None, help="Only the build of this autotune config.")
@click.option("--launch", type=click.IntRange(0), default=None,
              help="Only the build of this launch of the key (its index: a kernel launched twice, [launch 1]).")
@click.option("--knob", "knobs", multiple=True, metavar="NAME=V1,V2",
              help="Sweep this knob over these values (repeat; the knobs' values are then combined): a launch "
                   "option of the target (num_warps, num_stages, waves_per_eu, matrix_instr_nonkdim, kpack, "
                   "maxnreg ...), sched_strategy (AMD: the LLVM scheduler strategy), or a constexpr of the "
                   "kernel (BLOCK_K). Default: each knob of the target alone, and the block sizes of the "
                   "kernel's own autotune configs.")
@click.option("--max", "limit", type=click.IntRange(1), default=DEFAULT_MAX_VARIANTS, show_default=True,
              help="Refuse a sweep of more variants than this (controls included).")
@click.option("--patch", "patch_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the best variants as a patch to the config files their launchers read them from "
                   "(vLLM's tuned MoE configs ...), where they did; none: the file is not written.")
@format_option(FixReport)
@survey_options
def fix(key: str | None, rev: str | None, kernel: str | None, config: int | None, launch: int | None,
        knobs: tuple[str, ...], limit: int, patch_file: Path | None, fmt: str, targets: tuple[str, ...],
        kinds: tuple[str, ...], keys: tuple[str, ...],
        jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool,
        toolchain: str | None) -> None:
    """Compile KEY's builds again with their launch options and constexprs changed, and rank the variants:
    fewer spill instructions in loops first, then fewer spills, higher occupancy, fewer registers.

    KEY is a key id or a glob (default: every key --kind and --key select); where it selects several builds,
    those that spill or run at low occupancy are swept. Each variant is proven to have reached the code (its
    object differs from the base's, else it says 'no effect'), and a control variant (a launch option that
    never changes the code) must come out as the base's object. Before compiling, it says how many variants
    and about how long; -j, the warm server and the result cache apply as in a survey.
    """
    from ..output.formats import render
    from ..output.progress import survey_progress

    # The base survey: of KEY's selection alone where no --key narrows it (a stored survey of every key
    # serves it too).
    start = repo.resolve()
    with command_errors(FixInputError, SpaceError):
        parsed = [parse_knob(k) for k in knobs]
        options = make_survey_options(targets, kinds, keys or ((key,) if key else ()), jobs, timeout, toolchain)
        store = open_store(store_dir, start)
        with survey_progress(enabled=not quiet) as progress:
            report = sweep(start, rev, store, options, key=key, kernel=kernel, config=config, knobs=parsed,
                           limit=limit, announce=lambda line: click.echo(line, err=True), progress=progress,
                           launch=launch)
    write_report(render(report, fmt, report_style()), fmt)
    if patch_file is not None:
        patches = [build.patch for build in report.builds if build.patch]
        if patches:
            patch_file.write_text("".join(patches))
            click.echo(f"fix: wrote {count(len(patches), 'patch')} to {patch_file}", err=True)
        else:
            click.echo(f"fix: no best variant's launch took its config from a file: {patch_file} not written",
                       err=True)
    sys.exit(EXIT_OK)
