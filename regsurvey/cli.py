"""The command line: parse arguments, call the library, choose the exit status. Nothing else."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import __version__
from .checkout import CheckoutError, commit_checkout, repo_root, working_tree
from .results import Survey
from .store import Store, StoreError
from .survey import SurveyError, SurveyOptions, survey_checkout
from .targets import UnknownTargetError, get_target

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2
_BAD_INPUT = (UnknownTargetError, CheckoutError, SurveyError, StoreError)


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    # --target gfx950,sm90 and --target gfx950 --target sm90 mean the same.
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _fail(message: str) -> None:
    click.echo(f"regsurvey: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="regsurvey")
def main() -> None:
    """Register, spill and occupancy surveys of Triton kernels, key by key, target by target.

    Compiles every kernel key of a commit offline on the installed Triton (no GPU needed) for AMD
    gfx942/gfx950 and NVIDIA sm90/sm100, and reads what the objects really use.
    """


@main.command()
@click.option("--commit", "rev", metavar="REV", help="Survey this git revision (in a temporary worktree). "
              "Default: the working tree as it is.")
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET",
              help="Targets to compile for (repeat or comma-separate); overrides the keys' matrices.")
@click.option("--kind", "kinds", multiple=True, metavar="GLOB", help="Only kinds matching this pattern.")
@click.option("--key", "keys", multiple=True, metavar="GLOB",
              help="Only keys whose id matches, e.g. 'mla_decode/tp8/*'.")
@click.option("-j", "--jobs", type=click.IntRange(1), default=None,
              help="Worker processes (default: the number of usable cores).")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds one key may take before it is marked error.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where surveys and objects are kept (default: .regsurvey/ at the repository root).")
@click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=Path("."), help="Run as if started in this directory.")
@click.option("--strict", is_flag=True, help="Exit 1 if any key fails to build.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def run(rev: str | None, targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
        jobs: int | None, timeout: float, fmt: str, store_dir: Path | None, repo: Path, strict: bool,
        quiet: bool) -> None:
    """Compile every key of a commit for every target and report its resources."""
    from rich.console import Console

    from .output.progress import survey_progress
    from .output.table import print_survey

    options = SurveyOptions(targets=_split(targets) or None, kinds=kinds, keys=keys,
                            jobs=jobs or _usable_cores(), timeout=timeout)
    start = repo.resolve()
    try:
        if options.targets:
            options = SurveyOptions(**{**options.__dict__,
                                       "targets": tuple(get_target(t).name for t in options.targets)})
        store = Store(store_dir or (repo_root(start) or start) / ".regsurvey")
        store.prepare()
        with survey_progress(enabled=not quiet) as progress:
            if rev is not None:
                with commit_checkout(start, rev) as checkout:
                    survey = survey_checkout(checkout, store.objects.root, options, progress)
            else:
                survey = survey_checkout(working_tree(start), store.objects.root, options, progress)
        store.save(survey)
    except _BAD_INPUT as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        click.echo("regsurvey: interrupted", err=True)
        sys.exit(130)
    if fmt == "json":
        click.echo(survey.to_json())
    else:
        print_survey(survey, Console())
    sys.exit(EXIT_FINDINGS if strict and _any_failed(survey) else EXIT_OK)


def _any_failed(survey: Survey) -> bool:
    return any(not r.ok for r in survey.rows)


if __name__ == "__main__":  # pragma: no cover
    main()
