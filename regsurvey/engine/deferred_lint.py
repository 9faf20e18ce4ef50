"""The lint of the builds the workers leave unlinted, made while the survey goes on.

A worker lints every AMD object and every cubin whose SASS it reads anyway (a stack frame: its spills
are counted there). A cubin without a stack frame would need an nvdisasm run of its own, which costs
more than many compiles; so the survey lints those cubins together, from the store, in batches of many
cubins per nvdisasm run (:func:`regsurvey.linting.lint_objects`). The batches run on the survey's own
threads (one per worker) as the keys come in, beside the workers' compiles; once every key is handed
out, each key's cubins go at once. So every build is linted, as ``regsurvey lint`` lints it, and at the
end only the last key's cubins remain to wait for.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from ..errors import CorruptObjectError
from ..model.findings import Finding
from ..model.results import ObjectReport, Row
from ..model.targets import get_target
from ..store.files import WriteError

# Cubins collected before a batch starts while keys still come in, and the most one nvdisasm run takes (a
# batch is parallel runs of at most RUN_CUBINS). nvdisasm costs about 0.35 s of CPU to start and little per
# instruction: the demo's 133 sm90 cubins took 6.8 s of nvdisasm CPU in runs of 16 and 3.1 s in one run.
# But one run of 64 cubins took 2.4 s on the device, and the one started last ran a second past the last
# compile: runs of 16 cost about 0.6 s each, and every run of a batch starts at once.
BATCH = 64
RUN_CUBINS = 16


def _unlinted_cubin(row: Row) -> bool:
    return row.ok and row.lint is None and row.object is not None and get_target(row.target).is_nvidia


class DeferredLint:
    """Collects the unlinted cubins' rows as keys finish (:meth:`add`) and lints them in batches on
    ``threads`` threads (default: one per worker, at least two); :meth:`finish` lints the rest in at
    most ``jobs`` runs and gives every row its findings. A build that cannot be linted keeps ``lint``
    None."""

    def __init__(self, objects_dir: Path, jobs: int, threads: int | None = None):
        from ..store.objectstore import ObjectStore

        self.objects = ObjectStore(objects_dir)
        self.jobs = max(1, jobs)
        # A batch is an nvdisasm run (a process: no interpreter lock held while it runs) and a little
        # Python: as many at once as the survey has workers, so the lint keeps up with the compiles.
        self.pool = ThreadPoolExecutor(max_workers=threads or max(2, self.jobs), thread_name_prefix="regsurvey-lint")
        self.waiting: list[Row] = []
        self.sent: set[str] = set()  # object sha256s handed to a batch
        self.batches: list[Future[tuple[dict[str, tuple[Finding, ...]], float]]] = []
        self.runs: list[tuple[float, float, int]] = []  # each batch's monotonic start and end, and its cubins

    def add(self, rows: list[Row], draining: bool = False) -> None:
        """A key's rows: its unlinted cubins wait for a batch, which starts once it is full. ``draining``:
        every key has been handed out, so cores are freeing up: the batch starts now, however small,
        rather than at the end."""
        for row in rows:
            if _unlinted_cubin(row) and row.object is not None and row.object.sha256 not in self.sent:
                self.sent.add(row.object.sha256)
                self.waiting.append(row)
        if self.waiting and (draining or len(self.waiting) >= BATCH):
            # In parallel runs of at most RUN_CUBINS cubins, so that no run is long when the compiles end.
            self._send(self.waiting, jobs=min(self.jobs, -(-len(self.waiting) // RUN_CUBINS)))
            self.waiting = []

    def _send(self, rows: list[Row], jobs: int) -> None:
        self.batches.append(self.pool.submit(self._lint, rows, jobs))

    def _lint(self, rows: list[Row], jobs: int) -> tuple[dict[str, tuple[Finding, ...]], float]:
        """Findings by object sha256 (without key) of the objects that could be linted, and the seconds."""
        from ..linting import lint_objects

        began = time.monotonic()
        try:
            outcomes, seconds = lint_objects(rows, self.objects, jobs)
        except CorruptObjectError:
            return {}, 0.0  # an object altered since its worker stored it: left unlinted, as lint would report
        finally:
            self.runs.append((began, time.monotonic(), len(rows)))
        return {sha: found for sha, (found, why) in outcomes.items() if why is None}, seconds

    def finish(self, rows: list[Row]) -> tuple[list[Row], float]:
        """``rows`` (the survey's, in order) with the findings of every cubin linted here, and the
        seconds the lint took (summed over batches). The result cache keeps the findings too: a later
        survey reusing these builds has them at once."""
        if self.waiting:
            # The last batch, split over the cores the compiles have just freed.
            self._send(self.waiting, jobs=self.jobs)
            self.waiting = []
        findings: dict[str, tuple[Finding, ...]] = {}
        seconds = 0.0
        for batch in self.batches:
            found, spent = batch.result()
            findings.update(found)
            seconds += spent
        self.close()
        if not findings:
            return rows, seconds
        from ..store.resultcache import CachedResult, ResultCache

        cache = ResultCache(self.objects)
        out, cached = [], set()
        for row in rows:
            own = findings.get(row.object.sha256) if _unlinted_cubin(row) and row.object is not None else None
            if own is None:
                out.append(row)
                continue
            if row.triton_hash and row.triton_hash not in cached:
                assert row.object is not None
                cached.add(row.triton_hash)
                report = ObjectReport(row.resources, own)
                # Not kept on a full disk: the entry the worker stored says unlinted, so it is linted again.
                with contextlib.suppress(WriteError):
                    cache.put(row.triton_hash, CachedResult(kernel=row.kernel or "", report=report,
                                                            object=row.object, compile_s=row.compile_s,
                                                            stage_s=row.stage_s))
            out.append(replace(row, lint=tuple(replace(f, key=row.row_id) for f in own)))
        return out, seconds

    def close(self) -> None:
        """Drop the batches not started (the survey ends without them: interrupted, or failed)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
