"""Every command that surveys takes the same survey options, declared once (commands/options.py)."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from regsurvey.cli import main

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
