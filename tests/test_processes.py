"""Which process a pid names, and the parent-death signal (regsurvey/processes.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from regsurvey.processes import ProcessEnd, ProcessId, alive, die_with_parent, start_time

# A parent that forks a child which asks to die with it and then says its pid; the parent waits to be killed.
PARENT = """
import os, sys, time
from regsurvey.processes import die_with_parent
parent = os.getpid()
if os.fork() == 0:
    die_with_parent(parent)
    print(os.getpid(), flush=True)
    time.sleep(600)
    os._exit(0)
time.sleep(600)
"""


def test_a_process_that_ended_is_gone_and_its_pid_taken_by_another_is_not_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    named = ProcessId(socket.gethostname(), child.pid, start_time(child.pid))
    assert not named.gone() and alive(child.pid)
    assert replace(named, start=(named.start or 0) + 1).gone()  # the same pid, started at another time
    assert not replace(named, host="another-host").gone()  # not this host's to judge
    child.kill()
    child.wait()
    assert named.gone() and not alive(child.pid)
    assert not ProcessId.this().gone()


@pytest.mark.parametrize("text", ["", "[]", '{"host": "h", "pid": "1", "start": null}', '{"pid": 1}'])
def test_a_name_that_names_no_process_is_none(text: str) -> None:
    assert ProcessId.from_json(text) is None


def test_a_name_reads_back() -> None:
    this = ProcessId.this()
    assert ProcessId.from_json(this.to_json()) == this


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_child_asking_to_die_with_its_parent_ends_when_the_parent_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    end = ProcessEnd(child)
    assert alive(child) and not end.ended()
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while alive(child):
        assert time.monotonic() < deadline, "the child outlived its parent"
        time.sleep(0.05)
    assert end.ended()
    end.close()


def test_without_a_parent_death_signal_this_process_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert die_with_parent() is False


def test_where_there_is_no_such_signal_a_thread_watches_the_survey() -> None:
    survey = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    worker = subprocess.Popen([sys.executable, "-c", "import time; from regsurvey.processes import watch; "
                               f"watch({survey.pid}, interval_s=0.05); print('watching', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout is not None and worker.stdout.readline() == "watching\n"
        survey.kill()
        survey.wait()
        assert worker.wait(timeout=60) == 1
    finally:
        worker.kill()
        survey.kill()
