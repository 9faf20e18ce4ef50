"""Recording a running program's launches (regsurvey.capture.recorder), without running one: the capture
file read back (a torn last line dropped), launches grouped per kernel, the keys file that replays them
(imported as a keys file), and the environment the captured program runs in."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import regsurvey
from regsurvey.capture.recorder import (
    ENV_FILE,
    ENV_OFFLINE,
    SITECUSTOMIZE,
    capture_environment,
    group_launches,
    keys_file_text,
    read_records,
)
from regsurvey.keys.keyfiles import expand_keys, load_kinds


def tensor(shape: list[int], dtype: str = "bfloat16") -> dict[str, Any]:
    """A tensor argument as describe_launch records it."""
    stride = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        stride[i] = stride[i + 1] * shape[i + 1]
    numel = 1
    for n in shape:
        numel *= n
    return {"tensor": {"shape": shape, "stride": stride, "dtype": dtype, "offset": 0, "storage_numel": numel,
                       "ptr_mod16": 0}}


def record(kernel: str, rows: int, *, scale: float = 0.5, spec: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return {"kernel": kernel, "args": [tensor([rows, 4096]), tensor([rows, 4096]), {"value": 4096},
                                       {"value": 4096}, {"value": scale}],
            "kwargs": {k: {"value": v} for k, v in kwargs.items()}, "specialization": spec}


SCALE = "toykernels.ops:scale_rows"
MATMUL = "toykernels.ops:matmul"


def test_a_capture_file_reads_back_without_its_torn_last_line(tmp_path: Path) -> None:
    launches = [record(SCALE, 8, BLOCK=4096, STOP=True), record(MATMUL, 4)]
    lines = [json.dumps({"device": "sm90", "offline": True})] + [json.dumps(r) for r in launches]
    path = tmp_path / "launches.jsonl"
    path.write_text("\n".join(lines) + "\n" + json.dumps(record(SCALE, 2))[:37])  # the program died mid-write
    header, records = read_records(path)
    assert header == {"device": "sm90", "offline": True}
    assert records == launches
    path.write_text("")
    assert read_records(path) == ({}, [])


def test_launches_are_grouped_per_kernel_and_made_distinct() -> None:
    records = [
        record(SCALE, 8, BLOCK=4096, STOP=True),
        record(SCALE, 8, BLOCK=4096, STOP=True, spec="[spec of scale 8]"),  # the same launch again
        record(MATMUL, 4),
        record(SCALE, 8, BLOCK=4096, STOP=False),  # another constexpr
        record(SCALE, 8, scale=2.0, BLOCK=4096, STOP=True),  # another scalar
        record("pkg.layers:Attention.kernel", 1),  # a kernel defined in a class: its own short name
        record(SCALE, 8, BLOCK=4096, STOP=True, spec="[later]"),
    ]
    groups = group_launches(records)
    assert list(groups) == ["scale_rows", "matmul", "kernel"]  # first-seen order
    scale = groups["scale_rows"]
    assert [(r["kwargs"]["STOP"]["value"], r["args"][4]["value"]) for r in scale] == [(True, 0.5), (False, 0.5),
                                                                                      (True, 2.0)]
    # The kept launch takes the first specialization recorded for it (a warmup's, a later launch's).
    assert [r["specialization"] for r in scale] == ["[spec of scale 8]", None, None]
    assert [len(groups["matmul"]), len(groups["kernel"])] == [1, 1]


def test_kernels_of_one_name_in_two_modules_are_both_kept() -> None:
    groups = group_launches([record("fused.attention:kernel", 8), record("fused.norm:kernel", 8)])
    assert sorted(r["kernel"] for recs in groups.values() for r in recs) == ["fused.attention:kernel",
                                                                            "fused.norm:kernel"]


def write_keys_file(tmp_path: Path, text: str) -> list[Any]:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "captured.py").write_text(text)
    return load_kinds(tmp_path, tmp_path / "keys")


def test_the_keys_file_replays_each_distinct_launch(tmp_path: Path) -> None:
    groups = group_launches([record(SCALE, 8, BLOCK=4096, STOP=True, spec="[s]"), record(MATMUL, 4),
                             record(SCALE, 2, BLOCK=4096, STOP=False)])
    text = keys_file_text(groups, ["sm90", "gfx950"], ["python", "prog.py", "--steps", "3"], "gfx942")
    assert text.startswith('"""Launches captured by `regsurvey capture -- python prog.py --steps 3`\non ')
    assert "(gfx942): 3 distinct launches of 2 kernels." in text
    kinds = write_keys_file(tmp_path, text)
    assert [k.name for k in kinds] == ["scale_rows", "matmul"]
    keys = expand_keys(kinds, None)
    assert len(keys) == 6 and {k.target for k in keys} == {"sm90", "gfx950"}
    assert [k.id for k in keys if k.target == "sm90"] == ["scale_rows/v0", "scale_rows/v1", "matmul/v0"]
    assert [k.axes_dict for k in keys if k.target == "sm90"] == [{"v": 0}, {"v": 1}, {"v": 0}]
    module = sys.modules["regsurvey_keys_captured"]
    # What each key replays: the record without its specialization (the binder makes it anew per target).
    assert module.LAUNCHES == {
        "scale_rows": [{k: r[k] for k in ("kernel", "args", "kwargs")} for r in groups["scale_rows"]],
        "matmul": [{k: r[k] for k in ("kernel", "args", "kwargs")} for r in groups["matmul"]]}
    assert module.TARGETS == ["sm90", "gfx950"]


def test_a_keys_file_with_an_infinite_argument_imports(tmp_path: Path) -> None:
    groups = group_launches([record(SCALE, 8, scale=float("-inf"), BLOCK=4096, STOP=True)])
    kinds = write_keys_file(tmp_path, keys_file_text(groups, ["sm90"], ["python", "prog.py"], None))
    assert [k.name for k in kinds] == ["scale_rows"]


def test_the_captured_program_runs_with_the_recorder_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/opt/project", "", "/opt/lib"]))
    monkeypatch.setenv(ENV_OFFLINE, "gfx942")  # left over from an outer capture
    site = tmp_path / "site"
    env = capture_environment(tmp_path / "launches.jsonl", site, None)
    assert (site / "sitecustomize.py").read_text() == SITECUSTOMIZE
    package_parent = str(Path(regsurvey.__file__).resolve().parents[1])
    assert env["PYTHONPATH"].split(os.pathsep) == [str(site), package_parent, "/opt/project", "/opt/lib"]
    assert env[ENV_FILE] == str(tmp_path / "launches.jsonl")
    assert ENV_OFFLINE not in env  # a capture on the program's own GPU
    assert os.environ[ENV_OFFLINE] == "gfx942"  # the caller's environment is not changed
    offline = capture_environment(tmp_path / "launches.jsonl", site, "sm90")
    assert offline[ENV_OFFLINE] == "sm90"
    monkeypatch.delenv("PYTHONPATH")
    assert capture_environment(tmp_path / "l.jsonl", site, None)["PYTHONPATH"] == os.pathsep.join(
        [str(site), package_parent])
