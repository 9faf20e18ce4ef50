"""Subcommands, one module each. The ``regsurvey`` group imports a subcommand's module only when it
runs (or ``--help`` lists it): a survey's start should not wait for the diff report's templates."""

from __future__ import annotations

import difflib
import importlib

import click

# Command name -> the module under regsurvey.commands that defines it (as a function of that name,
# with dashes as underscores), in the order ``--help`` lists them.
COMMANDS: dict[str, str] = {
    "run": "run",
    "capture": "capture",
    "diff": "diff",
    "upgrade": "upgrade",
    "stack": "stack",
    "history": "history",
    "bisect": "bisect",
    "rebuild-check": "rebuild_check",
    "demo": "demo",
    "lint": "lint",
    "explain": "explain",
    "check": "check",
    "prune": "prune",
    "fix": "fix",
    "coverage": "coverage",
    "server": "server",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *sorted(set(self.commands) - set(COMMANDS))]

    def resolve_command(self, ctx: click.Context,
                        args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's, except that a mistyped name is matched against every command, not only those
        imported so far ("No such command 'dif'. Did you mean 'diff'?")."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None and not ctx.resilient_parsing:
            close = difflib.get_close_matches(name, self.list_commands(ctx))
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        module = importlib.import_module(f"{__name__}.{COMMANDS[cmd_name]}")
        command = getattr(module, cmd_name.replace("-", "_"))
        self.add_command(command, cmd_name)
        return command
