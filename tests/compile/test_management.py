"""The vendors' management interfaces under a survey (``regsurvey/compile/management.py``): NVML, AMD SMI and
the smi commands answer as on the target's GPU, so that a library that finds its GPU through them (vLLM)
builds for that GPU, and a library that concluded there is no GPU is reported.

The second reading of the NVML and ``nvidia-smi`` answers is the real H200's (``tests/gpu/nvml-h200.json``,
regenerated on the GPU machine by ``python3 tests/gpu/nvml_answers.py > tests/gpu/nvml-h200.json``; its
``--compare`` run there found no difference from the stand-in's).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from regsurvey.compile import management, nvml_standin, toolchain
from regsurvey.model.targets import TARGETS, get_target

from ..gpu import nvml_answers

H200_ANSWERS = json.loads((Path(__file__).parent.parent / "gpu" / "nvml-h200.json").read_text())


def test_nvml_answers_as_the_h200_does() -> None:
    with management.standing_in(get_target("sm90")):
        stand_in = nvml_answers.answers()
    assert nvml_answers.differences(H200_ANSWERS, stand_in) == []
    # What the comparison leaves out is one machine's, and the stand-in says so plainly.
    assert stand_in["nvmlDeviceGetUUID"] == [0, "GPU-00000000-0000-0000-0000-000000000000"]
    assert stand_in["nvmlDeviceGetSerial"] == [nvml_standin.NVML_ERROR_NOT_SUPPORTED, None]


def test_pynvml_and_a_vendored_copy_loaded_before_the_survey_answer_alike(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import pynvml

    # A library's own copy of pynvml (vLLM: vllm.third_party.pynvml), imported before the stand-in existed:
    # it bound ctypes.CDLL then.
    shutil.copy(pynvml.__file__, tmp_path / "vendored_pynvml.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    vendored = importlib.import_module("vendored_pynvml")
    management.unanswered()  # forget what earlier tests asked
    for target in ("sm90", "sm100"):
        with toolchain.device_as(get_target(target)):
            for module in (pynvml, vendored):
                module.nvmlInit()
                handle = module.nvmlDeviceGetHandleByIndex(0)
                assert module.nvmlDeviceGetCount() == 1
                assert module.nvmlDeviceGetName(handle) == TARGETS[target].device.name
                assert module.nvmlDeviceGetCudaComputeCapability(handle) == (TARGETS[target].device.major, 0)
                memory = module.nvmlDeviceGetMemoryInfo(handle)
                assert memory.free == TARGETS[target].device.total_memory  # torch's total_memory: what is free
                module.nvmlShutdown()
            import torch

            assert torch.cuda._raw_device_count_nvml() == 1  # torch's own NVML call
    assert management.unanswered() == []
    with toolchain.device_as(get_target("gfx942")):  # no NVIDIA driver on an AMD machine
        with pytest.raises(vendored.NVMLError_LibraryNotFound):
            vendored.nvmlInit()


@pytest.mark.parametrize("target", ["gfx942", "gfx950", "gfx1100", "gfx1151", "gfx1201", "gfx1250"])
def test_amdsmi_answers_what_torch_answers_on_that_gpu(target: str) -> None:
    import torch

    management.unanswered()  # forget what earlier tests asked
    with toolchain.device_as(get_target(target)):
        import amdsmi

        amdsmi.amdsmi_init()
        (handle,) = amdsmi.amdsmi_get_processor_handles()
        asic = amdsmi.amdsmi_get_gpu_asic_info(handle)
        assert asic["market_name"] == torch.cuda.get_device_name()
        assert asic["target_graphics_version"] == target
        assert asic["device_id"] == {"gfx942": "0x74a1", "gfx950": "0x75a3", "gfx1100": "0x744c", "gfx1151": "0x1586",
                                     "gfx1201": "0x7550", "gfx1250": "0x75c1"}[target]  # amdgpu's PCI IDs
        # AMD SMI counts CUs; HIP in WGP mode (RDNA) counts workgroup processors of two CUs as multiprocessors.
        wgp_mode = target in ("gfx1100", "gfx1151", "gfx1201")
        assert asic["num_compute_units"] == torch.cuda.get_device_properties().multi_processor_count * (
            2 if wgp_mode else 1)
        assert amdsmi.amdsmi_get_gpu_vram_info(handle)["vram_type"] == {
            "gfx1100": "GDDR6", "gfx1151": "LPDDR5", "gfx1201": "GDDR6"}.get(target, "HBM")
        assert (amdsmi.amdsmi_get_gpu_memory_total(handle, amdsmi.AmdSmiMemoryType.VRAM)
                == torch.cuda.get_device_properties().total_memory)
        with pytest.raises(amdsmi.AmdSmiLibraryException):
            amdsmi.amdsmi_get_gpu_metrics_info(handle)  # not answered: recorded
        assert management.unanswered() == ["amdsmi amdsmi_get_gpu_metrics_info"]
        amdsmi.amdsmi_shut_down()
    with toolchain.device_as(get_target("sm90")), pytest.raises(ImportError):
        import amdsmi  # noqa: F401  (not on an NVIDIA machine)


def test_the_smi_commands_answer_the_targets_gpu() -> None:
    import triton.testing

    with toolchain.device_as(get_target("sm90")):
        stand_in = nvml_answers.nvidia_smi_answers()
        # Triton's own nvidia-smi query (what get_max_tensorcore_tflops and friends read)
        assert triton.testing.nvsmi(["clocks.max.sm", "clocks.max.memory"]) == [1980, 3201]
        amd = subprocess.run(["amd-smi", "list"], capture_output=True, text=True)
    for query, answer in stand_in.items():
        if query not in nvml_answers.MACHINE_SPECIFIC:
            assert answer == H200_ANSWERS[query], query
    assert amd.returncode != 0
    with toolchain.device_as(get_target("gfx950")):
        static = json.loads(subprocess.run(["amd-smi", "static", "--asic", "--json"], capture_output=True,
                                           text=True, check=True).stdout)
        rocm = json.loads(subprocess.run(["rocm-smi", "--showproductname", "--json"], capture_output=True,
                                         text=True, check=True).stdout)
        nvidia = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        unknown = subprocess.run(["rocm-smi", "--showpower"], capture_output=True, text=True)
    assert static[0]["asic"]["market_name"] == "AMD Instinct MI355X"
    assert static[0]["asic"]["target_graphics_version"] == "gfx950"
    assert rocm["card0"]["GFX Version"] == "gfx950"
    assert nvidia.returncode == 9 and "couldn't communicate with the NVIDIA driver" in nvidia.stdout
    assert unknown.returncode == 2 and "does not answer --showpower" in unknown.stderr
    assert not any(directory in os.environ["PATH"] for directory in management._command_dirs.values())
    # An RDNA GPU as amd-smi shows one (an RX 7900 XTX: 96 CUs, 24 GB of GDDR6; HIP's 48 are its WGPs).
    with toolchain.device_as(get_target("gfx1100")):
        static = json.loads(subprocess.run(["amd-smi", "static", "--json"], capture_output=True, text=True,
                                           check=True).stdout)
        ids = subprocess.run(["rocm-smi", "--showid"], capture_output=True, text=True, check=True).stdout
    assert static[0]["asic"] | static[0]["vram"] == {
        "market_name": "AMD Radeon RX 7900 XTX", "vendor_id": "0x1002",
        "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]", "device_id": "0x744c",
        "target_graphics_version": "gfx1100", "num_compute_units": 96,
        "type": "GDDR6", "size": {"value": 24560, "unit": "MB"}}
    assert "Device ID: \t0x744c" in ids


def test_the_stand_ins_of_a_process_killed_go_with_the_next_one_made(tmp_path: Path) -> None:
    """A worker killed at a time-out (or a Ray actor killed) never runs its exit handlers: the next
    process to make the smi stand-ins in that directory removes the dead one's, and only those."""
    made = textwrap.dedent(f"""
        import os, sys
        from regsurvey.compile import management
        from regsurvey.model.targets import get_target
        management.keep_commands_in({str(tmp_path)!r})
        with management.standing_in(get_target("sm90")):
            print(os.path.basename(management._command_dirs["sm90"]), flush=True)
        os._exit(0)  # as if killed: no exit handler runs
    """)
    first = subprocess.run([sys.executable, "-c", made], capture_output=True, text=True, check=True).stdout.strip()
    assert first.startswith("regsurvey-smi-sm90-") and (tmp_path / first / "nvidia-smi").is_file()
    alive = tmp_path / f"regsurvey-smi-gfx942-{os.getpid()}-kept"  # a live process's: left alone
    alive.mkdir()
    second = subprocess.run([sys.executable, "-c", made], capture_output=True, text=True, check=True).stdout.strip()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([second, alive.name])


