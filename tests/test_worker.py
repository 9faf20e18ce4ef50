"""The worker's two halves: compiling a key, then finishing it (reading, storing, linting its objects).

While one key is finished on the worker's second thread, the next compiles: a launch of the same
kernel as one still being finished must take that one's row, not compile again (toy project, gfx950).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey.keyfiles import expand_keys
from regsurvey.results import Row
from regsurvey.worker import Compiled, Duplicate, Worker

from .conftest import TOY


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Worker:
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    return Worker(TOY, TOY / "keys", tmp_path / "store" / "objects")


def test_a_kernel_still_being_finished_is_taken_from_it(worker: Worker) -> None:
    keys = {k.id: k for k in expand_keys(list(worker.kinds().values()), ["gfx950"])}
    # The row width only sizes the grid: both keys launch one kernel.
    first = worker.compile_key(keys["scale/w2/stop"])
    second = worker.compile_key(keys["scale/w8/stop"])
    assert isinstance(first[0], Compiled) and isinstance(second[0], Duplicate)
    (a,), (b,) = worker.finish(first), worker.finish(second)
    assert a.ok and not a.reused and b.ok and b.reused
    assert (b.object, b.resources, b.triton_hash, b.compile_s) == (a.object, a.resources, a.triton_hash, a.compile_s)
    assert a.lint == [] and b.lint == []  # linted once; AMD rows always carry their findings
    # Finished, it is in the result cache: a third key reuses it from there.
    (third,) = worker.compile_key(keys["scale/w2/stop"])
    assert isinstance(third, Row) and third.reused and third.object == a.object
    timing = worker.take_timing()
    assert timing["compile_s"] > 0 and timing["read_store_s"] > 0 and timing["lint_s"] > 0


def test_survey_key_compiles_and_finishes(worker: Worker) -> None:
    keys = {k.id: k for k in expand_keys(list(worker.kinds().values()), ["gfx950"])}
    rows = worker.survey_key(keys["gemm/w8"])
    assert [r.status for r in rows] == ["ok"]
    assert rows[0].resources["vgpr"] > 0 and rows[0].object is not None
