"""Surveying a checkout (engine/survey.py), the parts that need no worker: which keys ``--kind``/``--key``
select, which targets the workers start for before the keys are listed, the failures taken from another's
record settled by the survey's own compile, the checks made before anything starts, and the set-up over a
pool of workers that are names (the rows in the keys' order, whatever order they finished in).

The same set-up over real workers: tests/engine/test_transport_local.py, test_server.py and test_ray.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from regsurvey.engine.costs import KeyCosts
from regsurvey.engine.errors import SurveyError
from regsurvey.engine.protocol import KeyCompiled, KeyFinished, KeysListed
from regsurvey.engine.schedule import Policy, Schedule
from regsurvey.engine.survey import (
    selected,
    settled_failures,
    starting_targets,
    survey_checkout,
    surveyed,
)
from regsurvey.model.keys import Key
from regsurvey.model.options import SurveyOptions
from regsurvey.model.progress import Progress
from regsurvey.model.results import Row, SaidOnce
from regsurvey.model.targets import UnknownTargetError
from regsurvey.model.version import READER_REVISION

from ..conftest import MADE_UP_TARGET, TOY

PLANTED = "CompilationError: at 12:4: out of resources"


def key(ident: str, target: str = "sm90") -> Key:
    kind = ident.split("/")[0]
    return Key(kind=kind, axes=(), target=target, id=ident)


def failure(ident: str, triton_hash: str | None, error: str = PLANTED, transient: bool = False) -> Row:
    return Row(key=ident, kind=ident.split("/")[0], axes={}, target="sm90", kernel="k", status="error", error=error,
               triton_hash=triton_hash, transient=transient)


# -- failures taken from another's record ------------------------------------------------------------------


def test_a_failure_taken_from_a_record_is_settled_where_the_survey_compiled_it_failing_so() -> None:
    compiled = failure("gemm/w2", "h1")
    taken = failure("gemm/w8", "h1", transient=True)  # another worker's .failed record: a hint
    assert settled_failures([compiled, taken]) == [compiled, replace(taken, transient=False)]
    assert settled_failures([taken, compiled])[0].transient is False  # wherever the compile is in the survey


@pytest.mark.parametrize(("other", "why"), [
    (None, "nothing in the survey compiled it"),
    (failure("gemm/w2", "h1", error="CompilationError: something else"), "it failed otherwise here"),
    (failure("gemm/w2", "h2"), "another kernel failed so"),
    (failure("gemm/w2", "h1", transient=True), "the other was taken from a record too"),
])
def test_a_failure_taken_from_a_record_stays_one_of_the_moment(other: Row | None, why: str) -> None:
    taken = failure("gemm/w8", "h1", transient=True)
    rows = [other, taken] if other is not None else [taken]
    assert settled_failures(rows) == rows, why
    assert settled_failures(rows)[-1] is taken


def test_only_failures_with_a_kernel_hash_are_settled() -> None:
    timed_out = Row(key="gemm/w8", kind="gemm", axes={}, target="sm90", kernel=None, status="error",
                    error="timed out after 600 s (--timeout)", transient=True)
    compiled = replace(timed_out, transient=False)  # the same message, but no kernel: no compile to match
    flaky = Row(key="gemm/w2", kind="gemm", axes={}, target="sm90", kernel="k", status="flaky", error=PLANTED,
                triton_hash="h1", transient=True)
    rows = [compiled, timed_out, failure("gemm/w4", "h1"), flaky]
    assert settled_failures(rows) == rows


# -- --kind and --key --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "chosen"), [
    (SurveyOptions(), ["gemm/w2", "gemm/w8", "scale/w2/stop", "moe_gemm/tp8"]),
    (SurveyOptions(kinds=("gemm",)), ["gemm/w2", "gemm/w8"]),
    (SurveyOptions(kinds=("*gemm",)), ["gemm/w2", "gemm/w8", "moe_gemm/tp8"]),
    (SurveyOptions(kinds=("GEMM",)), []),  # case matters
    (SurveyOptions(keys=("*/w8", "scale/*")), ["gemm/w8", "scale/w2/stop"]),
    (SurveyOptions(kinds=("gemm", "scale"), keys=("*w2*",)), ["gemm/w2", "scale/w2/stop"]),  # both select
    (SurveyOptions(kinds=("scale",), keys=("gemm/*",)), []),
])
def test_the_keys_kind_and_key_patterns_select(options: SurveyOptions, chosen: list[str]) -> None:
    keys = [key("gemm/w2"), key("gemm/w8"), key("scale/w2/stop"), key("moe_gemm/tp8")]
    assert [k.id for k in keys if selected(k, options)] == chosen


# -- the workers started before the keys are listed -------------------------------------------------------


def test_the_targets_asked_for_start_first_by_their_names(tmp_path: Path) -> None:
    costs = KeyCosts(tmp_path / "costs.json")
    checkout = SimpleNamespace(root=TOY)  # its keys files name gfx950 and sm90
    assert starting_targets(SurveyOptions(targets=("MI300X", "sm_90a")), checkout, costs) == ("gfx942",
                                                                                            ["gfx942", "sm90"])
    assert starting_targets(SurveyOptions(), checkout, costs) == ("gfx950", ["gfx950", "sm90"])


def test_without_a_guess_the_listing_worker_takes_the_usual_target_else_sm90(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "computed.py").write_text("m = rs.Matrix(targets=TARGETS, w=[1])\n")
    checkout = SimpleNamespace(root=tmp_path)
    costs = KeyCosts(tmp_path / "costs.json")
    assert starting_targets(SurveyOptions(), checkout, costs) == ("sm90", [])
    (tmp_path / "costs.json").write_text(json.dumps({"gfx950:a/1": 1.0, "gfx950:a/2": 2.0, "sm100:a/1": 9.0}))
    assert starting_targets(SurveyOptions(), checkout, KeyCosts(tmp_path / "costs.json")) == ("gfx950", [])


# -- before anything starts ----------------------------------------------------------------------------------


def test_an_unknown_target_or_no_keys_directory_is_said_before_anything_starts(tmp_path: Path) -> None:
    announced: list[str] = []
    progress = Progress(on_survey=announced.append)
    checkout = SimpleNamespace(root=tmp_path, label="HEAD~1 (abc1234567)")
    with pytest.raises(UnknownTargetError, match="unknown target 'gfx999'; known targets: gfx942, gfx950, gfx1100, "
                                                 "gfx1151, gfx1201, gfx1250, sm90, sm100"):
        survey_checkout(checkout, tmp_path / "objects", SurveyOptions(targets=("gfx999",)), progress)
    with pytest.raises(SurveyError) as raised:
        survey_checkout(checkout, tmp_path / "objects", SurveyOptions(), progress)
    assert str(raised.value) == f"no keys/ directory in HEAD~1 (abc1234567) ({tmp_path}): nothing to survey"
    assert announced == [] and not (tmp_path / "objects").exists()


def test_a_target_this_triton_cannot_build_for_is_refused_before_anything_starts(tmp_path: Path,
                                                                               made_up_target: str) -> None:
    announced: list[str] = []
    (tmp_path / "keys").mkdir()
    checkout = SimpleNamespace(root=tmp_path, label="HEAD")
    with pytest.raises(SurveyError) as raised:
        survey_checkout(checkout, tmp_path / "objects", SurveyOptions(targets=("sm90", MADE_UP_TARGET)),
                        Progress(on_survey=announced.append))
    assert str(raised.value) == made_up_target
    assert announced == [] and not (tmp_path / "objects").exists()


# -- the set-up over a pool ----------------------------------------------------------------------------------


@dataclass(eq=False)
class Worker:
    target: str


@dataclass
class Pool:
    """Workers that are names: each key sent compiles and finishes at once with the rows ``answers`` gives.
    What the survey asks of it is written down in ``asked``."""

    listed_keys: KeysListed
    answers: dict[str, tuple[Row, ...]]
    jobs: int = 1
    policy: Policy = Policy()
    lost_before: str = "a worker that failed before"
    said_once: set[SaidOnce] = field(default_factory=set)
    running: list[Worker] = field(default_factory=list)
    sent: list[tuple[Worker, Key]] = field(default_factory=list)
    asked: list[tuple[Any, ...]] = field(default_factory=list)

    @property
    def workers(self) -> list[Worker]:
        return list(self.running)

    def capacity(self) -> int:
        return self.jobs

    def start(self, target: str) -> Worker:
        self.asked.append(("start", target))
        self.running.append(Worker(target))
        return self.running[-1]

    def list_keys(self, target: str, targets: tuple[str, ...] | None) -> None:
        self.asked.append(("list_keys", target, targets))
        self.running.append(Worker(target))

    def listed(self, timeout: float) -> KeysListed:
        self.asked.append(("listed", timeout))
        return self.listed_keys

    def toolchain(self, backend: str) -> dict[str, Any]:
        self.asked.append(("toolchain", backend))
        return {"triton": "3.9.0", "backend": backend}

    def send(self, worker: Worker, key: Key, captured: object = None) -> None:
        self.sent.append((worker, key))

    def end(self, worker: Worker, idle: bool) -> None:
        self.asked.append(("end", worker.target, idle))
        self.running.remove(worker)

    def room(self) -> bool:
        return True

    def run(self, schedule: Schedule[Worker], listed_at: float) -> None:
        for _ in range(100):
            if schedule.done:
                return
            schedule.dispatch()
            while self.sent:
                worker, k = self.sent.pop(0)
                self.asked.append(("survey", k.id, k.target, worker.target))
                schedule.on_answer(worker, KeyCompiled(k))
                schedule.on_answer(worker, KeyFinished(k, self.answers[f"{k.target}:{k.id}"]))
        raise AssertionError("the schedule never finished")

    def close(self) -> None:
        self.asked.append(("close",))

    def figures(self, *, rows: int, lint_s: float, closed_at: float,
                lint_runs: list[tuple[float, float, int]]) -> dict[str, float]:
        return {"rows": float(rows), "lint_s": lint_s, "lint_runs": float(len(lint_runs))}


def rows_of(k: Key, *launches: tuple[str, str | None]) -> tuple[Row, ...]:
    """``k``'s rows, one per launch: (Triton hash, its error or None); a failure after the first launch was
    taken from another's record (transient)."""
    return tuple(Row(key=k.id, kind=k.kind, axes={}, target=k.target, kernel="k",
                     status="error" if failed is not None else "ok", error=failed, triton_hash=h, launch=i,
                     transient=failed is not None and i > 0, compile_s=0.5)
                 for i, (h, failed) in enumerate(launches))