def test_an_extension_that_needs_a_gpu_machines_library_imports_as_a_stand_in(tmp_path: Path) -> None:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the extension")
    import sysconfig

    # libcuda.so.1 exists while the extension is linked, as on a build machine with the driver's stubs.
    (tmp_path / "stub.c").write_text("int cuInit(unsigned int flags) { return 0; }\n")
    subprocess.run([compiler, "-shared", "-fPIC", "-o", tmp_path / "libcuda.so.1", tmp_path / "stub.c",
                    "-Wl,-soname,libcuda.so.1"], check=True)
    (tmp_path / "gpuext.c").write_text(textwrap.dedent("""\
        #include <Python.h>
        extern int cuInit(unsigned int);
        static PyObject *init(PyObject *self, PyObject *args) { return PyLong_FromLong(cuInit(0)); }
        static PyMethodDef methods[] = {{"init", init, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
        static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "gpuext", NULL, -1, methods};
        PyMODINIT_FUNC PyInit_gpuext(void) { return PyModule_Create(&module); }
    """))
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    subprocess.run([compiler, "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o",
                    tmp_path / f"gpuext{suffix}", tmp_path / "gpuext.c", f"-L{tmp_path}", "-l:libcuda.so.1"],
                   check=True)
    (tmp_path / "libcuda.so.1").unlink()  # this machine has no driver
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ImportError, match="libcuda.so.1"):
            importlib.import_module("gpuext")
        with toolchain.device_as(get_target("sm90")):
            gpuext = importlib.import_module("gpuext")
        assert isinstance(gpuext, management.UnloadedExtension)
        with pytest.raises(AttributeError, match="gpuext.init: the compiled extension gpuext is not loaded while "
                                                 "surveying .it needs libcuda.so"):
            gpuext.init()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("gpuext", None)


