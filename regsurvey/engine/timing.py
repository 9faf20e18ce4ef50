"""Where a local survey's wall time went (``Survey.timing``), and the timeline a benchmark may ask for."""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..model.keys import Key
from .protocol import KeyFinished

_COMPILING = ("capture_s", "hash_s", "compile_s")  # a worker's compiling thread; the rest is finishing


TIMELINE_VAR = "REGSURVEY_TIMELINE"


@dataclass
class SurveyTiming:
    """Where a survey's wall time went, as seconds summed over workers (``Survey.timing``).

    ``compile_s`` is the toolchain's own work; ``capture_s`` (kind bodies), ``hash_s`` (Triton cache
    keys and result-cache look-ups), ``analyze_s`` (reading and linting each object:
    ``analysis.analyze``), ``store_s`` (storing objects and results), ``pressure_s`` (an AMD
    build's register pressure, kept beside its object: ``kept_pressure.keep_pressure``) and ``lint_s`` (the
    lint of the cubins the workers left, in batches beside the compiles) are regsurvey's own work; ``wait_s``
    is time a worker waited for a kernel another worker (or survey) was compiling, rather than compile it
    twice (it counts in ``idle_s`` too); ``idle_s`` is
    the time the N compile slots spent not compiling once the keys were listed (start-up still running,
    waiting for a key, or the tail; reading and linting run beside compiling, in each worker's
    finishing process); ``list_s`` is the wall time until the key
    list arrived; ``worker_peak_rss_mb`` is the largest worker's (or finishing process's) peak
    resident memory; ``workers_preloaded`` counts the workers that were forked with torch and Triton
    already imported, ``workers_from_server`` those a running ``regsurvey server`` forked;
    ``workers_started`` counts every worker started (each imports the checkout once, for its target);
    ``keys_shared`` counts the keys idle workers helped with at the survey's tail, ``launches_shared`` the
    launches of those keys that a helper compiled (see :mod:`.schedule`); ``kind_bodies`` counts the kind
    bodies the workers ran, ``copies_replayed`` the helpers' copies that compiled the launches their key's first
    copy captured instead of running its body again.
    """

    jobs: int
    start: float = field(default_factory=time.monotonic)
    listed: float = 0.0
    last_dispatch: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: float = 0.0  # the largest worker's
    preloaded: set[int] = field(default_factory=set)  # workers that came with torch and Triton imported
    from_server: set[int] = field(default_factory=set)  # workers a `regsurvey server` forked
    workers_started: int = 0
    keys_shared: int = 0  # keys that more than one worker surveyed side by side (sharing their launches)
    launches_shared: int = 0  # launches of those keys compiled by another worker than the first to finish
    # REGSURVEY_TIMELINE=FILE (benchmarks): each key's dispatch, capture, compile and finish per worker, and the
    # survey's last steps, as seconds since the keys were listed, written to FILE as JSON.
    timeline: list[tuple[float, str, str, str]] | None = field(
        default_factory=lambda: [] if os.environ.get(TIMELINE_VAR) else None)

    def mark(self, event: str, worker: object = None, key: Key | None = None, at: float | None = None) -> None:
        """Note ``event`` in the timeline (when one is kept), now or ``at`` (a monotonic time)."""
        if self.timeline is not None:
            who = f"{id(worker):x}/{getattr(worker, 'target', '')}" if worker is not None else ""
            when = (time.monotonic() if at is None else at) - (self.listed or self.start)
            self.timeline.append((round(when, 4), event, who, f"{key.id}@{key.target}" if key else ""))

    def write_timeline(self) -> None:
        """Mark the end and write the timeline, when one is kept (best effort: a benchmark's aid)."""
        if self.timeline is not None:
            self.mark("end")
            with contextlib.suppress(OSError):
                Path(os.environ[TIMELINE_VAR]).write_text(json.dumps({"jobs": self.jobs, "events": self.timeline}))

    def answered(self, worker: object, answer: KeyFinished, from_server: bool) -> None:
        """Add a key's answer from ``worker`` (``from_server``: a worker the server forked) to the figures."""
        self.peak_rss_mb = max(self.peak_rss_mb, answer.peak_rss_mb)
        if answer.preloaded:
            self.preloaded.add(id(worker))
        if from_server:
            self.from_server.add(id(worker))
        for phase, seconds in answer.timing.items():
            self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    def as_dict(self, workers_ready: list[float]) -> dict[str, float]:
        """The figures, rounded: ``workers_ready`` are the seconds each worker took to import the keys."""
        end = time.monotonic()
        listed = self.listed or end
        out = {"jobs": float(self.jobs), "wall_s": end - self.start, "list_s": listed - self.start,
               **{k: v for k, v in sorted(self.phases.items())},
               "idle_s": max(0.0, self.jobs * (end - listed) - sum(self.phases.get(p, 0.0) for p in _COMPILING)),
               "tail_s": end - self.last_dispatch if self.last_dispatch else 0.0}
        if workers_ready:
            out["worker_ready_max_s"] = max(workers_ready)
        if self.peak_rss_mb:
            out["worker_peak_rss_mb"] = self.peak_rss_mb
        out["workers_preloaded"] = float(len(self.preloaded))
        out["workers_from_server"] = float(len(self.from_server))
        out["workers_started"] = float(self.workers_started)
        if self.keys_shared:
            out["keys_shared"] = float(self.keys_shared)
            out["launches_shared"] = float(self.launches_shared)
        return {k: round(v, 3) for k, v in out.items()}
