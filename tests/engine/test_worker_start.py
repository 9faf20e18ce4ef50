"""How a survey's local workers start (engine/worker_start.py): the start method a variable may force, and the
caller's ``__main__`` hidden while a worker starts. (What environment a worker gets: tests/test_secret_vars.py.)"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from regsurvey.engine.errors import SurveyError
from regsurvey.engine.worker_start import main_module_hidden, worker_context, worker_start


@pytest.fixture
def fresh() -> Iterator[None]:
    """How workers start is decided once per process: asked again here, and again after."""
    worker_start.cache_clear()
    try:
        yield
    finally:
        worker_start.cache_clear()


def test_a_start_method_that_is_none_is_a_survey_error(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REGSURVEY_WORKER_START", "fork")
    with pytest.raises(SurveyError, match=r"^REGSURVEY_WORKER_START='fork': expected one of server, forkserver, "
                                          r"spawn$"):
        worker_start()


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_start_method_asked_for_is_the_one(fresh: None, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    monkeypatch.setenv("REGSURVEY_WORKER_START", method)
    assert worker_start() == method
    assert worker_context().get_start_method() == method


def test_the_callers_script_is_hidden_while_a_worker_starts() -> None:
    main = sys.modules["__main__"]
    before = (getattr(main, "__file__", None), main.__spec__)
    with main_module_hidden():
        assert not hasattr(main, "__file__") and main.__spec__ is None
    assert (getattr(main, "__file__", None), main.__spec__) == before
