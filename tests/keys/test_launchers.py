"""What happens while a key's kind body runs, for launcher patterns real projects use (fixture project
tests/fixtures/launchers, real compiles for gfx950 and sm90):

- a persistent launcher warms its kernel up and sizes the grid from the compiled kernel's registers,
  spills and shared memory: ``warmup`` returns the compiled kernel with the driver's figures;
- a body that raises after launching keeps its launches and fails the key, in every report and the gate;
- a compile error shows its cause, not Triton's location line;
- what a launcher logs, warns or prints is kept with its key;
- a kind takes some of an axis's values, and a body skips a combination that does not exist;
- a kernel named per specialization (``repr=``) is shown under the name it was compiled under.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from regsurvey.check.baseline import Baseline
from regsurvey.check.gate import NEWLY_FAILING, judge
from regsurvey.diff.core import compare, stack
from regsurvey.engine.worker import Worker
from regsurvey.keys.keyfiles import KeysFileError, expand_keys, load_kinds
from regsurvey.model.comparison import Mark
from regsurvey.model.keys import Key
from regsurvey.model.results import Row, Survey
from regsurvey.model.targets import ANY_TARGET
from regsurvey.objects.amd_object import parse_hsaco
from regsurvey.output.diff_json import comparison_dict
from regsurvey.output.diff_table import TableFormat
from regsurvey.output.gate_text import problem_message
from regsurvey.output.html import comparison_data
from regsurvey.output.markdown import MarkdownFormat
from regsurvey.output.table import print_survey, summary_line

from ..conftest import FIXTURES

PROJECT = FIXTURES / "launchers"
FP8_CAUSE = "type fp8e4b8 not supported in this architecture"


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Worker:
    monkeypatch.syspath_prepend(str(PROJECT))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    # One worker for every target (ANY_TARGET): these launchers read the device each time they run,
    # so one import serves every target, and a test can survey one key on two of them.
    return Worker(PROJECT, PROJECT / "keys", tmp_path / "store" / "objects", ANY_TARGET)


@pytest.fixture
def ops(worker: Worker) -> Any:
    worker.kinds()  # imports the project's launchers
    from launcherkernels import ops as module

    return module


def key(worker: Worker, key_id: str, target: str) -> Key:
    found = [k for k in expand_keys(list(worker.kinds().values()), [target]) if k.id == key_id]
    assert found, f"no key {key_id}"
    return found[0]


def survey(rows: list[Row], label: str) -> Survey:
    return Survey(commit=None, label=label, targets=tuple(dict.fromkeys(r.target for r in rows)), toolchain={},
                  rows=tuple(rows))


def table_text(s: Survey) -> str:
    """The survey tables as ``run`` prints them, with the lines under their rows (errors, what kind bodies
    said)."""
    console = Console(file=io.StringIO(), width=400, no_color=True)
    print_survey(s, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


# ---- warmup ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["gfx950", "sm90"])
def test_warmup_returns_the_compiled_kernel_with_the_drivers_figures(worker: Worker, ops: Any, target: str) -> None:
    """The launcher warms up, reads n_regs / n_spills / n_max_threads / metadata.shared, sizes a
    persistent grid from them and the SM count, then launches the compiled kernel and the jit function:
    one row, whose figures (read from the object) are what the launcher saw."""
    ops.SEEN.clear()
    (row,) = worker.survey_key(key(worker, "softmax/w8", target))
    assert row.ok and row.kernel == "rows_softmax" and row.compile_s > 0, row.error
    assert row.where is not None and "launcherkernels/ops.py" in row.where
    seen = ops.SEEN[target]
    binary = worker.objects.get(row.object.path, row.object.sha256)  # type: ignore[union-attr]
    res = row.resources
    if target == "gfx950":
        meta = parse_hsaco(binary).kernels[0].metadata
        # HIP's NUM_REGS is the note's unified .vgpr_count; LOCAL_SIZE_BYTES the private segment;
        # MAX_THREADS_PER_BLOCK the max flat workgroup size.
        assert seen["n_regs"] == meta[".vgpr_count"] == res["vgpr"] + res["agpr"]
        assert seen["n_spills"] == meta[".private_segment_fixed_size"] // 4 == res["scratch_bytes"] // 4
        assert seen["n_max_threads"] == meta[".max_flat_workgroup_size"] == 4 * 64
        assert seen["shared"] == res["lds_bytes"]
        per_cu = 4 * min(8, 512 // res["vgpr"]) // 4
        if res["lds_bytes"]:
            per_cu = min(per_cu, 160 * 1024 // res["lds_bytes"])
        sms = 256
    else:
        assert seen["n_regs"] == res["regs"]
        assert seen["n_spills"] == res["stack_bytes"] // 4
        assert seen["n_max_threads"] == row.num_warps * 32 == 128  # the kernel's .reqntid
        # metadata.shared is Triton's dynamic shared memory; the kernel has no static shared memory (its
        # .nv.shared section holds only the driver's 1 KiB reserve), so it is all of the row's shared_bytes.
        dynamic = res["shared_bytes"]
        assert seen["shared"] == dynamic > 0
        per_cu = min(65536 // (res["regs"] * 32 * 4), 228 * 1024 // dynamic)
        sms = 132
    assert seen["programs"] == min(8 * 1024, sms * per_cu)
    # Surveyed again by the same worker: Triton's in-process cache was emptied when the body ended,
    # so the warmup is seen (and reuses the result) instead of finding the kernel compiled.
    (again,) = worker.survey_key(key(worker, "softmax/w8", target))
    assert again.ok and again.reused and again.object == row.object


# ---- a body that raises after launching ----------------------------------------------------------------


def test_a_body_that_raises_after_launching_keeps_its_launches(worker: Worker, ops: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    k = key(worker, "raises/w2", "gfx950")
    base_rows = worker.survey_key(k)
    assert [(r.row_id, r.status) for r in base_rows] == [("raises/w2", "ok"), ("raises/w2#1", "ok")]
    monkeypatch.setattr(ops, "FAIL_AFTER_LAUNCH", True)
    head_rows = worker.survey_key(k)
    first, raised = head_rows
    assert first.ok and first.object == base_rows[0].object
    assert raised.status == "error" and raised.kernel is None and raised.launch == 1 and raised.row_id == "raises/w2#1"
    line = raised.error_line
    assert line.startswith("kind body raised after 1 launch at launcherkernels/ops.py:"), line
    assert line.endswith(": ValueError: second pass needs 512 columns, got 256")

    base, head = survey(base_rows, "base"), survey(head_rows, "head")
    comparison = compare(base, head)
    marks = {r.row_id: r.mark for r in comparison.rows}
    assert marks == {"raises/w2": Mark.UNCHANGED, "raises/w2#1": Mark.NEWLY_FAILING}
    result = judge(comparison, Baseline())
    assert [(p.rule, p.row.row_id) for p in result.problems] == [(NEWLY_FAILING, "raises/w2#1")]
    assert line in problem_message(result.problems[0])
    assert line in TableFormat(width=300).format(comparison)
    assert "kind body raised after 1 launch at launcherkernels/ops.py:" in MarkdownFormat().format(comparison)
    assert f"error: {line}" in table_text(head) and "raises/w2" in table_text(head)
    assert summary_line(head).startswith("1 key on gfx950: 2 builds (1 ok, 1 failed);")
    # A key that raised on the base and builds on the head is fixed.
    assert {r.row_id: r.mark for r in compare(head, base).rows}["raises/w2#1"] is Mark.FIXED


# ---- a kernel named per specialization ---------------------------------------------------------------


@pytest.mark.parametrize("target", ["gfx950", "sm90"])
def test_a_kernel_is_shown_under_the_name_it_was_compiled_under(worker: Worker, target: str) -> None:
    """triton_kernels names each matmul specialization after its tiles and dtypes (``repr=``): the name in
    the object, and what a profiler shows. Each row takes it, whether compiled or reused."""
    rows = {w: worker.survey_key(key(worker, f"named/w{w}", target))[0] for w in (2, 8)}
    for width, row in rows.items():
        assert row.ok, row.error
        assert row.kernel == f"tile_scale_{64 * width}"
        binary = worker.objects.get(row.object.path, row.object.sha256)  # type: ignore[union-attr]
        if target == "gfx950":
            assert parse_hsaco(binary).kernels[0].metadata[".name"] == row.kernel
        else:
            assert row.kernel.encode() + b"\0" in binary  # the entry symbol's name
    (again,) = worker.survey_key(key(worker, "named/w2", target))
    assert again.reused and again.kernel == "tile_scale_128"


# ---- compile errors ----------------------------------------------------------------------------------


def test_a_compile_error_shows_its_cause_and_keeps_its_whole_text(worker: Worker) -> None:
    (row,) = worker.survey_key(key(worker, "fp8/w2", "sm90"))
    assert row.status == "error" and row.kernel == "to_fp8_fnuz"
    assert row.error is not None and row.error.startswith("CompilationError: at ")
    assert row.error_line.startswith(FP8_CAUSE), row.error_line
    # The whole message: Triton quotes 12 source lines before the cause.
    assert len(row.error.splitlines()) > 12 and FP8_CAUSE in row.error.splitlines()[-1]
    again = Survey.from_json(survey([row], "head").to_json()).rows[0]
    assert again.error == row.error

    head = survey([row], "head")
    assert f"error: {FP8_CAUSE}" in table_text(head)
    new = compare(survey([], "base"), head)
    assert FP8_CAUSE in TableFormat(width=300).format(new)
    assert FP8_CAUSE in MarkdownFormat().format(new)
    assert FP8_CAUSE in problem_message(judge(new, Baseline()).problems[0])
    still = compare(head, head)
    assert FP8_CAUSE in TableFormat(width=300).format(still) and FP8_CAUSE in MarkdownFormat().format(still)
    ((label, side),) = comparison_data(still, "x")["rows"][0]["sides"]  # the same on both sides: sent once
    assert label == "before and after"
    assert side["error_line"] == row.error_line and side["error"] == row.error


def test_a_ptxas_failure_shows_ptxas_own_error(worker: Worker) -> None:
    (row,) = worker.survey_key(key(worker, "starved/w2", "sm90"))
    assert row.status == "error" and row.error is not None
    assert row.error.startswith("PTXASError: PTXAS error: Internal Triton PTX codegen error")
    assert row.error_line.startswith("ptxas"), row.error_line
    assert "(C7602) Insufficient registers (24) to compile instruction" in row.error_line
    added = compare(survey([], "base"), survey([row], "head"))  # reports cut the line at 160 characters
    assert row.error_line[:150] in TableFormat(width=300).format(added)


# ---- what a launcher says ----------------------------------------------------------------------------


def test_what_a_launcher_logs_warns_and_prints_is_kept_with_the_key(worker: Worker) -> None:
    (tuned,) = worker.survey_key(key(worker, "tuned/w2", "gfx950"))
    assert tuned.messages == ["INFO launcherkernels.ops: Using configuration from configs/N=4096,device=tuned.json"]
    for target in ("gfx950", "sm90"):  # a warning shown for an earlier key is still kept for the next
        (fallback,) = worker.survey_key(key(worker, "tuned/w8", target))
        warning, printed = fallback.messages
        assert warning.startswith("UserWarning: no tuned config for 8 rows; using the default (")
        assert "keys/launchers.py:" in warning
        assert printed == "stdout: scale: default block for 8 rows"
    head = survey([tuned, fallback], "head")
    assert Survey.from_json(head.to_json()).rows == head.rows
    text = table_text(head)
    assert "said: INFO launcherkernels.ops: Using configuration from" in text
    assert "said: UserWarning: no tuned config for 8 rows" in text and "(+1 more)" in text
    # The HTML report lists the builds of kinds where something changed (here: both added), each side's messages.
    data = comparison_data(compare(survey([], "base"), head), "x")
    assert [dict(r["sides"])["after"]["messages"] for r in data["rows"]] == [tuned.messages, fallback.messages]


def test_a_survey_json_without_messages_or_skip_reason_loads(worker: Worker) -> None:
    import json

    (row,) = worker.survey_key(key(worker, "tuned/w2", "gfx950"))
    data = json.loads(survey([row], "old").to_json())
    for r in data["rows"]:
        del r["messages"], r["skip_reason"]
    (loaded,) = Survey.from_json(json.dumps(data)).rows
    assert loaded.messages == [] and loaded.skip_reason is None and loaded.resources == row.resources


# ---- axis subsets and skipped keys -------------------------------------------------------------------


def test_a_kind_takes_some_of_an_axis_values(worker: Worker) -> None:
    ids = {k.id for k in expand_keys(list(worker.kinds().values()), ["gfx950"])}
    assert {i for i in ids if i.startswith(("softmax/", "fp8/", "tuned/", "wide/"))} == {
        "softmax/w8", "fp8/w2", "tuned/w2", "tuned/w8", "wide/w2", "wide/w8", "wide/w64"}


def test_a_value_the_matrix_lacks_is_a_one_line_error(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "bad.py").write_text(
        "import regsurvey as rs\n\n"
        "matrix = rs.Matrix(targets=['gfx950'], width=[2, 8])\n\n\n"
        "@matrix.kind(axes=['width'], width=[2, 16])\n"
        "def k(width):\n    pass\n")
    with pytest.raises(KeysFileError) as raised:
        load_kinds(tmp_path, keys)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("keys file keys/bad.py:6 raised ValueError:")
    assert "kind 'k' takes width=16, not among the matrix's width values [2, 8]" in message


def test_a_skipped_key_is_no_build_and_no_failure(worker: Worker, ops: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    k = key(worker, "wide/w64", "sm90")
    base_rows = worker.survey_key(k) + worker.survey_key(key(worker, "wide/w8", "sm90"))
    monkeypatch.setattr(ops, "SKIP_WIDE", True)
    (skipped,) = worker.survey_key(k)
    assert (skipped.status, skipped.skip_reason, skipped.kernel) == ("skipped", "no 64-row variant of this layer", None)
    assert not skipped.ok and not skipped.failed and skipped.skipped
    head_rows = [skipped, base_rows[1]]
    base, head = survey(base_rows, "base"), survey(head_rows, "head")
    assert Survey.from_json(head.to_json()).rows == head.rows

    comparison = compare(base, head)
    (removed,) = comparison.with_mark(Mark.REMOVED)
    assert removed.row_id == "wide/w64" and removed.note == "skipped on the head: no 64-row variant of this layer"
    assert comparison.skipped_keys == (0, 1) and comparison.failing_builds == (0, 0)
    assert judge(comparison, Baseline()).passed
    assert "skipped on the head: no 64-row variant" in TableFormat(width=300).format(comparison)
    assert "keys skipped 0 → 1" in MarkdownFormat().format(comparison)
    assert comparison_dict(comparison)["skipped"] == [{"target": "sm90", "key": "wide/w64", "kind": "wide",
                                                "before": None, "after": "no 64-row variant of this layer"}]
    # Skipped on both sides: not a build at all.
    both = compare(head, head)
    assert [r.row_id for r in both.rows] == ["wide/w8"] and both.skipped_keys == (1, 1)
    assert judge(both, Baseline()).passed and judge(compare(head, base), Baseline()).passed
    (step,) = stack([base, head], ["skip the 64-row variant"]).steps
    assert step.keys_built == (1, 1)
    assert "skipped: no 64-row variant of this layer" in table_text(head)
    assert summary_line(head).startswith("2 keys on sm90: 1 build (1 ok, 0 failed), 1 key skipped;")
