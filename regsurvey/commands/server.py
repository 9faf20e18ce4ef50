"""``regsurvey server``: the worker server kept warm between surveys (surveys start one by themselves
unless ``REGSURVEY_SERVER`` says otherwise): start it ahead, stop it, ask about it."""

from __future__ import annotations

import click

from ..engine.server import DEFAULT_IDLE_S
from ..model.words import count
from .common import command_errors
from .helptext import examples


@click.group(epilog=examples(
    ("regsurvey server start --idle 120", "start it now, for surveys over the next two hours"),
    ("regsurvey server status", "whether it runs, its workers, and when it exits"),
))
def server() -> None:
    """A worker server kept warm between surveys, so that a survey's workers start at once.

    Without it each survey first imports torch and Triton (one to four seconds). Surveys use a
    running server of the same regsurvey, Python, Triton and torch, and start one when none runs
    (REGSURVEY_SERVER: auto, the default; use: never start one, the default when CI is set; off:
    never use one). A server exits once it has gone without a survey for its idle time: 30 minutes
    (or --idle's) for one that `regsurvey server start` started, 10 for one a survey started.
    """


@server.command(epilog=examples(
    ("regsurvey server start", "start the server, or say which one runs and when it exits"),
    ("regsurvey server start --idle 5", "start it, or have the running one exit after 5 idle minutes"),
))
@click.option("--idle", "idle_min", type=click.FloatRange(min=0.05), default=None, metavar="MINUTES",
              help=f"Minutes without a survey after which the server exits (default: {DEFAULT_IDLE_S / 60:g}). "
                   "Given while a server runs, its idle time from now on; not given, it keeps its own.")
def start(idle_min: float | None) -> None:
    """Start the server, or say that it runs.

    A server already running keeps its idle time, unless --idle gives it another, counted from now.
    """
    from ..engine import server as srv

    with command_errors(srv.ServerError):  # ServerError: one line, exit status 2
        status = srv.start(idle_s=idle_min * 60 if idle_min is not None else DEFAULT_IDLE_S,
                           keep_idle=idle_min is None)
    where = f"pid {status['pid']}, socket {srv.address()}"
    idle = count(status["idle_s"] / 60, "idle minute")
    if status["started"]:
        click.echo(f"regsurvey server started ({where}); it exits after {idle}")
    elif status.get("idle_was_s", status["idle_s"]) != status["idle_s"]:
        click.echo(f"regsurvey server already running ({where}); it now exits after {idle} "
                   f"(was {status['idle_was_s'] / 60:g})")
    else:
        click.echo(f"regsurvey server already running ({where}); it exits after {idle}")


@server.command(epilog=examples(
    ("regsurvey server stop", "stop it and the workers it forked; the next survey starts another"),
    ("regsurvey server stop && regsurvey server start", "a fresh server, with the default idle time"),
))
def stop() -> None:
    """Stop the server."""
    from ..engine import server as srv

    click.echo("regsurvey server stopped" if srv.stop() else "no regsurvey server was running")


@server.command(epilog=examples(
    ("regsurvey server status", "whether it runs (exit status 0) or not (1), its workers, when it exits"),
    ("regsurvey server status || regsurvey server start", "start one when none runs"),
))
def status() -> None:
    """Say whether the server runs, and what it does."""
    from ..engine import server as srv

    found = srv.ping()
    if found is None:
        click.echo(f"no regsurvey server of this installation runs (it would listen on {srv.address()})")
        raise SystemExit(1)
    click.echo(f"regsurvey server running: pid {found['pid']}, up {found['up_s']:.0f} s, "
               f"{count(found['workers'], 'worker')} now, exits after {count(found['idle_s'] / 60, 'idle minute')}; "
               f"socket {srv.address()}")
