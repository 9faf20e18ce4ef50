"""The ``regsurvey`` group: its command list, ``--version``, an unknown command, and ``--help``/``-h`` of
every command (each imported only when asked for)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from regsurvey.commands import LazyGroup
from regsurvey.model.version import __version__

from .runner import assert_usage_error, invoke

# Command -> its usage line and the first words of its help.
HELP = {
    "run": ("Usage: regsurvey run [OPTIONS]", "Compile every key of a commit for every target"),
    "capture": ("Usage: regsurvey capture [OPTIONS] COMMAND...", "Run COMMAND (a Python program) and write a keys"),
    "diff": ("Usage: regsurvey diff [OPTIONS] BASE [HEAD]", "Compare the surveys of BASE and HEAD"),
    "stack": ("Usage: regsurvey stack [OPTIONS] BASE..HEAD", "Survey every commit of BASE..HEAD"),
    "history": ("Usage: regsurvey history [OPTIONS] A..B", "Figures over the commits of A..B"),
    "bisect": ("Usage: regsurvey bisect [OPTIONS] GOOD BAD", "Find the first commit of GOOD..BAD"),
    "rebuild-check": ("Usage: regsurvey rebuild-check [OPTIONS]", "Compile every key twice, each time from a"),
    "demo": ("Usage: regsurvey demo [OPTIONS]", "Show what a diff looks like"),
    "lint": ("Usage: regsurvey lint [OPTIONS] [FILES]...", "Find kernel arguments that are loaded into"),
    "explain": ("Usage: regsurvey explain [OPTIONS] KEY", "Where KEY's registers go: the live registers"),
    "check": ("Usage: regsurvey check [OPTIONS]", "Judge HEAD against BASE as a pre-merge gate"),
    "server": ("Usage: regsurvey server [OPTIONS] COMMAND [ARGS]...", "A worker server kept warm between"),
    "server start": ("Usage: regsurvey server start [OPTIONS]", "Start the server (nothing to do if it runs)."),
    "server stop": ("Usage: regsurvey server stop [OPTIONS]", "Stop the server."),
    "server status": ("Usage: regsurvey server status [OPTIONS]", "Say whether the server runs"),
}


def test_the_group_lists_every_command_in_order() -> None:
    result = invoke("--help")
    assert result.exit_code == 0, result.stderr
    listed = result.stdout.split("\nCommands:\n")[1].splitlines()
    assert [line.split()[0] for line in listed] == [
        "run", "capture", "diff", "stack", "history", "bisect", "rebuild-check", "demo", "lint", "explain", "check",
        "server"]
    assert result.stdout.startswith("Usage: regsurvey [OPTIONS] COMMAND [ARGS]...\n")


def test_version() -> None:
    result = invoke("--version")
    assert (result.exit_code, result.stdout) == (0, f"regsurvey, version {__version__}\n")


def test_an_unknown_command_is_a_usage_error() -> None:
    assert_usage_error(invoke("frobnicate"), "Usage: regsurvey [OPTIONS] COMMAND [ARGS]...",
                       "No such command 'frobnicate'.")


def test_a_mistyped_command_is_suggested_whatever_was_imported() -> None:
    fresh = LazyGroup(name="regsurvey")  # as in a new process: no subcommand imported yet
    result = CliRunner().invoke(fresh, ["dif"], prog_name="regsurvey")
    assert result.exit_code == 2
    assert result.stderr.endswith("Error: No such command 'dif'. Did you mean 'diff'?\n"), result.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("command", sorted(HELP))
def test_help_of_every_command(command: str, flag: str) -> None:
    result = invoke(*command.split(), flag)
    assert result.exit_code == 0, result.stderr
    usage, summary = HELP[command]
    lines = result.stdout.splitlines()
    assert lines[0] == usage and lines[1] == ""
    assert " ".join(result.stdout.split()).startswith(f"{usage} {summary}")
    assert "  -h, --help " in result.stdout and result.stderr == ""


def test_help_wins_over_bad_input() -> None:
    """``--help`` is answered before the other options are judged (or anything is surveyed)."""
    result = invoke("run", "--target", "gfx999", "--commit", "no-such-rev", "--help")
    assert result.exit_code == 0 and result.stdout.startswith(HELP["run"][0])


def test_the_server_group_without_a_command_shows_its_help_and_exits_2() -> None:
    result = invoke("server")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(HELP["server"][0])
    assert [line.split()[0] for line in result.stderr.split("\nCommands:\n")[1].splitlines()] == [
        "start", "status", "stop"]
