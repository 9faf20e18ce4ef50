"""Subcommands, one module each; :func:`register` adds them to the ``regsurvey`` group."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Add every subcommand to ``group``."""
    from .capture import capture
    from .check import check
    from .demo import demo
    from .diff import diff
    from .lint import lint
    from .rebuild_check import rebuild_check
    from .run import run
    from .server import server
    from .stack import stack

    group.add_command(run)
    group.add_command(capture)
    group.add_command(diff)
    group.add_command(stack)
    group.add_command(rebuild_check)
    group.add_command(demo)
    group.add_command(lint)
    group.add_command(check)
    group.add_command(server)
