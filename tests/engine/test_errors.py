"""The engine's one error for its callers (engine/errors.py): a survey that cannot start, said in one line,
with Python's whole traceback beside it when a keys file raised (``run --format json`` prints it)."""

from __future__ import annotations

import pickle

import pytest

from regsurvey.engine.errors import SurveyError
from regsurvey.engine.protocol import Failed

TRACEBACK = ('Traceback (most recent call last):\n  File "keys/gemm.py", line 3, in <module>\n'
             "    import nosuchlib\nModuleNotFoundError: No module named 'nosuchlib'\n")


def test_the_message_is_the_error_and_the_traceback_rides_beside_it() -> None:
    with pytest.raises(SurveyError) as raised:
        raise SurveyError("no key matches the selection (--kind/--key)")
    assert str(raised.value) == "no key matches the selection (--kind/--key)"
    assert raised.value.traceback is None and raised.value.args == ("no key matches the selection (--kind/--key)",)
    said = SurveyError("keys/gemm.py raised ModuleNotFoundError: No module named 'nosuchlib'", TRACEBACK)
    assert str(said) == "keys/gemm.py raised ModuleNotFoundError: No module named 'nosuchlib'"
    assert said.traceback == TRACEBACK and "\n" not in str(said)


def test_a_workers_failure_becomes_one_as_the_transports_raise_it() -> None:
    """What a worker answers when the keys files raise (:class:`Failed`) is what the transports raise:
    its error as the message, its traceback kept."""
    failed = Failed("keys/gemm.py raised ModuleNotFoundError: No module named 'nosuchlib'", traceback=TRACEBACK)
    error = SurveyError(failed.error, failed.traceback)
    assert (str(error), error.traceback) == (failed.error, TRACEBACK)
    assert isinstance(error, Exception) and not isinstance(error, ValueError)  # not taken for a bad value


def test_it_survives_pickling_with_its_traceback() -> None:
    copy = pickle.loads(pickle.dumps(SurveyError("the keys files did not finish importing within 8 s", TRACEBACK)))
    assert type(copy) is SurveyError
    assert (str(copy), copy.traceback) == ("the keys files did not finish importing within 8 s", TRACEBACK)
