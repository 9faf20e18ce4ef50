"""``regsurvey coverage`` on the demo project (``keys/``, ``decode_layer/``): a program whose router top-k
launches are partly the keys' (a capture made offline by ``regsurvey capture --records``, in the test),
the launches the keys miss with the argument that differs, the keys no launch used, and bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from regsurvey.coverage.compare import differences
from regsurvey.coverage.launches import CaptureFileError, read_capture

from ..commands.runner import UNKNOWN_TARGET, assert_one_line_error, invoke

DEMO = Path(__file__).resolve().parents[2]
PROGRAM = '''"""A decode step's router top-k, partly as the demo's keys have it."""
import torch
import triton

from decode_layer import router

dev = triton.runtime.driver.active.get_active_torch_device()


def topk(width, logits_dtype=torch.float32, offset=0):
    storage = torch.empty(width * 256 + offset, dtype=logits_dtype, device=dev)
    logits = storage[offset:].view(width, 256)
    router.grouped_topk(logits, torch.empty(256, dtype=torch.float32, device=dev),
                        torch.empty(width, 8, dtype=torch.int32, device=dev),
                        torch.empty(width, 8, dtype=torch.float32, device=dev))


for _ in range(3):
    topk(2)                      # as the keys have it (topk/w2/nostop)
topk(4, torch.bfloat16)          # logits in bf16: no key has it
topk(8, offset=1)                # logits one element into their storage: not 16-byte aligned
'''


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program's launches, captured offline for gfx950 into a records file."""
    work = tmp_path_factory.mktemp("coverage")
    (work / "prog.py").write_text(PROGRAM)
    records = work / "run.jsonl"
    result = invoke("capture", "--offline", "gfx950", "--records", records, "-o", work / "keys.py", "--",
                    sys.executable, work / "prog.py")
    assert result.exit_code == 0, result.stderr
    return records


def test_the_launches_the_keys_miss_and_the_keys_no_launch_used(capture: Path) -> None:
    result = invoke("coverage", capture, "--kind", "topk", "-C", DEMO, "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["target"], report["records"], report["keys"], report["covered"], report["missed_launches"]) == (
        "gfx950", 5, 6, 3, 2)
    [kernel] = report["kernels"]
    assert kernel["kernel"] == "decode_layer.router:grouped_topk_kernel"
    missed = {m["launch"]["source"]: (m["nearest"]["source"], m["differences"]) for m in kernel["missed"]}
    assert missed == {
        "launch 4": ("topk/w4/nostop", [{"what": "dtype", "argument": "logits_ptr", "key": "*fp32",
                                         "launch": "*bf16"}]),
        "launch 5": ("topk/w8/nostop", [{"what": "divisibility", "argument": "logits_ptr", "key": True,
                                         "launch": False}]),
    }
    # Every key but w2/nostop went unused; w4/nostop's nearest real launch differs by its rows constexpr.
    unused = {u["launch"]["source"]: u for u in kernel["unused"]}
    assert sorted(unused) == ["topk/w2/stop", "topk/w4/nostop", "topk/w4/stop", "topk/w8/nostop", "topk/w8/stop"]
    assert unused["topk/w8/nostop"]["differences"] == [
        {"what": "constexpr", "argument": "ROWS", "key": 8, "launch": 2}]
    stop = {(d["what"], d["argument"]): (d["key"], d["launch"]) for d in unused["topk/w2/stop"]["differences"]}
    assert stop == {("argument", "finished_ptr"): ("*i32", "constexpr"), ("constexpr", "STOP"): (True, False)}


def test_the_table_says_it_in_a_line_per_launch(capture: Path) -> None:
    result = invoke("coverage", capture, "--kind", "topk", "--key", "*/nostop", "-C", DEMO, "--strict")
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (f"{capture} on gfx950: 5 real launches, 3 covered by 3 keys, 2 missed (each a JIT "
                        "compile in production)")
    assert lines[2:] == [
        "  missed: launch 4, nearest topk/w4/nostop: logits_ptr: dtype *fp32 in the key, *bf16 in the launch",
        "  missed: launch 5, nearest topk/w8/nostop: logits_ptr: divisible by 16 in the key, not in the launch",
        "  unused: topk/w4/nostop, nearest launch 1: ROWS: constexpr 4 in the key, 2 in the launch",
        "  unused: topk/w8/nostop, nearest launch 1: ROWS: constexpr 8 in the key, 2 in the launch",
    ]


def test_a_survey_row_carries_the_hash_coverage_computes(capture: Path) -> None:
    # Coverage's hashes are Triton's cache hashes, the survey rows' triton_hash (the equality the survey
    # tests hold against JITFunction.run): the capture's launch 1 is topk/w2/nostop's build.
    from regsurvey.coverage.launches import key_launches, real_launches
    from regsurvey.model.targets import get_target

    target = get_target("gfx950")
    ours = key_launches(DEMO, target, keys=("topk/w2/nostop",))
    _, records = read_capture(capture)
    theirs = real_launches(capture, records[:1], target)
    assert list(ours.by_hash) == list(theirs.by_hash)
    [spec] = theirs.by_hash.values()
    assert differences(spec, spec) == ()


def test_bad_input_is_one_line(capture: Path, tmp_path: Path) -> None:
    assert_one_line_error(invoke("coverage", capture, "-t", "gfx999", "-C", DEMO), UNKNOWN_TARGET)
    survey = tmp_path / "survey.json"
    survey.write_text(json.dumps({"schema_version": 5, "rows": []}))
    assert_one_line_error(invoke("coverage", survey, "-C", DEMO),
                          f"{survey} is not a capture's records (line 1 is no launch record)")
    other = tmp_path / "other.jsonl"
    other.write_text('{"device": "sm90", "offline": true}\n'
                     '{"kernel": "someone_else.kernels:gemm", "args": [], "kwargs": {}, "specialization": null}\n')
    assert_one_line_error(invoke("coverage", other, "-C", DEMO),
                          f"no kernel of {other} can be imported here (launch 1 (1 launch): cannot import kernel "
                          "someone_else.kernels:gemm: No module named 'someone_else'): a capture of another project?")
    with pytest.raises(CaptureFileError, match="no header"):
        read_capture(_written(tmp_path / "headless.jsonl", ""))


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path

