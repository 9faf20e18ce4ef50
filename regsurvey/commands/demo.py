"""``regsurvey demo``: a throwaway two-commit repository from the demo suite, diffed, as an HTML report."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import click

from ..diff.summary import summarize
from ..engine.other_toolchain import toolchain_name
from ..model.words import count
from ..output.figure_text import total_line
from ..output.html import HtmlFormat
from ..output.where_text import line_where_sentences
from ..repo.checkout import repo_root
from ..revisions.demo import DEMO_CHANGE, DEMO_KINDS, DEMO_TARGETS, DemoError, run_demo
from ..store.files import write_text
from ..store.store import Store
from .common import BAD_INPUT, EXIT_OK, explained, fail, split_csv, writing
from .helptext import examples
from .options import TARGET_NAMES, make_report_dir, make_survey_options, selection_options, toolchain_option

SHOWN_LINES = 10  # of the summary, in the terminal; the report has them all


@click.command(epilog=examples(
    ("regsurvey demo", "the demo's diff on its default targets, written to reports/demo.html"),
    ("regsurvey demo --target gfx942,sm100 --keep",
     "the same on gfx942 and sm100, keeping the demo repository to try other commands in"),
))
@selection_options(
    target_help=f"Targets (repeat or comma-separate: {TARGET_NAMES}; default: {','.join(DEMO_TARGETS)}).",
    kind_help=f"Kinds to survey (default: {','.join(DEMO_KINDS)}, the one the change touches; "
              "--kind '*' for the whole layer).",
    key_help="Only keys whose id matches, e.g. 'mla_decode/tp4/*' (a quicker look).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the HTML report (default: reports/demo.html at the repository root, "
                   "or in the current directory outside git).")
@click.option("--keep", is_flag=True, help="Keep the throwaway repository (and say where it is).")
@toolchain_option
def demo(targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...], jobs: int | None, timeout: float,
         output: Path | None, keep: bool, quiet: bool, toolchain: str | None) -> None:
    """Show what a diff looks like: the demo suite, a kernel change, and the report.

    Builds a throwaway git repository from the demo suite (decode_layer/ and keys/decode_layer.py),
    commits a change to MLA decode attention on top, surveys both commits and writes the diff as
    reports/demo.html. With --toolchain, both commits are surveyed with that environment's Triton.
    """
    from ..output.progress import survey_progress

    cwd = Path.cwd()
    path = output or (repo_root(cwd) or cwd) / "reports" / "demo.html"
    workdir = Path(tempfile.mkdtemp(prefix="regsurvey-demo-"))
    finished = False
    try:
        options = make_survey_options(split_csv(targets) or DEMO_TARGETS, kinds or DEMO_KINDS, keys, jobs, timeout,
                                      toolchain)
        with_toolchain = f" with {toolchain_name(options.toolchain)}" if options.toolchain else ""
        click.echo(f"demo: the decode-layer suite, then \"{DEMO_CHANGE.message}\"; surveying "
                   f"{', '.join(options.kinds)} on {', '.join(options.targets or ())} for both commits"
                   f"{with_toolchain}", err=True)
        with survey_progress(enabled=not quiet) as progress:
            comparison = run_demo(workdir, options, progress)
            repo = workdir / "decode-layer-demo"
            objects = Store(repo / ".regsurvey").objects
            comparison = explained(comparison, objects, repo, options.jobs, progress,
                                   (options.toolchain, options.toolchain))
        finished = True
    except (DemoError, *BAD_INPUT) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        click.echo("regsurvey: interrupted", err=True)
        sys.exit(130)
    finally:
        # The throwaway repository goes, whatever happened, unless asked to keep a finished one.
        if not (keep and finished):
            shutil.rmtree(workdir, ignore_errors=True)
    if keep:
        click.echo(f"the demo repository: {workdir / 'decode-layer-demo'} (try `regsurvey diff HEAD~1 HEAD`, "
                   "`regsurvey history HEAD~20..HEAD --kind mla_decode` there)")
    lines = summarize(comparison).lines
    for line in lines[:SHOWN_LINES]:
        click.echo(f"- {line.text}")
        for where in line_where_sentences(line):
            click.echo(f"    where: {where}")
    if len(lines) > SHOWN_LINES:
        click.echo(f"- ... {count(len(lines) - SHOWN_LINES, 'more line')} in the report")
    click.echo(total_line(comparison))
    note = (f"regsurvey demo: HEAD~1 is the decode-layer demo suite; HEAD changes one kernel: "
            f"\"{DEMO_CHANGE.message}\" ({DEMO_CHANGE.path})")
    with writing(path):
        make_report_dir(path.parent)
        write_text(path, HtmlFormat(note=note).format(comparison))
    click.echo(f"wrote {path} (open it in a browser)")
    sys.exit(EXIT_OK)
