"""The engine's messages (engine/protocol.py): frozen dataclasses, pickled over ``multiprocessing``
connections, each matched by its type. Every message crosses a real pipe here and comes back equal, of its
own type, with what it carries typed as it was sent (a row's status, a finding's severity)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import pickle
import typing
from typing import Any

import pytest

from regsurvey.compile.toolchain import PortableLaunch
from regsurvey.engine import protocol
from regsurvey.engine.protocol import (
    Answer,
    CapturedKey,
    Failed,
    KeyCaptured,
    KeyCompiled,
    KeyFinished,
    KeysListed,
    KeyWaiting,
    ListKeys,
    Request,
    Stop,
    SurveyKey,
    ToolchainInfo,
    ToolchainOf,
    WorkerExited,
    WorkerStarted,
)
from regsurvey.model.findings import Severity
from regsurvey.model.keys import Key
from regsurvey.model.results import SaidOnce, Status
from regsurvey.store.signing import Unsigned

from ..lint_surveys import clean_and_mutated

GEMM = Key(kind="gemm", axes=(("width", 2),), target="gfx950", id="gemm/w2")
BUFFERS = Key(kind="buffers", axes=(("width", 8),), target="gfx950", id="buffers/w8")


# A key's launches as its first copy captured them (the payloads are compile.toolchain.portable_launch's).
CAPTURED = CapturedKey(("INFO lib: tuned config",), (PortableLaunch(b"\x80\x05launch 0", "ab" * 32),
                                                     PortableLaunch(b"\x80\x05launch 1", "cd" * 32)))


def messages() -> list[Any]:
    """One of each message, carrying what a survey's would: the rows are the lint fixtures' real gfx950
    builds (tests/lint_surveys.py), with their typed findings."""
    _, head = clean_and_mutated()
    buffers_rows = tuple(r for r in head.rows if r.key == BUFFERS.id)
    said = SaidOnce("buffers", "gfx950", "INFO lib: Using configuration from configs/E=8.json")
    unsigned = Unsigned("0f" * 32 + ".json", signed=False)
    return [
        ListKeys(), ListKeys(("gfx950", "sm90")), ToolchainOf("hip"), SurveyKey(GEMM), SurveyKey(GEMM, reuse=False),
        SurveyKey(GEMM, captured=CAPTURED), Stop(),
        KeysListed((GEMM, BUFFERS), "gfx950", declared=(("gemm", ("gfx950",)), ("buffers", ("gfx950", "sm90")))),
        ToolchainInfo({"triton": "3.9.0", "amd_codegen_revision": "fixture", "fp_fusion": True}),
        KeyCaptured(GEMM, 3), KeyCaptured(GEMM, 2, captured=CAPTURED), KeyWaiting(GEMM, "process 1234"),
        KeyWaiting(GEMM, None),
        KeyCompiled(GEMM, notes=("cache entry ab.json is malformed (JSONDecodeError); recompiling",),
                    said_once=(said,), unsigned=(unsigned,)),
        KeyFinished(BUFFERS, buffers_rows, timing={"capture_s": 0.25, "compile_s": 1.5}, ready_at=1767225600.5,
                    peak_rss_mb=812.5, preloaded=True, notes=("a note",), said_once=(said,), unsigned=(unsigned,)),
        Failed("ValueError: no such width", GEMM, "Traceback (most recent call last):\n...", transient=True),
        Failed("keys/x.py raised"), WorkerExited(3), WorkerStarted(4321),
    ]


def test_every_message_crosses_a_pipe_unchanged() -> None:
    sent = messages()
    here, there = multiprocessing.Pipe()
    try:
        for message in sent:
            here.send(message)
            got = there.recv()
            assert type(got) is type(message) and got == message and got is not message
    finally:
        here.close()
        there.close()


def test_what_a_finished_key_carries_stays_typed() -> None:
    finished = next(m for m in messages() if isinstance(m, KeyFinished))
    got = pickle.loads(pickle.dumps(finished))
    (row,) = got.rows
    assert row.status is Status.OK and row.resources == finished.rows[0].resources and row.resources["vgpr"] == 70
    (finding,) = row.lint or ()
    assert finding.severity is Severity.ERROR and (finding.arg_name, finding.key) == ("out_ptr", "buffers/w8")
    assert got.said_once[0] == SaidOnce("buffers", "gfx950", "INFO lib: Using configuration from configs/E=8.json")
    assert got.unsigned[0].problem == "unsigned" and got.timing == {"capture_s": 0.25, "compile_s": 1.5}
    assert got.key.axes_dict == {"width": 8}


def test_defaults_say_the_plain_case() -> None:
    assert ListKeys().targets is None  # every target
    assert SurveyKey(GEMM).reuse is True  # the result cache is used unless --force
    assert (KeyWaiting(GEMM, None).holder, KeyCaptured(GEMM, 1).launches) == (None, 1)
    plain = KeyFinished(GEMM, ())
    assert (plain.timing, plain.ready_at, plain.peak_rss_mb, plain.preloaded, plain.notes, plain.said_once,
            plain.unsigned) == ({}, None, 0.0, False, (), (), ())
    assert plain.timing is not KeyFinished(GEMM, ()).timing  # each message its own dict
    assert (Failed("boom").key, Failed("boom").traceback, Failed("boom").transient) == (None, None, False)
    assert KeyCompiled(GEMM) == KeyCompiled(GEMM, (), (), ())


@pytest.mark.parametrize("message", messages()[:9], ids=lambda m: type(m).__name__)
def test_a_message_is_frozen(message: Any) -> None:
    fields = dataclasses.fields(message)
    name = fields[0].name if fields else "anything"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(message, name, None)


def test_requests_and_answers_are_the_unions_every_message_belongs_to() -> None:
    """Each message is matched by its type: every dataclass of the module is a request, an answer, or the
    first word of a server's worker, and only one of those."""
    requests, answers = set(typing.get_args(Request)), set(typing.get_args(Answer))
    assert requests == {ListKeys, ToolchainOf, SurveyKey, Stop}
    assert answers == {KeysListed, ToolchainInfo, KeyCaptured, KeyWaiting, KeyCompiled, KeyFinished, Failed,
                       WorkerExited}
    defined = {v for v in vars(protocol).values()
               if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == protocol.__name__}
    # A key's captured launches travel inside SurveyKey and KeyCaptured, never alone.
    assert defined == requests | answers | {WorkerStarted, CapturedKey} and not requests & answers
    kinds = [("request" if isinstance(m, Request) else "answer" if isinstance(m, Answer) else "started")
             for m in (pickle.loads(pickle.dumps(m)) for m in messages())]
    assert kinds == ["request"] * 7 + ["answer"] * 11 + ["started"]


def test_a_failure_names_its_key_only_when_it_is_about_one() -> None:
    def matched(message: Any) -> str:
        match message:
            case Failed(key=Key() as key):
                return f"row of {key.id}"
            case Failed(error=error):
                return f"survey error: {error}"
        return "other"

    assert matched(Failed("ValueError: no", GEMM)) == "row of gemm/w2"
    assert matched(Failed("keys/x.py raised")) == "survey error: keys/x.py raised"
    assert matched(KeyCompiled(GEMM)) == "other"
