"""The worker's partial row: what every row of one key, or of one launch of it, holds before its build's
outcome is known, and the row of each outcome made from it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .compile_time import StageTimes
from .figures import NO_FIGURES, Figures
from .findings import Finding
from .results import ObjectRef, Row, Status


@dataclass(frozen=True)
class RowStart:
    """What every row of one key, or of one launch of it, holds before its build's outcome is known: the
    worker makes one per key (its kind body's launches each take :meth:`dataclasses.replace` of it with
    their own fields), and each row from one by :meth:`built`, :meth:`failed` or :meth:`skipped`. Its
    fields and those the three add are a :class:`Row`'s, each once (tested)."""

    key: str
    kind: str
    axes: dict[str, Any]
    target: str
    messages: tuple[str, ...] = ()  # what the kind body said (Row.messages), the same on every row of the key
    # The launch's (a key's own row, of a body that raised, skipped or launched nothing, has none of them).
    kernel: str | None = None
    launch: int = 0
    config: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None
    where: str | None = None
    project_where: str | None = None
    build: dict[str, Any] | None = None
    name: str | None = None
    flaky: str | None = None  # the intermittent failure its build hit before it built (a built row's)
    config_source: dict[str, Any] | None = None  # regsurvey fix: the config file entry (Row.config_source)

    def built(self, resources: Figures, *, object: ObjectRef, compile_s: float, triton_hash: str,
              findings: tuple[Finding, ...] | None, reused: bool = False, stage_s: StageTimes | None = None) -> Row:
        """The row of a build that built: its figures, its object and the lint's ``findings`` (None: not
        linted), each made this row's (``key`` its row id), its compile's seconds and their stages (None: not
        measured). ``reused``: its result is an earlier compile's (and so are the seconds)."""
        row = self._row(Status.OK, resources=resources, object=object, compile_s=compile_s, stage_s=stage_s,
                        triton_hash=triton_hash, reused=reused)
        if findings is None:
            return row
        return replace(row, lint=tuple(replace(f, key=row.row_id) for f in findings))

    def failed(self, error: str | None, *, status: Status = Status.ERROR, triton_hash: str | None = None,
               compile_s: float = 0.0, transient: bool = False) -> Row:
        """The row of a build (or of a kind body) that failed: ``status`` ERROR, or FLAKY (see Status)."""
        return self._row(status, error=error, triton_hash=triton_hash, compile_s=compile_s, transient=transient)

    def skipped(self, reason: str) -> Row:
        """The row of a key its kind body skipped (``rs.skip``)."""
        return self._row(Status.SKIPPED, skip_reason=reason)

    def _row(self, status: Status, *, error: str | None = None, resources: Figures = NO_FIGURES,
             object: ObjectRef | None = None, compile_s: float = 0.0, stage_s: StageTimes | None = None,
             triton_hash: str | None = None, reused: bool = False, skip_reason: str | None = None,
             transient: bool = False) -> Row:
        return Row(key=self.key, kind=self.kind, axes=self.axes, target=self.target, kernel=self.kernel,
                   status=status, error=error, resources=resources, object=object, compile_s=compile_s, stage_s=stage_s,
                   launch=self.launch, config=self.config, triton_hash=triton_hash, num_warps=self.num_warps,
                   num_stages=self.num_stages, where=self.where, reused=reused, flaky=self.flaky,
                   messages=list(self.messages), skip_reason=skip_reason, transient=transient, build=self.build,
                   name=self.name, project_where=self.project_where, config_source=self.config_source)
