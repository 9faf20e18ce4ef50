"""How every report names a build: its key, its kernel, and which of the key's launches it is.

One key may launch a kernel several times (the gate/up and the down GEMM of an MoE, through one library
call). The name the kind body gave a launch (``rs.name``, ``rs.names``) tells them apart; else the launch's
index within the key does (its row id's ``#N``), said only where the key launches that kernel, with that
autotune config, more than once. The survey table, the diff's table, Markdown, JSON and HTML, the check's
report and SARIF, and ``explain`` all name builds through :func:`build_names`, so a build reads the same in
each: ``moe/tp8 fused_moe_kernel [down]``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .results import Row
from .words import ARROW


@dataclass(frozen=True)
class BuildName:
    """The name of one build (a row of a key on a target)."""

    key: str
    kernel: str | None  # None: a key's own row (its kind body raised, launched nothing, or skipped the key)
    launch: str | None = None  # the kind body's name for the launch, else ``launch N`` where needed, else None
    config: int | None = None  # the autotune config index
    # In a comparison, the base's config index where the base lists the same config under another (the
    # comparison pairs an autotuned launch's builds by what their configs built them with: diff.core).
    base_config: int | None = None

    @property
    def kernel_text(self) -> str:
        """The kernel and the launch, without the config: ``fused_moe_kernel [down]``, ``matmul [launch 2]``,
        ``matmul``; empty for a key's own row. What the diff's summary groups builds by."""
        if self.kernel is None:
            return ""
        return f"{self.kernel} [{self.launch}]" if self.launch else self.kernel

    @property
    def text(self) -> str:
        """The build within its key: ``fused_moe_kernel [down]``, ``axpy [cfg 1]``, ``matmul [launch 2,
        cfg 0]``, ``matmul``, a config the base lists under another index ``axpy [cfg 0 → 1]``; empty for a
        key's own row. The kernel column of every table."""
        return self.label()

    def label(self, arrow: str = ARROW) -> str:
        """:attr:`text`, with ``arrow`` between the base's config index and the head's (the JSON's and the
        CSV's are ASCII)."""
        if self.kernel is None:
            return ""
        config = None
        if self.config is not None:
            moved = self.base_config is not None and self.base_config != self.config
            config = f"cfg {self.base_config} {arrow} {self.config}" if moved else f"cfg {self.config}"
        parts = [p for p in (self.launch, config) if p]
        return f"{self.kernel} [{', '.join(parts)}]" if parts else self.kernel

    def __str__(self) -> str:
        """``moe/tp8 fused_moe_kernel [down]``; a key's own row: the key."""
        return f"{self.key} {self.text}" if self.kernel is not None else self.key


def build_name(row: Row, several: bool = False) -> BuildName:
    """``row``'s name; ``several``: its key launches its kernel (with its config) more than once, so an
    unnamed launch is told by its index."""
    if not row.kernel:
        return BuildName(row.key, None)
    launch = row.name or (f"launch {row.launch}" if several else None)
    return BuildName(row.key, row.kernel, launch, row.config)


def build_names(rows: Iterable[Row]) -> dict[tuple[str, str], BuildName]:
    """The name of each of ``rows`` by (target, row id). ``rows``: every row of the keys named (a survey's),
    since whether a launch needs its index depends on the key's other launches."""
    rows = list(rows)
    launches: Counter[tuple[str, str, str | None, int | None]] = Counter(
        (r.target, r.key, r.kernel, r.config) for r in rows if r.kernel)
    return {(r.target, r.row_id): build_name(r, launches[(r.target, r.key, r.kernel, r.config)] > 1) for r in rows}


__all__ = ["BuildName", "build_name", "build_names"]
