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


def findings_table(findings: Sequence[Finding], *, kernels: int, color: bool = False, width: int = 200) -> str:
    """Findings grouped by key (or file), errors first, and a one-line summary."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    out = io.StringIO()
    console = Console(file=out, color_system="standard" if color else None, width=width, highlight=False)
    errors = sum(f.severity == ERROR for f in findings)
    if findings:
        table = Table(title="kernel arguments loaded and never read", title_justify="left", header_style="bold")
        for name in ("key / file", "target", "kernel", "argument", "severity", "load", "why"):
            table.add_column(name, overflow="fold")
        ordered = sorted(findings, key=lambda f: (f.severity != ERROR, f.key or f.file or "", f.target, f.kernel,
                                                  f.arg_index))
        for f in ordered:
            arg = f"#{f.arg_index} {f.arg_name or '?'} @{f.arg_offset}"
            line = f"line {f.line}: " if f.line is not None else ""
            table.add_row(f.key or f.file or "", f.target, f.kernel, arg,
                          Text(f.severity, style="bold red" if f.severity == ERROR else "yellow"),
                          f"{line}{f.load}", f.reason)
        console.print(table)
    notes = len(findings) - errors
    console.print(f"{count(kernels, 'kernel')} linted: {count(errors, 'miscompile suspect')}, {count(notes, 'note')}")
    return out.getvalue()
