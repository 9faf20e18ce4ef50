"""What every command's ``--help`` ends with: two examples or more, each a command line and what it does.
Standard library only: the ``regsurvey`` group's own help uses it before any subcommand is imported."""

from __future__ import annotations


def examples(*shown: tuple[str, str]) -> str:
    """A command's help epilog: each example's command line, and under it what it does. Kept as written
    (click's ``\\b`` paragraph): click would otherwise join the lines into one paragraph."""
    lines = ["\b", "Examples:"]
    for command, what in shown:
        lines += [f"  {command}", f"      {what}"]
    return "\n".join(lines)
