"""The ``regsurvey`` group: its command list, ``--version``, an unknown command, and ``--help``/``-h`` of
every command (each imported only when asked for): every option described, two examples or more, and
what the help says agreeing with what the command does."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from regsurvey.cli import main
from regsurvey.commands import LazyGroup
from regsurvey.model.comparison import Mark
from regsurvey.model.version import __version__

from .runner import assert_usage_error, invoke

# Command -> its usage line and the first words of its help.
HELP = {
    "run": ("Usage: regsurvey run [OPTIONS]", "Compile every key of a commit for every target"),
    "capture": ("Usage: regsurvey capture [OPTIONS] COMMAND...", "Run COMMAND (a Python program) and write a keys"),
    "diff": ("Usage: regsurvey diff [OPTIONS] BASE [HEAD]", "Compare the surveys of BASE and HEAD"),
    "upgrade": ("Usage: regsurvey upgrade [OPTIONS] [REV]", "Survey REV (a git revision; default: the working"),
    "stack": ("Usage: regsurvey stack [OPTIONS] BASE..HEAD", "Survey every commit of BASE..HEAD"),
    "history": ("Usage: regsurvey history [OPTIONS] A..B|REV", "Figures over the commits of A..B"),
    "bisect": ("Usage: regsurvey bisect [OPTIONS] GOOD BAD", "Find the first commit of GOOD..BAD"),
    "rebuild-check": ("Usage: regsurvey rebuild-check [OPTIONS]", "Compile every key twice, each time from a"),
    "demo": ("Usage: regsurvey demo [OPTIONS]", "Show what a diff looks like"),
    "lint": ("Usage: regsurvey lint [OPTIONS] [FILES]...", "Find kernel arguments that are loaded into"),
    "explain": ("Usage: regsurvey explain [OPTIONS] KEY", "Where KEY's registers go: the live registers"),
    "check": ("Usage: regsurvey check [OPTIONS]", "Judge HEAD against BASE as a pre-merge gate"),
    "prune": ("Usage: regsurvey prune [OPTIONS]", "Write the prune table: per target, the autotune configs"),
    "fix": ("Usage: regsurvey fix [OPTIONS] [KEY]", "Compile KEY's builds again with their launch options"),
    "coverage": ("Usage: regsurvey coverage [OPTIONS] CAPTURE", "List the launches in CAPTURE"),
    "server": ("Usage: regsurvey server [OPTIONS] COMMAND [ARGS]...", "A worker server kept warm between"),
    "server start": ("Usage: regsurvey server start [OPTIONS]", "Start the server, or say that it runs."),
    "server stop": ("Usage: regsurvey server stop [OPTIONS]", "Stop the server."),
    "server status": ("Usage: regsurvey server status [OPTIONS]", "Say whether the server runs"),
}


def test_the_group_lists_every_command_in_order() -> None:
    result = invoke("--help")
    assert result.exit_code == 0, result.stderr
    listed = result.stdout.split("\nCommands:\n")[1].split("\n\n")[0].splitlines()  # then the examples
    assert [line.split()[0] for line in listed] == [
        "run", "capture", "diff", "upgrade", "stack", "history", "bisect", "rebuild-check", "demo", "lint", "explain",
        "check", "prune", "fix", "coverage", "server"]
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
    assert [line.split()[0] for line in result.stderr.split("\nCommands:\n")[1].split("\n\n")[0].splitlines()] == [
        "start", "status", "stop"]


def _tree(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command under ``command`` (itself first), with the words that name it after ``regsurvey``."""
    yield path, command
    if isinstance(command, click.Group):
        context = click.Context(command, info_name=" ".join(("regsurvey", *path)))
        for name in command.list_commands(context):
            sub = command.get_command(context, name)
            assert sub is not None, name
            yield from _tree(sub, (*path, name))


EVERY_COMMAND = {" ".join(path): command for path, command in _tree(main)}


def test_the_tree_holds_every_command() -> None:
    assert set(EVERY_COMMAND) == {"", *HELP}


@pytest.mark.parametrize("name", sorted(EVERY_COMMAND))
def test_every_option_has_a_description(name: str) -> None:
    command = EVERY_COMMAND[name]
    result = invoke(*name.split(), "--help")
    assert result.exit_code == 0, result.stderr
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert (param.help or "").strip(), f"regsurvey {name} {param.opts[-1]} has no help"
            assert param.opts[-1] in result.stdout


@pytest.mark.parametrize("name", sorted(EVERY_COMMAND))
def test_every_help_ends_with_two_examples(name: str) -> None:
    """Each an indented command line (``regsurvey ...``) and under it what it does, after "Examples:"."""
    result = invoke(*name.split(), "--help")
    assert result.exit_code == 0, result.stderr
    _, found, after = result.stdout.partition("\n  Examples:\n")
    assert found, result.stdout
    lines = after.splitlines()
    shown = [i for i, line in enumerate(lines) if line.startswith("    regsurvey ")]
    assert len(shown) >= 2, after
    # A command this help is about, each followed by its description.
    assert all(lines[i].split()[1:len(name.split()) + 1] == name.split() or not name for i in shown), after
    assert all(lines[i + 1].startswith("        ") and lines[i + 1].strip() for i in shown), after


def _said(*words: str) -> str:
    """A command's help as one line (click wraps it to the terminal's width)."""
    result = invoke(*words, "--help")
    assert result.exit_code == 0, result.stderr
    return " ".join(result.stdout.split())


def test_diffs_help_names_every_mark() -> None:
    said = _said("diff")
    assert [m.value for m in Mark if m.value not in said] == []


def test_the_report_file_each_command_writes_is_the_one_its_help_names() -> None:
    assert "HTML: reports/<base>..<head>.html at the repository root" in _said("diff")
    assert "HTML: reports/<base>..<head>.stack.html at the repository root" in _said("stack")
    assert "HTML: reports/upgrade.<rev>.<from>..<to>.html at the repository root" in _said("upgrade")


def test_the_server_help_says_when_a_server_exits() -> None:
    assert ("A server exits once it has gone without a survey for its idle time: 30 minutes (or --idle's) for "
            "one that `regsurvey server start` started, 10 for one a survey started.") in _said("server")


def test_lints_help_says_where_cubins_are_linted() -> None:
    assert ("A cubin is linted only in a survey, against the PTX its compile kept beside it: not as a loose "
            "file.") in _said("lint")
