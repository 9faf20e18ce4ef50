"""Options the commands share (the selection, the store, ``--format`` from the one registry of formats),
defined once, as asv defines its comparison flags; and how they turn into survey options and report files.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..model.options import SurveyOptions
from ..model.targets import TARGETS, get_target
from ..repo.checkout import repo_root
from ..store.files import write_text
from .common import fail, split_csv, usable_cores, writing

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from ..output.formats import Style


# The targets every command's --target names: gfx942, gfx950, gfx1100, ... sm120.
TARGET_NAMES = ", ".join(TARGETS)
_TARGET_HELP = f"Targets to compile for (repeat or comma-separate: {TARGET_NAMES}); overrides the keys' matrices."
_KIND_HELP = "Only kinds matching this pattern."
_KEY_HELP = "Only keys whose id matches, e.g. 'mla_decode/tp8/*'."


def selection_options(*, target_help: str = _TARGET_HELP, kind_help: str = _KIND_HELP,
                      key_help: str = _KEY_HELP) -> Callable[[F], F]:
    """``-t/--target``, ``--kind``, ``--key``, ``-j``, ``--timeout``, ``-q``: what every command that
    surveys takes, declared once (a command may say what its own defaults are in the help)."""
    decorators = [
        click.option("-t", "--target", "targets", multiple=True, metavar="TARGET", help=target_help),
        click.option("--kind", "kinds", multiple=True, metavar="GLOB", help=kind_help),
        click.option("--key", "keys", multiple=True, metavar="GLOB", help=key_help),
        click.option("-j", "--jobs", type=click.IntRange(1), default=None,
                     help="Worker processes (default: the number of usable cores)."),
        click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
                     help="Seconds one key may take before it is marked error."),
        click.option("-q", "--quiet", is_flag=True,
                     help="No progress on stderr (bars in a terminal, a line every 10 s elsewhere)."),
    ]

    def apply(command: F) -> F:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command

    return apply


TOOLCHAIN_HELP = ("Survey with the Triton and torch of another Python environment: its interpreter or its "
                  "directory (a venv's bin/python); regsurvey itself runs here. Default: this environment's "
                  "(also 'current').")


def toolchain_option(command: F) -> F:
    """``--toolchain PATH`` (the command's ``toolchain``): the environment whose Triton and torch the survey's
    workers use (:func:`resolved_toolchain`)."""
    return click.option("--toolchain", "toolchain", metavar="PATH", help=TOOLCHAIN_HELP)(command)


def resolved_toolchain(spec: str | None, option: str = "--toolchain") -> str | None:
    """The interpreter ``spec`` names, checked (``SurveyOptions.toolchain``), or None for this environment's
    (none given, ``current``, or this interpreter); SurveyError in one line for one a survey cannot use."""
    from ..engine.other_toolchain import chosen_toolchain

    return chosen_toolchain(spec, option)


def survey_options(command: F) -> F:
    """:func:`selection_options`, and ``--store``, ``--results``, ``-C/--repo`` and ``--toolchain``: the
    same meaning as in ``regsurvey run``."""
    command = toolchain_option(command)
    command = click.option("-C", "--repo", "repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
                           default=Path("."), help="Run as if started in this directory.")(command)
    command = click.option("--ray", "ray_address", metavar="ADDRESS", expose_value=False, callback=_ray_address,
                           is_eager=True,
                           help="Compile on this Ray cluster (HOST:6379, ray://HOST:10001, auto, or local: a "
                                "Ray instance of its own), each key a Ray call; the same as REGSURVEY_RAY=ADDRESS. "
                                "Needs the ray extra.")(command)
    command = click.option("--ray-include", "ray_include", multiple=True, metavar="GLOB", expose_value=False,
                           callback=_ray_include, is_eager=True,
                           help="With --ray: untracked files the cluster needs too (a glob on the path from the "
                                "repository's top; repeat). Only tracked files travel otherwise; the same as "
                                "REGSURVEY_RAY_INCLUDE=GLOB,GLOB.")(command)
    return selection_options()(store_options(command))


def _ray_address(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    import os

    if value:
        os.environ["REGSURVEY_RAY"] = value


def _ray_include(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
    import os

    if value:
        os.environ["REGSURVEY_RAY_INCLUDE"] = ",".join(value)


def store_options(command: F) -> F:
    """``--store DIR`` (the command's ``store_dir``) and ``--results DIR`` (the environment's
    ``REGSURVEY_RESULTS``, which :func:`regsurvey.revisions.obtain.open_store` reads)."""
    command = click.option("--results", type=click.Path(file_okay=False, path_type=Path), expose_value=False,
                           callback=_results_dir, is_eager=True,
                           help="Keep objects and results of identical kernels here, shared with other stores "
                                "(e.g. CI jobs of several branches); the same as REGSURVEY_RESULTS=DIR. "
                                "Default: in the store.")(command)
    return click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path),
                        help="Where surveys and objects are kept (default: .regsurvey/ at the repository "
                             "root).")(command)


def _results_dir(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    import os

    if value is not None:
        os.environ["REGSURVEY_RESULTS"] = str(value.absolute())


def format_option(result: type, *, help: str | None = None) -> Callable[[F], F]:
    """``--format``: the formats of ``result``'s type in the one registry (:mod:`regsurvey.output.formats`),
    the first the default; its help each format's own words, unless ``help`` says otherwise."""
    from ..output.formats import formats_of

    formats = formats_of(result)
    return click.option("--format", "fmt", type=click.Choice([f.name for f in formats]), default=formats[0].name,
                        show_default=True,
                        help=help or "; ".join(f"{f.name}: {f.help}" for f in formats) + ".")


def report_options(result: type, html_name: str = "<base>..<head>.html") -> Callable[[F], F]:
    """``--format`` (:func:`format_option`), ``--output PATH`` (``html_name``: the HTML report's file name
    under ``reports/`` when not given) and ``--limit N`` (terminal rows per group)."""
    def apply(command: F) -> F:
        command = click.option("--limit", type=click.IntRange(0), default=50, show_default=True,
                               help="Table: rows shown per group before an [Other] line (0: all).")(command)
        command = click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
                               help=f"Write the report here (default: stdout; HTML: "
                                    f"reports/{html_name} at the repository root).")(command)
        return format_option(result)(command)
    return apply


