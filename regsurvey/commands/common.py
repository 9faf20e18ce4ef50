"""What every subcommand shares: exit statuses, the one-line error, option helpers."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from ..engine.errors import SurveyError
from ..engine.other_toolchain import nvdisasm_of
from ..first_stage import first_differences
from ..model.comparison import Comparison
from ..model.progress import Progress
from ..model.targets import UnknownTargetError
from ..repo.checkout import CheckoutError
from ..store.files import WriteError
from ..store.objectstore import ObjectStore
from ..store.signing import SigningKeyError
from ..store.store import StoreError
from ..where import where_changed

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2
# (and a file that cannot be written: a full disk is no gate's failure either)
BAD_INPUT = (UnknownTargetError, CheckoutError, SurveyError, StoreError, WriteError, SigningKeyError)


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def split_csv(values: tuple[str, ...]) -> tuple[str, ...]:
    """``--target gfx950,sm90`` and ``--target gfx950 --target sm90`` mean the same."""
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def fail(message: str) -> None:
    """Bad input: one line on stderr, exit status 2."""
    click.echo(f"regsurvey: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Around writing a report or keys file to ``path``: a file that cannot be written (a full disk, a
    directory that cannot be made) is one line, exit status 2."""
    try:
        yield
    except OSError as exc:
        fail(str(exc) if isinstance(exc, WriteError) else f"cannot write {path}: {exc.strerror or exc}")


@contextlib.contextmanager
def command_errors(*bad_input: type[BaseException]) -> Iterator[None]:
    """Around a command's work: bad input (the usual kinds, and ``bad_input``) ends it with one line
    and exit status 2; Ctrl-C with "interrupted" and 130 (temporary worktrees are removed on the way)."""
    errors: tuple[type[BaseException], ...] = (*BAD_INPUT, *bad_input)
    try:
        yield
    except errors as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        click.echo("regsurvey: interrupted", err=True)
        sys.exit(130)


def explained(comparison: Comparison, objects: ObjectStore, start: Path, jobs: int, progress: Progress | None = None,
              toolchains: tuple[str | None, str | None] = (None, None)) -> Comparison:
    """``comparison`` with what its reports say beyond the figures, from the stored objects: where each
    changed build's registers moved (``where_changed``: the source-line pressure of each side, ``jobs`` at a
    time, on ``progress``; a side's cubins read by the nvdisasm of its toolchain, ``toolchains``' interpreter
    for it, None for this environment's), and the first compiler stage each build differs at
    (``first_differences``)."""
    tools = (nvdisasm_of(toolchains[0]), nvdisasm_of(toolchains[1]))
    return first_differences(where_changed(comparison, objects, start, jobs, progress, tools), objects)