def test_the_survey_of_a_pool_holds_the_selected_keys_rows_in_the_keys_order(tmp_path: Path) -> None:
    gemm2, gemm8, scale, gemm8_amd = key("gemm/w2"), key("gemm/w8"), key("scale/w2"), key("gemm/w8", "gfx950")
    gemm8 = replace(gemm8, axes=(("width", 8),))  # the larger: estimated the longest, surveyed first
    answers = {"sm90:gemm/w2": rows_of(gemm2, ("h2", None)),
               "sm90:gemm/w8": rows_of(gemm8, ("h8", None), ("h9", PLANTED)),
               "gfx950:gemm/w8": rows_of(gemm8_amd, ("a8", PLANTED), ("a8", PLANTED))}
    listed = KeysListed((gemm2, scale, gemm8, gemm8_amd), "sm90",
                        declared=(("gemm", ("sm90", "gfx950")), ("scale", ("sm90",))))
    said = {SaidOnce("gemm", "gfx950", "INFO lib: tables loaded"), SaidOnce("gemm", "sm90", "INFO lib: tables loaded"),
            SaidOnce("gemm", "sm90", "INFO lib: a config")}
    pool = Pool(listed, answers, jobs=2, said_once=said)
    checkout = SimpleNamespace(root=TOY, commit="c" * 40, label="HEAD", dirty=True)
    started: list[int] = []
    objects = tmp_path / "store" / "objects"
    survey = surveyed(pool, checkout, objects, SurveyOptions(targets=("sm90", "gfx950"), kinds=("gemm",), jobs=2),
                      Progress(on_start=started.append))

    assert started == [3]  # the scale key is not selected
    assert pool.asked[:5] == [("list_keys", "sm90", ("sm90", "gfx950")), ("start", "gfx950"), ("listed", 240.0),
                              ("toolchain", "cuda"), ("toolchain", "hip")]
    surveyed_in = [a[1:3] for a in pool.asked if a[0] == "survey"]
    assert surveyed_in.index(("gemm/w8", "sm90")) < surveyed_in.index(("gemm/w2", "sm90"))  # longest first
    assert pool.asked[-1] == ("close",)
    assert [(r.target, r.row_id) for r in survey.rows] == [("sm90", "gemm/w2"), ("sm90", "gemm/w8"),
                                                          ("sm90", "gemm/w8#1"), ("gfx950", "gemm/w8"),
                                                          ("gfx950", "gemm/w8#1")]
    # gfx950's launch 1 took launch 0's failure from its record: the survey compiled it and it failed so.
    assert [r.transient for r in survey.rows] == [False, False, True, False, False]
    assert (survey.commit, survey.label, survey.dirty, survey.targets) == ("c" * 40, "HEAD", True, ("sm90", "gfx950"))
    assert survey.toolchain == {"cuda": {"triton": "3.9.0", "backend": "cuda"},
                                "hip": {"triton": "3.9.0", "backend": "hip"}}
    assert survey.declared == {"gemm": ("sm90", "gfx950"), "scale": ("sm90",)}
    assert survey.said_once == (SaidOnce("gemm", "sm90", "INFO lib: a config"),  # by target, then text
                                SaidOnce("gemm", "sm90", "INFO lib: tables loaded"),
                                SaidOnce("gemm", "gfx950", "INFO lib: tables loaded"))
    assert survey.timing == {"rows": 5.0, "lint_s": 0.0, "lint_runs": 0.0}
    assert survey.reader == READER_REVISION and survey.created.endswith("+00:00")
    # The compile seconds of what built, kept for the next survey's order.
    assert json.loads((tmp_path / "store" / "costs.json").read_text()) == {"sm90:gemm/w2": 0.5, "sm90:gemm/w8": 0.5}


