"""`regsurvey capture`: a running program's launches become a keys file that replays them offline
to the very specialization the program's launches had."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.compile import toolchain
from regsurvey.keys.keyfiles import expand_keys, load_kinds
from regsurvey.keys.session import CaptureSession
from regsurvey.model.targets import get_target

from ..conftest import TOY

PROGRAM = '''
import torch
from toykernels import ops

x = torch.randn(8, 4096, dtype=torch.bfloat16)
for _ in range(3):  # the same launch three times: one key
    ops.scale(x, 0.5, stop=True)
ops.scale(x[:, 1:], 2.0)  # a view one element in: not 16-byte aligned
ops.gemm(torch.randn(4, 512, dtype=torch.bfloat16), torch.randn(512, 256, dtype=torch.bfloat16))
ops.axpy(torch.randn(4000), torch.randn(4000), 2.0)  # autotuned: every config it tries is a launch
'''


@pytest.fixture
def captured(tmp_path: Path) -> tuple[Path, list[dict]]:
    project = tmp_path / "project"
    shutil.copytree(TOY / "toykernels", project / "toykernels", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "prog.py").write_text(PROGRAM)
    out = subprocess.run([sys.executable, "-m", "regsurvey", "capture", "--offline", "sm90",
                          "--records", str(tmp_path / "records.jsonl"), "-o", "keys/captured.py", "--",
                          sys.executable, "prog.py"], cwd=project, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "captured 9 launches: 6 distinct, 3 kernels → keys/captured.py" in out.stderr
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    return project, records[1:]


def test_replay_has_the_captured_specialization(captured: tuple[Path, list[dict]]) -> None:
    project, records = captured
    expected = {(r["kernel"], r["specialization"]) for r in records}
    assert all(spec for _, spec in expected)
    sys.path.insert(0, str(project))
    try:
        kinds = load_kinds(project, project / "keys")
        keys = expand_keys(kinds, None)
        assert [k.id for k in keys] == ["scale_rows/v0", "scale_rows/v1", "matmul/v0",
                                        "axpy_kernel/v0", "axpy_kernel/v1", "axpy_kernel/v2"]
        replayed = set()
        by_name = {k.name: k for k in kinds}
        for key in keys:
            session = CaptureSession(get_target(key.target))
            with toolchain.capturing(session):
                by_name[key.kind].body(**key.axes_dict)
            (launch,) = session.launches
            replayed.add((toolchain.jit_function_name(launch.jit_function), launch.specialization_data))
    finally:
        sys.path.remove(str(project))
    assert replayed == expected


def test_replay_surveys_on_other_targets(captured: tuple[Path, list[dict]]) -> None:
    project, _ = captured
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--target",
                          "gfx950", "--key", "scale_rows/*"], cwd=project, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    assert [r["status"] for r in rows] == ["ok", "ok"]


def test_capture_of_a_failing_program_keeps_what_it_launched(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(TOY / "toykernels", project / "toykernels", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "prog.py").write_text(
        "import torch\nfrom toykernels import ops\nops.scale(torch.randn(2, 64), 1.0)\nraise SystemExit(3)\n")
    out = subprocess.run([sys.executable, "-m", "regsurvey", "capture", "--offline", "gfx950", "--", sys.executable,
                          "prog.py"], cwd=project, capture_output=True, text=True, timeout=600)
    assert out.returncode == 3
    assert "captured 1 launch: 1 distinct, 1 kernel" in out.stderr
    assert "TARGETS = ['gfx950']" in (project / "keys" / "captured.py").read_text()


def test_offline_warmup_returns_the_compiled_kernel_and_is_captured(tmp_path: Path) -> None:
    # A launcher that compiles ahead to size its grid, then launches the compiled kernel itself.
    project = tmp_path / "project"
    shutil.copytree(TOY / "toykernels", project / "toykernels", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "prog.py").write_text(
        "import torch\nfrom toykernels.ops import scale_rows\n"
        "x = torch.randn(8, 64)\nout = torch.empty_like(x)\n"
        "kernel = scale_rows.warmup(x, out, 64, 64, 0.5, BLOCK=64, STOP=False, grid=(1,))\n"
        "kernel._init_handles()\n"
        "print('warmed', kernel.n_regs, kernel.n_spills, kernel.metadata.num_warps, kernel.metadata.target.arch)\n"
        "kernel[(8, 1, 1)](x, out, 64, 64, 0.5)\n")
    out = subprocess.run([sys.executable, "-m", "regsurvey", "capture", "--offline", "sm90", "--records",
                          str(tmp_path / "records.jsonl"), "--", sys.executable, "prog.py"],
                         cwd=project, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    words = next(line for line in out.stdout.splitlines() if line.startswith("warmed")).split()
    assert int(words[1]) > 0 and words[2:] == ["0", "4", "90"]
    assert "captured 1 launch: 1 distinct, 1 kernel" in out.stderr
    (record,) = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()][1:]
    assert record["kernel"] == "toykernels.ops:scale_rows" and record["specialization"]
    # The replay surveys the same build the warmup compiled: the registers the program read.
    survey = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--target", "sm90"],
                            cwd=project, capture_output=True, text=True, timeout=600)
    assert survey.returncode == 0, survey.stderr
    (row,) = json.loads(survey.stdout)["rows"]
    assert row["resources"]["regs"] == int(words[1])


def test_offline_capture_answers_nvml_and_amdsmi_as_the_targets_gpu(tmp_path: Path) -> None:
    # A program that finds its GPU through the vendors' management libraries (as vLLM picks its platform)
    # sees the offline target's GPU; before, NVML was missing and amdsmi not importable.
    (tmp_path / "prog.py").write_text(
        "import ctypes\n"
        "try:\n"
        "    import amdsmi\n"
        "    amdsmi.amdsmi_init()\n"
        "    (handle,) = amdsmi.amdsmi_get_processor_handles()\n"
        "    print('amd', amdsmi.amdsmi_get_gpu_asic_info(handle)['target_graphics_version'])\n"
        "except ImportError:\n"
        "    nvml = ctypes.CDLL('libnvidia-ml.so.1')\n"
        "    assert nvml.nvmlInit_v2() == 0\n"
        "    count = ctypes.c_uint()\n"
        "    assert nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0\n"
        "    handle = ctypes.c_void_p()\n"
        "    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0\n"
        "    name = ctypes.create_string_buffer(96)\n"
        "    assert nvml.nvmlDeviceGetName(handle, name, 96) == 0\n"
        "    print('nvidia', count.value, name.value.decode())\n"
        "    import subprocess\n"
        "    print(subprocess.run(['nvidia-smi', '-L'], capture_output=True, text=True).stdout.split(' (UUID')[0])\n")
    said = {}
    for target in ("sm90", "gfx942"):
        out = subprocess.run([sys.executable, "-m", "regsurvey", "capture", "--offline", target, "--records",
                              str(tmp_path / f"{target}.jsonl"), "--", sys.executable, "prog.py"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        said[target] = out.stdout.splitlines()
    assert said["sm90"] == ["nvidia 1 NVIDIA H200", "GPU 0: NVIDIA H200"]
    assert said["gfx942"] == ["amd gfx942"]
