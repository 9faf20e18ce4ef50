"""The lint of the cubins the workers leave unlinted (no stack frame), in batches while keys come in
(:mod:`regsurvey.engine.deferred_lint`): every build ends up linted, with what ``lint`` finds on it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.engine import deferred_lint
from regsurvey.engine.deferred_lint import DeferredLint
from regsurvey.engine.worker import Worker
from regsurvey.keys.keyfiles import expand_keys
from regsurvey.linting import lint_rows
from regsurvey.model.results import ObjectRef
from regsurvey.objects.nvidia_object import param_bank
from regsurvey.store.resultcache import ResultCache

from ..conftest import TOY
from ..readings import nop_parameter_reads


@pytest.fixture
def sm90_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Worker, list]:
    monkeypatch.syspath_prepend(str(TOY))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    # Every cubin to the batches: none linted from its instruction words (what a kernel the words cannot
    # clear gets: tests/lint/test_nvidia.py).
    monkeypatch.setenv("REGSURVEY_LINT_WORDS", "off")
    worker = Worker(TOY, TOY / "keys", tmp_path / "store" / "objects", "sm90")
    keys = expand_keys(list(worker.kinds().values()), ["sm90"])
    return worker, [worker.survey_key(k) for k in keys]


def test_batches_lint_every_frameless_cubin_as_lint_does(sm90_rows: tuple[Worker, list],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    worker, per_key = sm90_rows
    assert all(r.ok and r.resources["stack_bytes"] == 0 and r.lint is None for rows in per_key for r in rows)
    # One build with the miscompile class made in its object: its first parameter loaded, never read.
    at, first = 0, per_key[0][0]
    assert first.object is not None
    cubin = worker.objects.get(first.object.path, first.object.sha256)
    bank = param_bank(cubin)
    broken, replaced = nop_parameter_reads(cubin, bank.base + bank.offsets[0])
    assert replaced >= 1
    sha, path = worker.objects.put(broken, "cubin", {"ptx": worker.objects.text(first.object.path, "ptx") or ""})
    # A build of its own (the result cache keeps one report per build, and other keys share this one's).
    per_key[at] = [replace(first, object=ObjectRef(path, sha), triton_hash=sha), *per_key[at][1:]]
    rows = [r for rows in per_key for r in rows]
    monkeypatch.setattr(deferred_lint, "BATCH", 2)  # batches start while keys still come in
    deferred = DeferredLint(worker.objects.root, jobs=2)
    for rows_of_key in per_key[:-1]:
        deferred.add(rows_of_key)
    assert len(deferred.batches) >= 1
    deferred.add(per_key[-1], draining=True)  # every key handed out: its cubins go at once
    assert deferred.waiting == []
    linted, seconds = deferred.finish(rows)
    assert seconds > 0 and [r.row_id for r in linted] == [r.row_id for r in rows]
    expected = lint_rows(rows, worker.objects)
    assert all(r.lint is not None for r in linted)
    found = sorted((f.key, f.arg_index, f.arg_offset) for r in linted for f in r.lint or ())
    assert found == sorted((f.key, f.arg_index, f.arg_offset) for f in expected.findings)
    assert found == [(first.key, 0, 0)]  # the broken build's, and nothing on the others
    # The result cache keeps the findings: a later survey that reuses a build has them at once.
    cache = ResultCache(worker.objects)
    for row in linted:
        assert row.triton_hash is not None
        cached = cache.get(row.triton_hash)
        assert cached is not None and cached.report.findings == tuple(replace(f, key=None) for f in row.lint or ())



def test_what_waits_when_the_keys_run_out_is_linted_in_parallel_runs(sm90_rows: tuple[Worker, list],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from regsurvey import linting

    worker, per_key = sm90_rows
    rows = [r for rows in per_key for r in rows]
    runs: list[tuple[int, int]] = []
    real = linting.lint_objects

    def spy(batch, objects, jobs=1):  # type: ignore[no-untyped-def]
        runs.append((len(batch), jobs))
        return real(batch, objects, jobs)

    monkeypatch.setattr(linting, "lint_objects", spy)
    monkeypatch.setattr(deferred_lint, "RUN_CUBINS", 1)
    deferred = DeferredLint(worker.objects.root, jobs=2)
    for rows_of_key in per_key[:-1]:
        deferred.add(rows_of_key)
    assert deferred.batches == [] and deferred.waiting  # under BATCH: nothing started
    deferred.add(per_key[-1], draining=True)
    linted, _ = deferred.finish(rows)
    objects = len({r.object.sha256 for r in rows})
    assert objects > 2 and runs == [(objects, 2)]  # one batch, in as many nvdisasm runs as the survey has workers
    assert all(r.lint is not None for r in linted)
