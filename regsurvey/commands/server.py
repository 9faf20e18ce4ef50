"""``regsurvey server``: the worker server kept warm between surveys (surveys start one by themselves
unless ``REGSURVEY_SERVER`` says otherwise): start it ahead, stop it, ask about it."""

from __future__ import annotations

import click

from .common import command_errors


@click.group()
def server() -> None:
    """A worker server kept warm between surveys, so that a survey's workers start at once.

    Without it each survey first imports torch and Triton (one to four seconds). Surveys use a
    running server of the same regsurvey, Python, Triton and torch, and start one when none runs
    (REGSURVEY_SERVER: auto, the default; use: never start one, the default when CI is set; off:
    never use one). A server started here exits after --idle minutes without a survey, one a survey
    started after 10.
    """


@server.command()
@click.option("--idle", "idle_min", type=click.FloatRange(min=0.05), default=30.0, show_default=True,
              help="Minutes without a survey after which the server exits.")
def start(idle_min: float) -> None:
    """Start the server (nothing to do if it runs)."""
    from ..engine import server as srv

    with command_errors(srv.ServerError):
        status = srv.start(idle_s=idle_min * 60)  # ServerError: one line, exit status 2
    click.echo(f"regsurvey server running (pid {status['pid']}, socket {srv.address()})")


@server.command()
def stop() -> None:
    """Stop the server."""
    from ..engine import server as srv

    click.echo("regsurvey server stopped" if srv.stop() else "no regsurvey server was running")


@server.command()
def status() -> None:
    """Say whether the server runs, and what it does."""
    from ..engine import server as srv

    found = srv.ping()
    if found is None:
        click.echo(f"no regsurvey server of this installation runs (it would listen on {srv.address()})")
        raise SystemExit(1)
    click.echo(f"regsurvey server running: pid {found['pid']}, up {found['up_s']:.0f} s, {found['workers']} "
               f"worker(s) now, exits after {found['idle_s'] / 60:g} idle minutes; socket {srv.address()}")
