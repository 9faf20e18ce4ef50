"""Every command that surveys takes the same survey options, declared once (commands/options.py); every
command that prints a table takes ``--columns`` and honours ``COLUMNS``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from regsurvey.cli import main
from regsurvey.commands.options import PIPE_COLUMNS

from .conftest import Tiny
from .runner import invoke

SELECTION = ("targets", "kinds", "keys", "jobs", "timeout", "quiet")
SURVEY = (*SELECTION, "store_dir", "repo")
SURVEYING = {"run": SURVEY, "diff": SURVEY, "stack": SURVEY, "lint": SURVEY, "check": SURVEY,
             "rebuild-check": SURVEY, "demo": SELECTION}


def _option(command: click.Command, name: str) -> click.Option:
    (found,) = [p for p in command.params if isinstance(p, click.Option) and p.name == name]
    return found


@pytest.mark.parametrize("command", sorted(SURVEYING))
def test_survey_options_mean_the_same_everywhere(command: str) -> None:
    context = click.Context(main)
    reference, here = main.get_command(context, "run"), main.get_command(context, command)
    assert reference is not None and here is not None
    for name in SURVEYING[command]:
        mine, theirs = _option(here, name), _option(reference, name)
        assert (mine.opts, mine.secondary_opts, mine.multiple, mine.default, mine.is_flag) == (
            theirs.opts, theirs.secondary_opts, theirs.multiple, theirs.default, theirs.is_flag), (command, name)
        assert type(mine.type) is type(theirs.type), (command, name)


@pytest.mark.parametrize("command", sorted(SURVEYING))
def test_a_bad_survey_option_is_one_line_and_exit_2(command: str) -> None:
    out = CliRunner().invoke(main, [command, "-j", "0"])
    assert out.exit_code == 2 and "Invalid value for '-j' / '--jobs'" in out.output


# ---- the width of tables -----------------------------------------------------------------------------------

TABLES = ("run", "diff", "stack", "lint", "explain", "bisect")  # every command that prints a terminal table


@pytest.mark.parametrize("command", TABLES)
def test_columns_means_the_same_everywhere(command: str) -> None:
    context = click.Context(main)
    reference, here = main.get_command(context, "run"), main.get_command(context, command)
    assert reference is not None and here is not None
    mine, theirs = _option(here, "columns"), _option(reference, "columns")
    assert (mine.opts, mine.default, mine.help) == (theirs.opts, theirs.default, theirs.help) == (
        ["--columns"], theirs.default, theirs.help)


@pytest.mark.parametrize(("args", "env", "width"), [
    (("--columns", "80"), {"COLUMNS": None}, 80),
    ((), {"COLUMNS": "100"}, 100),
    (("--columns", "90"), {"COLUMNS": "150"}, 90),  # the option wins
    ((), {"COLUMNS": None}, PIPE_COLUMNS),  # neither, and stdout no terminal
])
def test_tables_fit_the_width_asked_for_pipes_included(tiny: Tiny, tiny_survey: dict[str, Any],
                                                       tiny_survey_file: Path, args: tuple[str, ...],
                                                       env: dict[str, str | None], width: int) -> None:
    """``--columns N``, else ``COLUMNS``, else 120 where stdout is no terminal (CliRunner's is a pipe): every
    line of every table command's text fits, and the lines longer than any width here (the survey's timing,
    the comparison's total) wrap at it."""
    outputs = {
        "run": invoke("run", *tiny.survey_args(), *args, env=env),
        "diff": invoke("diff", tiny_survey_file, tiny_survey_file, "-C", tiny.repo, *args, env=env),
        "lint": invoke("lint", *tiny.survey_args(), *args, env=env),
        "explain": invoke("explain", "scale/width2", *tiny.survey_args(), *args, env=env),
    }
    for command, result in outputs.items():
        assert result.exit_code == 0, (command, result.stderr)
        lines = result.stdout.splitlines()
        assert max(map(len, lines)) <= width, (command, max(lines, key=len))
    for command in ("run", "diff"):  # a line longer than 150 characters, wrapped at the width
        assert max(map(len, outputs[command].stdout.splitlines())) > width - 20, command
    assert "    error: " in outputs["run"].stdout  # the idle key's error, a line under its row


def test_history_draws_compile_time_and_bisect_does_not_search_it() -> None:
    """Compile time moves with the machine's load: a history draws it (moved where a build's moved notably),
    a bisection for the first commit that changed it would follow the noise."""
    runner = CliRunner()
    for command, args in (("bisect", ["HEAD~2", "HEAD", "--key", "x/*"]), ("history", ["HEAD~2..HEAD"])):
        refused = runner.invoke(main, [command, *args, "--figure", "compile_s_total"])
        assert refused.exit_code == 2 and "unknown figure 'compile_s_total'" in refused.output
    from regsurvey.commands.options import check_figures

    assert check_figures(("vgpr", "compile_s"), measured=True) == ("vgpr", "compile_s")
    with pytest.raises(SystemExit):
        check_figures(("compile_s",))
