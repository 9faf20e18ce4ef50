"""What the CliRunner tests share: the ``regsurvey`` group invoked in this process, and the shapes of the
two kinds of bad input (ours: one line and exit status 2; click's: its usage error, also exit status 2)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from click.testing import CliRunner, Result

from regsurvey.cli import main
from regsurvey.model.targets import TARGETS

KNOWN_TARGETS = ", ".join(TARGETS)  # as the unknown-target message lists them
UNKNOWN_TARGET = f"unknown target 'gfx999'; known targets: {KNOWN_TARGETS}"
NO_KEY_MATCHES = "no key matches the selection (--kind/--key)"


def invoke(*args: str | Path, env: Mapping[str, str | None] | None = None) -> Result:
    """``regsurvey ARGS`` in this process. A crash (anything but an exit) propagates, traceback and all;
    ``GITHUB_STEP_SUMMARY`` is unset, so that ``check`` never appends to a real CI summary."""
    environ: dict[str, str | None] = {"GITHUB_STEP_SUMMARY": None, **(env or {})}
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="regsurvey", env=environ,
                              catch_exceptions=False)


def assert_one_line_error(result: Result, message: str, *, before: str = "") -> None:
    """Bad input: nothing on stdout, ``regsurvey: error: MESSAGE`` as the one line on stderr (after what
    ``before`` says the command printed first), exit status 2."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == f"{before}regsurvey: error: {message}\n", result.stderr


def assert_usage_error(result: Result, usage: str, error: str) -> None:
    """click's own bad input: the usage line, a pointer to --help, the error; exit status 2."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    command = usage.split(" [")[0].removeprefix("Usage: ")
    assert result.stderr == f"{usage}\nTry '{command} --help' for help.\n\nError: {error}\n"


def unwrapped(lines: list[str]) -> list[str]:
    """Lines of prose under a table as they were before the width wrapped them: a line that starts with
    blanks (the indent of a wrapped line's rest) joined to the one before it."""
    out: list[str] = []
    for line in lines:
        if line.startswith("  ") and out:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
    return out