# A library that finds its GPU as vLLM does: NVML, then AMD SMI; torch is never asked. It picks its tile
# from what it found.
PLATFORM_LIBRARY = '''
def platform():
    try:
        import pynvml
        pynvml.nvmlInit()
        try:
            if pynvml.nvmlDeviceGetCount() > 0:
                return "cuda"
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    try:
        import amdsmi
        amdsmi.amdsmi_init()
        if amdsmi.amdsmi_get_processor_handles():
            return "rocm"
    except Exception:
        pass
    return "none"

BLOCK = {"cuda": 128, "rocm": 256, "none": 64}

def power_check():
    """A check the stand-in does not answer (NVML power readings are one machine's)."""
    import pynvml
    try:
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetPowerUsage(pynvml.nvmlDeviceGetHandleByIndex(0)) > 0
    except pynvml.NVMLError:
        return False
'''

KEYS = '''
import torch
import triton
import triton.language as tl

import regsurvey as rs
from platform_library import BLOCK, platform, power_check


@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)


matrix = rs.Matrix(targets=["sm90", "gfx942"], width=[1])


@matrix.kind(axes=["width"])
def tiled(width):
    x = rs.tensor((4096,), "fp32")
    scale[(4,)](x, 4096, BLOCK=BLOCK[platform()])


@matrix.kind(axes=["width"])
def powered(width):
    x = rs.tensor((4096,), "fp32")
    scale[(4,)](x, 4096, BLOCK=256 if power_check() else 32)
'''

VLLM_PLATFORMS = '''
class UnspecifiedPlatform:
    def is_cuda(self):
        return False

    def is_rocm(self):
        return False

_current_platform = UnspecifiedPlatform()
'''


def test_a_library_that_finds_its_gpu_through_nvml_or_amdsmi_builds_for_the_target(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "platformed.py").write_text(KEYS)
    (tmp_path / "platform_library.py").write_text(PLATFORM_LIBRARY)
    # vLLM's platform, as the library left it after concluding there is no GPU.
    (tmp_path / "vllm" / "platforms").mkdir(parents=True)
    (tmp_path / "vllm" / "__init__.py").write_text("")
    (tmp_path / "vllm" / "platforms" / "__init__.py").write_text(VLLM_PLATFORMS)
    (tmp_path / "keys" / "platformed.py").write_text(KEYS + "\nimport vllm.platforms  # noqa\n")
    done = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-C", tmp_path, "-q", "--format", "json",
                           "--store", tmp_path / "store", "-j", "2"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton"), "REGSURVEY_SERVER": "off"})
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    tiled = {row["target"]: row for row in rows if row["kind"] == "tiled"}
    assert {target: row["build"]["BLOCK"] for target, row in tiled.items()} == {"sm90": 128, "gfx942": 256}
    # A key whose library found nothing: a warning per kind and target on stderr (once, whichever worker
    # ran it), and the sentence on the key's rows.
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: kind")]
    for target in ("sm90", "gfx942"):
        sign = (f"vLLM chose UnspecifiedPlatform (vllm.platforms.current_platform), not the "
                f"{'CUDA' if target == 'sm90' else 'ROCm'} platform of {TARGETS[target].device.name}: it found no GPU")
        assert f"warning: kind tiled on {target}: {sign}" in warnings
        assert f"regsurvey: {sign}" in tiled[target]["messages"]
    powered = {row["target"]: row for row in rows if row["kind"] == "powered"}
    assert ("warning: kind powered on sm90: it asked what the survey's stand-ins do not answer "
            "(NVML nvmlDeviceGetPowerUsage); a library that decides its platform from that may have built for no "
            "GPU") in warnings
    assert len(warnings) == len(set(warnings))
    assert powered["sm90"]["build"]["BLOCK"] == 32
