"""The lint's findings as a terminal table or as JSON: pure functions of the findings."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence

from ..model.findings import ERROR, Finding
from ..model.words import count


def findings_json(findings: Sequence[Finding]) -> str:
    """A JSON list with one object per finding (see :meth:`Finding.to_dict`)."""
    return json.dumps([f.to_dict() for f in findings], indent=1)


def findings_table(findings: Sequence[Finding], *, kernels: int, color: bool = False, width: int = 120) -> str:
    """Findings grouped by key (or file), errors first, and a one-line summary, for a terminal of
    ``width`` columns: the build and the argument in columns, the load and why in columns of text where
    they fit (else each a line under its finding)."""
    from rich.console import Console
    from rich.text import Text

    from .terminal import NAME, TEXT, Column, Grid

    out = io.StringIO()
    console = Console(file=out, color_system="standard" if color else None, width=width, highlight=False,
                      emoji=False)
    errors = sum(f.severity == ERROR for f in findings)
    if findings:
        grid = Grid([Column("key / file", NAME, min_width=12), Column("target", NAME),
                     Column("kernel", NAME, min_width=10), Column("argument", NAME, min_width=10),
                     Column("severity"), Column("load", TEXT, min_width=20), Column("why", TEXT, min_width=30)],
                    title=Text("kernel arguments loaded and never read", style="bold"))
        ordered = sorted(findings, key=lambda f: (f.severity != ERROR, f.key or f.file or "", f.target, f.kernel,
                                                  f.arg_index))
        for f in ordered:
            arg = f"#{f.arg_index} {f.arg_name or '?'} @{f.arg_offset}"
            line = f"line {f.line}: " if f.line is not None else ""
            grid.add_row(Text(f.key or f.file or ""), f.target, Text(f.kernel), Text(arg),
                         Text(f.severity, style="bold red" if f.severity == ERROR else "yellow"),
                         Text(f"{line}{f.load}"), Text(f.reason))
        for text in grid.lines(width):
            console.print(text)
    notes = len(findings) - errors
    console.print(f"{count(kernels, 'kernel')} linted: {count(errors, 'miscompile suspect')}, {count(notes, 'note')}")
    return out.getvalue()
