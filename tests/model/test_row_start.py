"""The worker's partial row (model.row_start.RowStart) and the rows it makes."""

from __future__ import annotations

import inspect
from dataclasses import fields

from regsurvey.model.findings import Finding
from regsurvey.model.results import ObjectRef, Row, Status
from regsurvey.model.row_start import RowStart


def test_a_row_start_and_what_its_outcomes_add_are_a_rows_fields_each_once() -> None:
    """The worker's partial row: a field added to Row is placed in RowStart or in an outcome, or this fails."""
    started = {f.name for f in fields(RowStart)}
    added = set(inspect.signature(RowStart._row).parameters) - {"self"}
    assert not started & added and started | added | {"lint"} == {f.name for f in fields(Row)}


def test_a_row_start_makes_each_outcome() -> None:
    start = RowStart(key="norm/w2", kind="norm", axes={"w": 2}, target="sm90", messages=("said",), kernel="norm",
                     launch=1, config=3, num_warps=4)
    finding = Finding(kernel="norm", target="sm90", arg_index=0, arg_offset=0, arg_name="x", severity="note",
                      load="ld.param", line=None, reason="never read")
    ref = ObjectRef("objects/ab/abc.cubin", "abc")
    built = start.built({"regs": 40}, object=ref, compile_s=0.5, triton_hash="f00", findings=(finding,))
    assert (built.status, built.resources, built.object, built.launch, built.config, built.num_warps) == (
        Status.OK, {"regs": 40}, ref, 1, 3, 4)
    assert built.messages == ["said"] and built.lint is not None and built.lint[0].key == "norm/w2#1@cfg3"
    assert start.built({}, object=ref, compile_s=0, triton_hash="f00", findings=None).lint is None
    failed = start.failed("boom", status=Status.FLAKY, triton_hash="f00", transient=True)
    assert (failed.status, failed.error, failed.triton_hash, failed.transient, failed.resources) == (
        Status.FLAKY, "boom", "f00", True, {})
    assert start.skipped("no such dtype").skip_reason == "no such dtype"
