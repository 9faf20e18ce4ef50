"""``regsurvey check --base REV [--head REV]``: the pre-merge gate (exit 1 when the change fails it)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import click

from ..check.baseline import (
    BASELINE_FILE,
    BaselineError,
    CheckRules,
    check_reason,
    load_baseline,
    with_compile_slowdown,
)
from ..check.gate import GateResult, judge, rebaseline
from ..diff.core import compare
from ..first_stage import first_differences
from ..model.words import count
from ..repo.checkout import repo_root
from ..revisions.obtain import open_store
from ..revisions.range import named_with_toolchains, obtain_surveys, survey_store
from ..secret_vars import Scrubber
from ..store.files import WriteError, write_text
from .common import EXIT_FINDINGS, EXIT_OK, command_errors, fail
from .helptext import examples
from .options import make_survey_options, resolved_toolchain, survey_options


@click.command(epilog=examples(
    ("regsurvey check --base origin/main", "the working tree judged against origin/main, as a CI job runs it"),
    ("regsurvey check --base origin/main --update-baseline --reason 'larger tiles: worth the spills'",
     "accept the working tree's worse figures: write them into the baseline with the reason"),
))
@click.option("--base", "base", required=True, metavar="REV",
              help="The revision the change is judged against, e.g. origin/main.")
@click.option("--head", "head", metavar="REV", help="The revision judged (default: the working tree as it is).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False, path_type=Path),
              help=f"The baseline of accepted figures (default: {BASELINE_FILE} at the repository root; "
                   "none there: the default rules, nothing allowed).")
@click.option("--update-baseline", "update", is_flag=True,
              help="Write an [[allow]] entry for every build whose figures fail, with HEAD's figures and "
                   "--reason, so that HEAD passes (newly failing builds, miscompile suspects and compile-time "
                   "slowdowns still fail).")
@click.option("--reason", metavar="TEXT", help="With --update-baseline: why the new figures are acceptable "
              "(written into each entry; required).")
@click.option("--sarif", "sarif_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the problems as SARIF 2.1.0 here (for code scanning).")
@click.option("--compile-slowdown", "compile_slowdown", metavar="FACTORx,SECONDSs",
              help="Fail a build whose compile takes FACTOR times as long as the base's and over SECONDS now "
                   "(default: the baseline's [check] compile_slowdown and compile_slowdown_s, else 10x,30s); "
                   "off: never.")
@click.option("--base-toolchain", "base_toolchain", metavar="PATH",
              help="Survey BASE with this toolchain (another Python environment's interpreter or directory, or "
                   "'current'), HEAD with --toolchain's, and judge HEAD across the two: a Triton upgrade gated as "
                   "a change is (`regsurvey upgrade` shows the same comparison).")
@survey_options
def check(base: str, head: str | None, baseline_path: Path | None, update: bool, reason: str | None,
          sarif_path: Path | None, compile_slowdown: str | None, base_toolchain: str | None,
          targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...], jobs: int | None,
          timeout: float, store_dir: Path | None, repo: Path, quiet: bool, toolchain: str | None) -> None:
    """Judge HEAD against BASE as a pre-merge gate, and exit 1 if it fails.

    Surveys both revisions (stored surveys made with this toolchain are reused; --base-toolchain surveys
    BASE with another and judges HEAD across the two: a Triton upgrade) and fails on builds that
    stop building, new miscompile suspects of the kernarg lint, and worse spill or occupancy figures
    (register counts too, past the baseline's [check] register_increase) that no entry of the baseline
    allows, and on a pathological compile-time slowdown (10 times as long and over 30 s, by default).
    Prints the verdict and the comparison as Markdown (appended to $GITHUB_STEP_SUMMARY when set). Exit
    status: 0 passed, 1 failed, 2 bad input (one line).

    The Markdown and the SARIF leave the machine (a comment, code scanning): the value of every secret
    variable of the environment (regsurvey.secret_vars) is replaced in them by ``[secret NAME]``, also
    where the project's code found it outside its own environment and raised or printed it.
    """
    from ..output.markdown import format_gate
    from ..output.progress import survey_progress

    if update and not reason:
        fail("--update-baseline needs --reason TEXT: why the new figures are acceptable")
    if reason and not update:
        fail("--reason goes with --update-baseline")
    if update and reason:
        try:
            check_reason(reason)  # refused at once, not after the surveys
        except BaselineError as exc:
            fail(str(exc))
    if compile_slowdown is not None:
        try:
            with_compile_slowdown(CheckRules(), compile_slowdown)  # refused at once, not after the surveys
        except BaselineError as exc:
            fail(str(exc))
    start = repo.resolve()
    root = repo_root(start) or start
    path = baseline_path or root / BASELINE_FILE
    with command_errors(BaselineError):
        # A baseline named on the command line must exist, unless it is about to be written.
        baseline = load_baseline(path, required=baseline_path is not None and not update)
        if compile_slowdown is not None:  # the command line's rule over the baseline's
            baseline = replace(baseline, rules=with_compile_slowdown(baseline.rules, compile_slowdown))
        options = make_survey_options(targets, kinds, keys, jobs, timeout, toolchain)
        # Each side's toolchain where --base-toolchain gives the base its own: judged across the two.
        toolchains = None if base_toolchain is None else [resolved_toolchain(base_toolchain, "--base-toolchain"),
                                                          options.toolchain]
        store = open_store(store_dir, start)
        with survey_store(store, options) as used, survey_progress(enabled=not quiet) as progress:
            before, after = obtain_surveys(start, [base, head], used, options, progress, toolchains=toolchains)
            if toolchains is not None:
                before, after = named_with_toolchains([before, after], [base, head], toolchains)
            # Each build's first differing compiler stage, for the report (a Triton upgrade: which stage moved).
            comparison = first_differences(compare(before, after, across_toolchains=toolchains is not None),
                                           used.objects)
        result = judge(comparison, baseline)
        if update:
            assert reason is not None
            result = _update_baseline(result, path, reason)
    scrub = Scrubber.of(os.environ)
    report = scrub.text(format_gate(result))
    sys.stdout.write(report)
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    with command_errors():  # a file that cannot be written (a full disk): one line, exit 2
        if summary_file:
            try:
                with open(summary_file, "a", encoding="utf-8") as out:
                    out.write(report + "\n")
            except OSError as exc:
                raise WriteError(f"cannot write {summary_file}: {exc.strerror or exc}") from None
        if sarif_path is not None:
            _write_sarif(result, sarif_path, root, scrub)
    sys.exit(EXIT_OK if result.passed else EXIT_FINDINGS)


def _update_baseline(result: GateResult, path: Path, reason: str) -> GateResult:
    """Write the baseline at ``path`` that allows every failing figure (check.gate.rebaseline); the result
    judged again with it."""
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: unreadable ({exc})") from None
    new_text, judged, builds = rebaseline(result, text, reason, str(path))
    if new_text is None:
        click.echo(f"regsurvey: {path}: no figure needs an allowance; left as it was", err=True)
        return result
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, new_text)  # whole or not at all: a full disk never cuts a baseline
    click.echo(f"regsurvey: {path}: allowed the figures of {count(builds, 'build')} "
               f"({'created' if text is None else 'updated'})", err=True)
    return judged


def _write_sarif(result: GateResult, path: Path, root: Path, scrub: Scrubber) -> None:
    from ..check.sites import build_site
    from ..output.sarif import format_log, sarif_log

    sites = {p.row.ref: build_site(p.row, root) for p in result.problems}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, format_log(scrub.json(sarif_log(result, sites))))
