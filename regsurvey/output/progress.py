"""A progress bar for surveys on stderr: keys done/total, launches compiled and reused, failures, ETA.

Quiet when stderr is not a terminal or when disabled (``--quiet``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from ..model.keys import Key
from ..model.progress import Progress
from ..model.results import Row


@contextlib.contextmanager
def survey_progress(enabled: bool = True) -> Iterator[Progress]:
    """A :class:`Progress` that drives a rich progress bar, or does nothing."""
    if not (enabled and sys.stderr.isatty()):
        yield Progress()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
    from rich.progress import Progress as Bar

    counts = {"failed": 0, "compiled": 0, "reused": 0}
    with Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
             TextColumn("{task.fields[compiled]} compiled, {task.fields[reused]} reused, "
                        "{task.fields[failed]} failed"), TimeRemainingColumn(),
             console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("listing keys", total=None, failed=0, compiled=0, reused=0)

        def on_start(total: int) -> None:
            bar.update(task, total=total, description="surveying")

        def on_key(key: Key, rows: list[Row]) -> None:
            counts["failed"] += any(r.failed for r in rows)
            counts["reused"] += sum(r.reused for r in rows)
            counts["compiled"] += sum(r.ok and not r.reused for r in rows)
            bar.update(task, advance=1, description=key.id, failed=counts["failed"],
                       compiled=counts["compiled"], reused=counts["reused"])

        yield Progress(on_start=on_start, on_key=on_key)