def make_survey_options(targets: tuple[str, ...], kinds: tuple[str, ...], keys: tuple[str, ...],
                        jobs: int | None, timeout: float, toolchain: str | None = None) -> SurveyOptions:
    """SurveyOptions from the shared options; UnknownTargetError for a target regsurvey does not know,
    SurveyError for a ``--toolchain`` a survey cannot use (:func:`resolved_toolchain`)."""
    chosen = split_csv(targets)
    return SurveyOptions(targets=tuple(get_target(t).name for t in chosen) or None, kinds=kinds, keys=keys,
                         jobs=jobs or usable_cores(), timeout=timeout, toolchain=resolved_toolchain(toolchain))


def check_figures(names: tuple[str, ...], measured: bool = False) -> tuple[str, ...]:
    """``names`` when each is a figure's name (as in the survey JSON; ``measured``: compile time too); else one
    line naming the first that is not, and the figures there are (exit 2)."""
    from ..model.figures import FIGURES, MEASURED_FIGURES

    known = {f.name for f in (*FIGURES, *(MEASURED_FIGURES if measured else ()))}
    unknown = [name for name in names if name not in known]
    if unknown:
        fail(f"unknown figure {unknown[0]!r}; figures: {', '.join(sorted(known))}")
    return names


def filename_part(rev: str | None, commit: str | None = None) -> str:
    """A revision as a file name part: the name as typed (``HEAD~1`` -> ``HEAD_1``), a sha shortened to
    10 characters, a survey file's stem, or ``worktree``."""
    if rev is None:
        return "worktree"
    if rev.endswith(".json"):
        rev = Path(rev).stem
    elif commit and commit.startswith(rev) and len(rev) > 10:
        rev = rev[:10]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", rev).strip("._") or "rev"


def default_report_path(start: Path, name: str) -> Path:
    """``reports/<name>`` under the repository root (or ``start`` outside git)."""
    return (repo_root(start) or start) / "reports" / name


def write_report(text: str, fmt: str, output: Path | None = None, default_html: Path | None = None) -> None:
    """Print the report (ending in a newline), or write it to ``output`` (HTML goes to ``default_html``
    unless told otherwise) and say where on stdout."""
    path = output or (default_html if fmt == "html" else None)
    if path is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    with writing(path):
        make_report_dir(path.parent)
        write_text(path, text)
    click.echo(f"wrote {path}")


def make_report_dir(directory: Path) -> None:
    """Create ``directory`` for a report; one regsurvey creates ignores itself in git (as the store does),
    so that a report written into the repository does not make the working tree modified."""
    if directory.is_dir():
        return
    directory.mkdir(parents=True)
    if repo_root(directory) is not None:
        write_text(directory / ".gitignore", "# written by regsurvey: generated reports\n*\n")


# The width of a table that goes to no terminal (a pipe, a file, CI's log) when neither --columns nor
# COLUMNS says: readable in a log viewer and a code review, and wide enough for a figure per column.
PIPE_COLUMNS = 120


def columns_option(command: F) -> F:
    """``--columns N``: the width every table of the command is laid out for (:func:`table_columns`)."""
    return click.option("--columns", type=click.IntRange(min=20), metavar="N",
                        help=f"Lay tables out for N columns (default: the COLUMNS variable, else the terminal's "
                             f"width; {PIPE_COLUMNS} when stdout is no terminal).")(command)


def table_columns(columns: int | None, terminal: bool = True) -> int:
    """The width to lay tables out for: ``--columns``, else the ``COLUMNS`` variable, else the terminal's
    where the table goes to stdout (``terminal``) and stdout is one, else :data:`PIPE_COLUMNS`."""
    import os
    import shutil

    if columns:
        return columns
    variable = os.environ.get("COLUMNS", "").strip()
    if variable.isdigit() and int(variable) > 0:
        return max(20, int(variable))
    if terminal and sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return PIPE_COLUMNS


def report_style(columns: int | None = None, terminal: bool = True, limit: int = 50) -> Style:
    """How a report is laid out: colour when it goes to stdout (``terminal``) and stdout is a terminal; the
    width of :func:`table_columns`; ``limit`` rows per group of a comparison table."""
    from ..output.formats import Style

    return Style(color=terminal and sys.stdout.isatty(), width=table_columns(columns, terminal), limit=limit)
