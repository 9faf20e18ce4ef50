"""Where a local survey's wall time went (engine/timing.py, ``Survey.timing``): the phases workers report
summed, the idle and tail seconds of the compile slots, the workers counted once each, and the timeline a
benchmark asks for with REGSURVEY_TIMELINE. Driven on a clock of the test's own."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from regsurvey.engine import timing
from regsurvey.engine.protocol import KeyFinished
from regsurvey.engine.timing import TIMELINE_VAR, SurveyTiming
from regsurvey.model.keys import Key

GEMM = Key(kind="gemm", axes=(("width", 2),), target="sm90", id="gemm/w2")


def at(monkeypatch: pytest.MonkeyPatch, now: float) -> None:
    """The module's monotonic clock reads ``now``."""
    monkeypatch.setattr(timing, "time", SimpleNamespace(monotonic=lambda: now))


def finished(**fields: object) -> KeyFinished:
    return KeyFinished(GEMM, (), **fields)  # type: ignore[arg-type]


def test_answers_add_their_phases_and_count_each_worker_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMELINE_VAR, raising=False)
    t = SurveyTiming(jobs=2, start=100.0)
    one, two = object(), object()
    t.answered(one, finished(timing={"capture_s": 0.5, "compile_s": 2.0}, peak_rss_mb=700.0, preloaded=True), True)
    t.answered(one, finished(timing={"compile_s": 1.0, "analyze_s": 0.25}, peak_rss_mb=900.0, preloaded=True), True)
    t.answered(two, finished(timing={"compile_s": 0.5}, peak_rss_mb=650.0), False)
    assert t.phases == {"capture_s": 0.5, "compile_s": 3.5, "analyze_s": 0.25}
    assert t.peak_rss_mb == 900.0
    assert (len(t.preloaded), len(t.from_server)) == (1, 1)  # the first worker, however many keys it answered
    assert t.timeline is None  # kept only when a benchmark asks


def test_the_figures_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMELINE_VAR, raising=False)
    t = SurveyTiming(jobs=2, start=100.0, listed=101.5, last_dispatch=104.0)
    t.answered(object(), finished(timing={"capture_s": 1.0, "hash_s": 0.5, "compile_s": 3.0, "store_s": 0.75},
                                  peak_rss_mb=812.3456), True)
    t.workers_started = 3
    at(monkeypatch, 106.0)
    # idle: 2 slots x 4.5 s since the list, less the 4.5 s of capturing, hashing and compiling (not storing).
    assert t.as_dict([0.9, 1.2345]) == {
        "jobs": 2.0, "wall_s": 6.0, "list_s": 1.5, "capture_s": 1.0, "compile_s": 3.0, "hash_s": 0.5,
        "store_s": 0.75, "idle_s": 4.5, "tail_s": 2.0, "worker_ready_max_s": 1.234, "worker_peak_rss_mb": 812.346,
        "workers_preloaded": 0.0, "workers_from_server": 1.0, "workers_started": 3.0}
    assert list(t.as_dict([]))[:8] == ["jobs", "wall_s", "list_s", "capture_s", "compile_s", "hash_s", "store_s",
                                        "idle_s"]  # the phases sorted by name


def test_what_did_not_happen_is_left_out_or_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TIMELINE_VAR, raising=False)
    t = SurveyTiming(jobs=1, start=10.0)  # the keys never listed, nothing dispatched, no worker ready
    at(monkeypatch, 12.5)
    assert t.as_dict([]) == {"jobs": 1.0, "wall_s": 2.5, "list_s": 2.5, "idle_s": 0.0, "tail_s": 0.0,
                             "workers_preloaded": 0.0, "workers_from_server": 0.0, "workers_started": 0.0}
    busy = SurveyTiming(jobs=1, start=0.0, listed=1.0, phases={"compile_s": 5.0}, keys_shared=2, launches_shared=3)
    at(monkeypatch, 3.0)
    figures = busy.as_dict([])
    assert figures["idle_s"] == 0.0  # never below zero, whatever the workers summed
    assert (figures["keys_shared"], figures["launches_shared"]) == (2.0, 3.0)


def test_the_timeline_a_benchmark_asks_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = tmp_path / "timeline.json"
    monkeypatch.setenv(TIMELINE_VAR, str(out))
    t = SurveyTiming(jobs=1, start=50.0)
    worker = SimpleNamespace(target="sm90")
    t.mark("listing", at=50.25)  # before the list: seconds since the start
    t.listed = 51.0
    t.mark("dispatch", worker, GEMM, at=51.123456)
    at(monkeypatch, 52.0)
    t.write_timeline()
    who = f"{id(worker):x}/sm90"
    assert t.timeline == [(0.25, "listing", "", ""), (0.1235, "dispatch", who, "gemm/w2@sm90"), (1.0, "end", "", "")]
    assert json.loads(out.read_text()) == {"jobs": 1, "events": [[0.25, "listing", "", ""],
                                                                  [0.1235, "dispatch", who, "gemm/w2@sm90"],
                                                                  [1.0, "end", "", ""]]}
    monkeypatch.setenv(TIMELINE_VAR, str(tmp_path))  # a directory: not written, and the survey goes on
    SurveyTiming(jobs=1).write_timeline()
    assert tmp_path.is_dir()