def test_a_target_the_matrices_name_that_this_triton_cannot_build_for_is_refused_before_any_key_is_sent(
        tmp_path: Path, made_up_target: str) -> None:
    """No target asked for: the keys' own, as listed, are checked before the schedule sends any."""
    listed = KeysListed((key("gemm/w2"), key("gemm/w2", MADE_UP_TARGET)), "sm90",
                        declared=(("gemm", ("sm90", MADE_UP_TARGET)),))
    pool = Pool(listed, {})
    with pytest.raises(SurveyError) as raised:
        surveyed(pool, SimpleNamespace(root=TOY), tmp_path / "objects", SurveyOptions(), Progress())
    assert str(raised.value) == made_up_target
    assert pool.sent == [] and pool.asked[-1] == ("close",) and not any(a[0] == "toolchain" for a in pool.asked)


def test_a_selection_of_no_key_closes_the_pool_and_says_so(tmp_path: Path) -> None:
    pool = Pool(KeysListed((key("gemm/w2"),), "sm90"), {})
    with pytest.raises(SurveyError, match=r"^no key matches the selection \(--kind/--key\)$"):
        surveyed(pool, SimpleNamespace(root=TOY), tmp_path / "objects", SurveyOptions(kinds=("moe",)), Progress())
    assert pool.asked[-1] == ("close",) and not any(a[0] == "toolchain" for a in pool.asked)
