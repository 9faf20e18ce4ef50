"""``regsurvey lint``: kernel arguments that the compiled code loads and never reads (miscompile suspects)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..errors import CorruptObjectError
from ..model.findings import LintReport
from ..model.words import count
from ..revisions.obtain import open_store, surveyed_and_used
from .common import EXIT_FINDINGS, EXIT_OK, command_errors, fail
from .helptext import examples
from .options import columns_option, format_option, make_survey_options, report_style, survey_options, write_report


@click.command(epilog=examples(
    ("regsurvey lint --target gfx950,sm90", "every build of the working tree's keys for gfx950 and sm90"),
    ("regsurvey lint attention.hsaco dump.amdgcn", "an AMD code object and an amdgcn text, as loose files"),
))
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--commit", "rev", metavar="REV", help="Lint the survey of this git revision (default: the "
              "working tree). A stored survey made with this toolchain is reused.")
@survey_options
@format_option(LintReport)
@columns_option
@click.option("-v", "--verbose", is_flag=True, help="Also print the time the lint itself took, and its share.")
def lint(files: tuple[Path, ...], rev: str | None, targets: tuple[str, ...], kinds: tuple[str, ...],
         keys: tuple[str, ...], jobs: int | None, timeout: float, store_dir: Path | None, repo: Path, quiet: bool,
         fmt: str, columns: int | None, verbose: bool, toolchain: str | None) -> None:
    """Find kernel arguments that are loaded into registers and never read on any path.

    Without FILES, lints every key of a survey (the working tree, or --commit REV): AMD objects with
    their amdgcn text and LLVM IR, NVIDIA cubins against their PTX. With FILES, lints loose amdgcn
    text (.s, .amdgcn) or AMD code objects (.hsaco, .co; needs llvm-objdump of LLVM >= 20). A cubin
    is linted only in a survey, against the PTX its compile kept beside it: not as a loose file.

    An argument the LLVM IR (or the PTX) uses but the machine code never reads is a miscompile
    suspect (error); one loaded and never read with nothing saying it is needed is a note. Exit
    status: 1 if there is any suspect, 0 otherwise, 2 on bad input.
    """
    from ..lint import LintInputError
    from ..lint.disassembler import DisassemblerMissing
    from ..linting import LintRun, lint_file, lint_survey
    from ..output.formats import render

    started = time.perf_counter()
    if files and rev is not None:
        fail("give FILES or --commit, not both")
    if files and (targets or kinds or keys):
        fail("--target, --kind and --key select a survey's builds: they do not apply to FILES")
    runs: list[LintRun] = []
    with command_errors(CorruptObjectError):
        if files:
            for path in files:
                try:
                    runs.append(lint_file(path))
                except OSError as exc:
                    fail(f"{path}: {exc.strerror or exc}")
                except (LintInputError, CorruptObjectError, DisassemblerMissing) as exc:
                    fail(f"{path}: {exc}")
        else:
            from ..output.progress import survey_progress

            start = repo.resolve()
            options = make_survey_options(targets, kinds, keys, jobs, timeout, toolchain)
            store = open_store(store_dir, start)
            # (a stored object damaged since its survey: surveyed again, then linted)
            _, run = surveyed_and_used(start, rev, store, options,
                                       lambda survey: lint_survey(survey, store.objects, jobs=options.jobs),
                                       lambda: survey_progress(enabled=not quiet))
            runs.append(run)
    findings = [f for run in runs for f in run.findings]
    kernels = sum(run.kernels for run in runs)
    write_report(render(LintReport(tuple(findings), kernels), fmt, report_style(columns)), fmt)
    for run in runs:
        for skipped in run.skipped:
            click.echo(f"regsurvey: not linted: {skipped}", err=True)
    if verbose:
        total = time.perf_counter() - started
        spent = sum(run.seconds for run in runs)
        per = spent / kernels * 1000 if kernels else 0.0
        click.echo(f"lint: {spent:.2f} s for {count(kernels, 'kernel')} ({per:.0f} ms each), "
                   f"{100 * spent / total if total else 0:.0f}% of {total:.2f} s", err=True)
    sys.exit(EXIT_FINDINGS if any(f.severity == "error" for f in findings) else EXIT_OK)
