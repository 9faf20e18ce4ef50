"""The worker server's own process (engine/server_process.py), its parts that run in a test's process: the
identity's lock one server holds, the survey at the other end of a worker's connection, and the surveys
watched so that their workers end with them.

The server itself, started as its own process (two at once end up one, a superseded one retires, a
survey killed has its workers killed), is tests/engine/test_server.py's and test_worker_lifetime.py's."""

from __future__ import annotations

import os
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

from regsurvey.engine.server_process import _lock, _peer_pid, _Surveys


def test_one_process_holds_the_identitys_lock(tmp_path: Path) -> None:
    path = tmp_path / "0123456789abcdef0123.sock"
    held = _lock(path)
    assert held is not None and (tmp_path / "0123456789abcdef0123.lock").is_file()
    began = time.monotonic()
    assert _lock(path, wait_s=0.2) is None  # another open of the lock: refused once its wait is over
    assert time.monotonic() - began >= 0.2
    os.close(held)  # the server exits
    again = _lock(path, wait_s=0.2)
    assert again is not None
    os.close(again)


def test_the_peer_of_a_connection_is_the_process_at_its_other_end() -> None:
    here, there = socket.socketpair()
    try:
        assert _peer_pid(here) == os.getpid() == _peer_pid(there)
    finally:
        here.close()
        there.close()
    plain = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # connected to nothing: no peer
    try:
        assert _peer_pid(plain) is None
    finally:
        plain.close()


def test_the_workers_of_a_survey_that_ended_are_named_once() -> None:
    selector = selectors.DefaultSelector()
    survey = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        surveys = _Surveys(selector)
        surveys.add(101, survey.pid)
        surveys.add(102, survey.pid)
        surveys.add(201, other.pid)
        surveys.add(301, None)  # its peer not known: nothing to watch
        assert surveys.workers == {101: survey.pid, 102: survey.pid, 201: other.pid}
        assert set(surveys.watches) == {survey.pid, other.pid} and surveys.ended() == []
        polled = surveys.polled()
        survey.communicate(b"")  # the survey ends
        if not polled:  # its pidfd wakes the selector
            events = selector.select(timeout=10)
            assert [key.data for key, _ in events] == [("survey", survey.pid)]
            assert sorted(surveys.ended(survey.pid)) == [101, 102]
        else:
            assert sorted(surveys.ended()) == [101, 102]
        assert set(surveys.watches) == {other.pid}
        surveys.forget(101)
        surveys.forget(102)
        surveys.forget(201)  # the other survey's last worker exited: it is watched no more
        assert surveys.watches == {} and surveys.workers == {}
        assert len(selector.get_map()) == 0
    finally:
        for p in (survey, other):
            if p.poll() is None:
                p.communicate(b"")
        selector.close()
