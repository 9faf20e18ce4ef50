"""Subcommands, one module each; :func:`register` adds them to the ``regsurvey`` group."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    """Add every subcommand to ``group``."""
    from .capture import capture
    from .run import run

    group.add_command(run)
    group.add_command(capture)
