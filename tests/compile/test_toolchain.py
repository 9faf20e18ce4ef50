"""Launch fidelity: what regsurvey captures and compiles is exactly what JITFunction.run compiles."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import regsurvey as rs
from regsurvey.compile import toolchain
from regsurvey.keys.session import CaptureSession
from regsurvey.model.targets import TARGETS, Target, get_target

from ..conftest import PTXAS_VARIABLES, TOY, write_stand_in_ptxas


def capture(target: str, body: Callable[[], Any]) -> CaptureSession:
    """Run ``body`` under regsurvey's capture for ``target``."""
    session = CaptureSession(get_target(target))
    with toolchain.capturing(session):
        body()
    return session


@contextlib.contextmanager
def launches_compile_for_real(record: list) -> Iterator[None]:
    """Inside a capture: let JITFunction.run compile itself (no hook), as a warmup, recording kernels."""
    from triton import knobs
    from triton.runtime.jit import JITFunction

    original = JITFunction.run

    def run(self, *args, grid, warmup, **kwargs):  # type: ignore[no-untyped-def]
        kernel = original(self, *args, grid=grid, warmup=True, **kwargs)
        record.append((self.fn.__name__, kernel))
        return kernel

    # A device index of its own, so these real compiles never sit in the JIT cache that captures use.
    original_device = toolchain.StubDriver.get_current_device
    old_hook = knobs.runtime.jit_cache_hook
    knobs.runtime.jit_cache_hook = None
    JITFunction.run = run
    toolchain.StubDriver.get_current_device = lambda self: original_device(self) + 100  # type: ignore
    try:
        yield
    finally:
        JITFunction.run = original
        knobs.runtime.jit_cache_hook = old_hook
        toolchain.StubDriver.get_current_device = original_device  # type: ignore


def reference(target: str, body: Callable[[], Any]) -> list:
    """The kernels JITFunction.run compiles for ``body`` through the stub driver."""
    record: list = []
    session = CaptureSession(get_target(target))
    with toolchain.capturing(session), launches_compile_for_real(record):
        body()
    assert not session.launches  # the hook was off: nothing captured
    return record


@pytest.mark.parametrize("target", ["gfx950", "sm90", "gfx942", "sm100"])
def test_captured_compile_has_the_launch_hash(ops: Any, target: str) -> None:
    def body() -> None:
        ops.scale(rs.tensor((8, 4096), "bf16"), 0.5, stop=True)
        ops.gemm(rs.tensor((4, 512), "bf16"), rs.tensor((512, 256), "bf16"))

    session = capture(target, body)
    ours = [(launch.kernel, toolchain.compile_launch(launch, session.target).triton_hash)
            for launch in session.launches]
    theirs = [(name, kernel.hash) for name, kernel in reference(target, body)]
    assert [name for name, _ in ours] == ["scale_rows", "matmul"]
    assert ours == theirs


def test_amd_specialization_has_pointer_range_and_divisibility(ops: Any) -> None:
    session = capture("gfx950", lambda: ops.scale(rs.tensor((8, 4096), "bf16"), 0.5))
    launch = session.launches[0]
    assert launch.signature["x_ptr"] == "*bf16"
    assert launch.attrs[(0,)] == [["tt.divisibility", 16], ["tt.pointer_range", 32]]
    assert launch.attrs[(2,)] == [["tt.divisibility", 16]]  # n_cols = 4096
    # On NVIDIA there is no buffer-op pointer range.
    session = capture("sm90", lambda: ops.scale(rs.tensor((8, 4096), "bf16"), 0.5))
    assert session.launches[0].attrs[(0,)] == [["tt.divisibility", 16]]


def test_misaligned_view_and_large_storage_change_the_specialization(ops: Any) -> None:
    # A view starting one element into its storage is not 16-byte aligned; a > 2 GiB storage loses
    # the 32-bit pointer range on AMD: both change what a real launch compiles.
    view = rs.tensor((8, 4096), "bf16", offset=1)
    session = capture("gfx950", lambda: ops.scale(view, 0.5))
    assert session.launches[0].attrs[(0,)] == [["tt.pointer_range", 32]]
    huge = rs.tensor((2**20, 2**11), "bf16")  # 4 GiB
    session = capture("gfx950", lambda: ops.scale(huge, 0.5))
    assert session.launches[0].attrs[(0,)] == [["tt.divisibility", 16]]


def test_int_specialization_follows_triton(ops: Any) -> None:
    # Width 1 rows: stride/n == 1 become constexprs; multiples of 16 are marked divisible.
    session = capture("sm90", lambda: ops.scale(rs.tensor((4, 1), "fp32"), 2.0))
    launch = session.launches[0]
    assert launch.signature["n_cols"] == "constexpr" and launch.signature["stride"] == "constexpr"
    assert launch.signature["scale"] == "fp32"


def test_launcher_sees_the_target(ops: Any) -> None:
    import torch

    seen = {}

    def body() -> None:
        seen["hip"] = torch.version.hip
        seen["name"] = torch.cuda.get_device_name()
        seen["cus"] = torch.cuda.get_device_properties(0).multi_processor_count
        import triton

        seen["target"] = triton.runtime.driver.active.get_current_target()
        seen["rs"] = rs.target().name

    capture("gfx950", body)
    assert seen["hip"] is not None and seen["name"] == "AMD Instinct MI355X" and seen["cus"] == 256
    assert (seen["target"].backend, seen["target"].arch, seen["rs"]) == ("hip", "gfx950", "gfx950")
    capture("sm90", body)
    assert seen["hip"] is None and seen["cus"] == 132 and seen["target"].arch == 90
    # Outside a capture nothing is patched.
    assert torch.version.hip is None and not torch.cuda.is_available()


def test_fp8_dtype_is_the_targets_native_format(ops: Any) -> None:
    import torch

    got = {}
    for target in ("gfx942", "gfx950", "sm90"):
        capture(target, lambda t=target: got.__setitem__(t, rs.tensor((2, 2), "e4m3").dtype))
    assert got == {"gfx942": torch.float8_e4m3fnuz, "gfx950": torch.float8_e4m3fn, "sm90": torch.float8_e4m3fn}


def test_rs_launch_captures_like_a_launcher(ops: Any) -> None:
    def via_launcher() -> None:
        ops.gemm(rs.tensor((4, 512), "bf16"), rs.tensor((512, 256), "bf16"))

    def via_rs_launch() -> None:
        a, b = rs.tensor((4, 512), "bf16"), rs.tensor((512, 256), "bf16")
        c = rs.tensor((4, 256), "bf16")
        rs.launch(ops.matmul, a, b, c, 4, 256, 512, grid=(1, 4), BLOCK_M=16, BLOCK_N=64, BLOCK_K=64,
                  num_warps=4, num_stages=3)

    one = capture("sm90", via_launcher).launches[0]
    two = capture("sm90", via_rs_launch).launches[0]
    assert (one.signature, one.constexprs, one.attrs, one.options) == (
        two.signature, two.constexprs, two.attrs, two.options)
    assert two.where.endswith(f"{__file__}:{via_rs_launch.__code__.co_firstlineno + 3}".rsplit("/", 1)[-1])


def test_autotune_every_config_is_a_launch_and_heuristics_apply(ops: Any) -> None:
    x, y = rs.tensor((4096,), "fp32"), rs.tensor((4096,), "fp32")
    session = capture("gfx950", lambda: ops.axpy(x, y, 2.0))
    assert [launch.config for launch in session.launches] == [0, 1, 2]
    assert [launch.constexprs[(4,)] for launch in session.launches] == [128, 512, 1024]  # BLOCK
    assert [launch.constexprs[(5,)] for launch in session.launches] == [True, True, True]  # EVEN
    assert [launch.options["num_warps"] for launch in session.launches] == [2, 4, 8]
    # Every config compiles to the kernel a launch with that config compiles.
    # (what Autotuner.run does once it has picked config 1: heuristics, then JITFunction.run)
    config = ops.axpy_kernel.configs[1]
    ref = reference("gfx950", lambda: ops.axpy_kernel.fn.run(
        x, y, 4096, 2.0, grid=(8,), warmup=True, **config.all_kwargs()))
    assert toolchain.compile_launch(session.launches[1], get_target("gfx950")).triton_hash == ref[0][1].hash


def test_pin_config_surveys_one_config(ops: Any) -> None:
    x, y = rs.tensor((4000,), "fp32"), rs.tensor((4000,), "fp32")

    def body() -> None:
        rs.pin_config(ops.axpy_kernel, 2)
        ops.axpy(x, y, 2.0)

    session = capture("sm90", body)
    assert [(launch.config, launch.constexprs[(5,)]) for launch in session.launches] == [(2, False)]


def _launcher_view_table() -> dict[str, dict[str, Any]]:
    """The "What a launcher sees" table of docs/figures.md: {target: {property: value}}, values as Python
    literals."""
    import ast
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "figures.md").read_text()
    section = text.split("### What a launcher sees", 1)[1].split("\n- a:", 1)[0]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ")]
    header, body = rows[0], rows[2:]
    targets = [cell.split()[0] for cell in header[1:-1]]
    table: dict[str, dict[str, Any]] = {t: {} for t in targets}
    for cells in body:
        name = cells[0].strip()
        if not cells[1].strip():
            continue  # machine-specific fields: no figure to check
        for target, cell in zip(targets, cells[1:-1]):
            cell = cell.strip()
            if cell != "—":
                table[target][name.replace("`", "")] = ast.literal_eval(cell.strip("`"))
    return table


@pytest.mark.parametrize("target", ["sm90", "sm100", "sm103", "sm120", "gfx942", "gfx950", "gfx1100", "gfx1151",
                                    "gfx1201", "gfx1250"])
def test_launcher_reads_the_devices_real_properties(target: str) -> None:
    import torch
    import triton

    seen: dict[str, Any] = {}

    def body() -> None:
        props = torch.cuda.get_device_properties(0)
        for name in _TORCH_DEVICE_FIELDS:
            seen[name] = getattr(props, name)
        seen["get_device_capability()"] = torch.cuda.get_device_capability()
        seen["device_name"] = torch.cuda.get_device_name()
        for key, value in triton.runtime.driver.active.utils.get_device_properties(0).items():
            seen[f"Triton {key}"] = value

    capture(target, body)
    expected = _launcher_view_table()[target]
    assert seen.pop("device_name") == expected["name"]
    assert seen == expected


# What a real H200 reported (torch 2.11, its driver): ``tests/gpu/driver_facts.py`` made the file on the GPU.
_H200_FACTS = json.loads((Path(__file__).parents[1] / "gpu" / "h200-driver-facts.json").read_text())
# Every field torch's _CudaDeviceProperties had there (the CPU build of torch 2.13 has no such class), but
# the PCI location and UUID, which belong to one machine.
_TORCH_DEVICE_FIELDS = tuple(name.split(").", 1)[1] for name in _H200_FACTS["device_view"]
                             if name.startswith("torch.cuda.get_device_properties(0)."))


def test_the_stand_in_device_is_what_an_h200_reports() -> None:
    """Every device property a launcher can read under a survey for sm90 (torch's
    get_device_properties fields, capability, name, Triton's CUDA properties) equals what a real H200
    reported (``tests/gpu/driver_facts.py`` recorded it there), and the GPU check's comparison finds
    nothing to report on it."""
    from ..gpu.fidelity import stand_in_view

    facts = _H200_FACTS
    real = facts["device_view"]
    view = {name: list(value) if isinstance(value, tuple) else value for name, value in stand_in_view("sm90").items()}
    assert facts["gpu"] == "NVIDIA H200" and len(_TORCH_DEVICE_FIELDS) == 19
    assert view == real


def _prune_to_new_configs(configs: list, nargs: dict, **kwargs: Any) -> list:
    """An early-prune hook that, as gemlite's does, returns configs made anew for the shape."""
    import triton

    return [triton.Config({"BLOCK": min(c.kwargs["BLOCK"], nargs["n"])}, num_warps=c.num_warps) for c in configs]


def test_autotune_prune_hook_making_new_configs_is_surveyed(ops: Any) -> None:
    import triton

    tuned = triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4),
                                     triton.Config({"BLOCK": 1024}, num_warps=8)],
                            key=["n"], prune_configs_by={"early_config_prune": _prune_to_new_configs})(
        ops.axpy_kernel.fn)  # the heuristics under the toy's own autotuner
    x, y = rs.tensor((512,), "fp32"), rs.tensor((512,), "fp32")
    session = capture("sm90", lambda: tuned[(1,)](x, y, 512, 2.0))
    # The first pruned config equals an original one (its index); the second is new (its pruned place).
    assert [(launch.config, launch.constexprs[(4,)], launch.options["num_warps"])
            for launch in session.launches] == [(0, 256, 4), (1, 512, 8)]


def test_launcher_selecting_the_tensors_device_is_captured(ops: Any) -> None:
    import torch

    def body() -> None:
        a = rs.tensor((4, 512), "bf16")
        with torch.cuda.device(a.device):  # what FlagGems' launchers do before every launch
            ops.gemm(a, rs.tensor((512, 256), "bf16"))

    assert [launch.kernel for launch in capture("gfx942", body).launches] == ["matmul"]


def test_autotuner_records_its_pick_as_after_a_launch(ops: Any) -> None:
    x, y = rs.tensor((4096,), "fp32"), rs.tensor((4096,), "fp32")
    ops.axpy_kernel.__dict__.pop("best_config", None)
    capture("sm90", lambda: ops.axpy(x, y, 2.0))
    # Wrappers around an autotuner (FlagGems' LibEntry) read best_config right after the launch.
    assert ops.axpy_kernel.best_config is ops.axpy_kernel.configs[0]


@pytest.fixture(scope="module")
def library() -> Any:
    sys.path.insert(0, str(TOY))
    try:
        from toykernels import library as module
        yield module
    finally:
        sys.path.remove(str(TOY))


def test_autotuner_with_its_own_run_makes_a_row_of_every_config_its_pruning_keeps(library: Any) -> None:
    # FlagGems' LibTuner: its own run prunes, benchmarks through Triton's _bench (triton.testing.do_bench:
    # torch.cuda.synchronize, CUDA events) and launches its pick; regsurvey's Autotuner.run is not called.
    tuner = library.tuned_scale_kernel.fn
    tuner.picks.clear()
    x = rs.tensor((4096,), "fp32")
    session = capture("sm90", lambda: library.tuned_scale(x, 2.0))
    # Configs 1 and 2 survive the pruning (BLOCK >= 256), each once: the pick's own launch is config 1's.
    assert [(launch.config, launch.constexprs[(4,)], launch.options["num_warps"])
            for launch in session.launches] == [(1, 256, 4), (2, 1024, 8)]
    assert tuner.best_config is tuner.configs[1]
    # A pick the tuner already has is launched alone, with its index (a later key of the same length).
    library.tuned_scale_kernel.kernels.clear()
    assert [launch.config for launch in capture("sm90", lambda: library.tuned_scale(x, 3.0)).launches] == [1]


def test_pinned_config_of_an_autotuner_with_its_own_run(library: Any) -> None:
    tuner = library.tuned_scale_kernel.fn
    tuner.picks.clear()
    library.tuned_scale_kernel.kernels.clear()

    def body() -> None:
        rs.pin_config(tuner, 2)
        library.tuned_scale(rs.tensor((4096,), "fp32"), 2.0)

    assert [launch.config for launch in capture("gfx950", body).launches] == [2]


def test_benchmarking_on_the_stand_in_device_is_harmless() -> None:
    import torch
    from triton.testing import do_bench  # bound before the survey, as a library's tuner binds it

    calls = []

    def body() -> None:
        torch.cuda.synchronize()
        with torch.cuda.stream(torch.cuda.Stream()):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            end.record()
        torch.cuda.current_stream().synchronize()
        assert start.elapsed_time(end) > 0
        do_bench(lambda: calls.append(1), warmup=25, rep=100)

    capture("gfx942", body)
    # Triton's loop sized from the first reading: one first call, five estimates, one warmup, one timed.
    assert len(calls) == 8


def test_a_kernel_kept_by_the_library_is_launched_again_in_a_later_key(library: Any) -> None:
    # FlagGems' LibEntry keeps what JITFunction.run returned and launches it directly the next time.
    library.scale_kernel.kernels.clear()
    first = capture("sm90", lambda: library.scale(rs.tensor((4096,), "fp32"), 2.0))
    second = capture("sm90", lambda: library.scale(rs.tensor((8192,), "fp32"), 2.0))
    fresh = capture("sm90", lambda: library.scale_kernel.fn[(8,)](
        rs.tensor((8192,), "fp32"), rs.tensor((8192,), "fp32"), 8192, 2.0, BLOCK=1024))
    assert len(first.launches) == len(second.launches) == 1
    # The kept kernel is the one a fresh launch of the later key's arguments compiles.
    assert second.launches[0].specialization_data == fresh.launches[0].specialization_data
    assert second.launches[0].where.endswith(f"library.py:{_line_of(library.KernelEntry.run, 'kernel[grid]')}")


def test_a_kernel_kept_by_the_library_reads_as_the_compiled_kernel(library: Any) -> None:
    kept: list = []
    session = capture("gfx950", lambda: kept.append(library.scale_kernel.fn[(8,)](
        rs.tensor((8192,), "fp32"), rs.tensor((8192,), "fp32"), 8192, 2.0, BLOCK=1024)))
    assert kept[0].hash == toolchain.triton_cache_hash(session.launches[0], get_target("gfx950"))
    assert kept[0].metadata.num_warps == 4
    # The row takes that compile instead of compiling again.
    assert toolchain.compile_launch(session.launches[0], get_target("gfx950")).triton_hash == kept[0].hash


def test_a_kernel_kept_from_an_autotuner_is_its_pick(library: Any) -> None:
    library.tuned_scale_kernel.fn.picks.clear()
    library.tuned_scale_kernel.kernels.clear()
    capture("gfx942", lambda: library.tuned_scale(rs.tensor((4096,), "fp32"), 2.0))
    again = capture("gfx942", lambda: library.tuned_scale(rs.tensor((8192,), "fp32"), 2.0))
    assert [(launch.config, launch.constexprs[(4,)]) for launch in again.launches] == [(1, 256)]


def _line_of(function: Callable[..., Any], text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_rs_name_names_the_launches_that_follow(ops: Any) -> None:
    a, b = rs.tensor((16, 512), "bf16"), rs.tensor((512, 256), "bf16")

    def body() -> None:
        rs.name("up")
        ops.gemm(a, b)
        rs.name("down")
        ops.gemm(a, b, block_n=32)
        rs.name(None)
        ops.scale(a, 0.5)

    session = capture("gfx950", body)
    assert [(launch.kernel, launch.name) for launch in session.launches] == [
        ("matmul", "up"), ("matmul", "down"), ("scale_rows", None)]
    assert [toolchain.constexpr_values(launch) for launch in session.launches] == [
        {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64}, {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 64},
        {"BLOCK": 512, "STOP": False}]
    rs.name("outside a survey: nothing to name")


# The stages of a compile, in the order they run, per backend (Triton 3.6 and 3.9 alike): Triton's own
# stages, with the tools timed inside the last one as entries of their own.
STAGES = {"cuda": ["frontend", "ttir", "ttgir", "llir", "ptx", "ptxas", "cubin", "store"],
          "hip": ["frontend", "ttir", "ttgir", "llir", "amdgcn", "assembler", "lld", "hsaco", "store"]}


@pytest.mark.parametrize("target", ["sm90", "gfx942", "sm100", "gfx950"])
def test_each_stage_of_a_compile_is_timed(ops: Any, target: str) -> None:
    """Every stage took some time, ptxas (NVIDIA) and the assembler and lld (AMD) apart from their stage,
    and together no longer than the compile itself (timing asserts nothing more: the machine's load
    moves every figure)."""
    import time

    session = capture(target, lambda: ops.gemm(rs.tensor((4, 512), "bf16"), rs.tensor((512, 256), "bf16")))
    with toolchain.compiling_afresh():  # compiled, never read back from Triton's cache
        start = time.perf_counter()
        compiled = toolchain.compile_launch(session.launches[0], session.target)
        elapsed = time.perf_counter() - start
    stages = compiled.stage_s
    assert stages is not None and list(stages) == STAGES[session.target.backend]
    assert all(seconds > 0 for seconds in stages.values()), dict(stages)
    assert stages.total <= elapsed + 0.01  # two clocks (the listener's time.time, this perf_counter)


def test_a_compile_triton_read_from_its_cache_has_no_stage_times(ops: Any) -> None:
    session = capture("sm90", lambda: ops.scale(rs.tensor((8, 4096), "bf16"), 0.5))
    toolchain.compile_launch(session.launches[0], session.target)  # now in Triton's cache
    assert toolchain.compile_launch(session.launches[0], session.target).stage_s is None


def test_a_warmups_compile_is_timed_for_its_launch(ops: Any) -> None:
    """A kind body's warmup is compiled by Triton while the body runs: its launch takes that compile's
    stages, as it takes its seconds; a user's compile listener is still told."""
    from triton import knobs

    heard: list[bool] = []
    knobs.compilation.listener = lambda **report: heard.append(report["cache_hit"])
    try:
        with toolchain.compiling_afresh():
            session = capture("gfx942", lambda: ops.scale_rows.warmup(
                rs.tensor((8, 2048), "fp32"), rs.tensor((8, 2048), "fp32"), 2048, 2048, 0.5, BLOCK=2048, STOP=False,
                grid=(8,)))
    finally:
        knobs.compilation.listener = None
    launch = session.launches[0]
    assert launch.compiled is not None and heard == [False]
    assert launch.stage_s is not None and list(launch.stage_s) == STAGES["hip"]
    assert launch.stage_s.total <= launch.compile_s + 0.01
    assert toolchain.compile_launch(launch, session.target).stage_s == launch.stage_s


def test_the_llvm_in_libtriton_is_named_by_the_commit_its_linker_writes() -> None:
    """``bundled_llvm_revision``: the llvm-project commit of the LLVM linked into libtriton (what compiles AMD
    code before Triton 3.9, whose toolchain block records it as ``amd_codegen_revision``), read from the
    library; the same commit its LLD writes into the hsaco it links (``.comment``), a second reading from a
    real object. Under 3.9 the block keeps the separate AMD codegen's own revision."""
    import io
    import re

    from elftools.elf.elffile import ELFFile
    from triton.backends.amd import compiler as amd

    from ..objects_kernels import compile_kernel

    revision = toolchain.bundled_llvm_revision()
    assert revision is not None and re.fullmatch(r"[0-9a-f]{40}", revision)
    hsaco = compile_kernel("add_kernel", "gfx950", BLOCK=256).asm["hsaco"]
    comment = ELFFile(io.BytesIO(hsaco)).get_section_by_name(".comment").data().decode()
    assert f"(https://github.com/llvm/llvm-project {revision})" in comment, comment
    codegen = getattr(amd, "get_amd_codegen_revision", None)
    assert toolchain.toolchain_info("hip")["amd_codegen_revision"] == (codegen() if codegen else revision)


RESTORE_IN_ANOTHER_PROCESS = '''
import pickle, sys
sys.path[:0] = sys.argv[1:]
from toykernels import ops  # noqa: F401 - what a worker of the project has imported
import made_in_a_function  # noqa: F401
from regsurvey.compile import toolchain
from regsurvey.model.targets import get_target
portables = pickle.loads(sys.stdin.buffer.read())
out = []
for target, portable in portables:
    try:
        launch = toolchain.restored_launch(portable, get_target(target))
    except toolchain.NotRestorable as exc:
        out.append(("refused", str(exc)))
        continue
    out.append((launch.kernel, launch.config, launch.name, launch.where, toolchain.triton_cache_hash(
        launch, get_target(target))))
sys.stdout.buffer.write(pickle.dumps(out))
'''

MADE_IN_A_FUNCTION = '''
import triton
import triton.language as tl


def build():
    @triton.jit
    def made(X, N, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(X + offs, 2.0, mask=offs < N)

    return made


KERNEL = build()  # as torchao's _build_triton_impls: a kernel of the module, made inside a function
'''


def test_a_portable_launch_is_made_again_exactly_in_another_process(ops: Any, tmp_path: Path) -> None:
    """Issue 37, item 1: a helper compiles the launches a key's first copy captured, not running the kind body
    again. Each launch travels pickled, its kernels by name, and is made again in a fresh interpreter with the
    same Triton cache hash (the hash covers the source, signature, constexprs, attrs and options), so the
    kernel compiled there is the one the body launched. A kernel a module makes inside a function at import
    is found by the name Triton registered it under; one a function made only while the body ran (nothing in
    the other process made it) is refused: the helper runs the body."""
    import pickle
    import subprocess

    import triton
    import triton.language as tl

    @triton.jit
    def fill(X, N, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(X + offs, 1.0, mask=offs < N)

    (tmp_path / "made_in_a_function.py").write_text(MADE_IN_A_FUNCTION)
    sys.path.insert(0, str(tmp_path))
    try:
        import made_in_a_function
    finally:
        sys.path.remove(str(tmp_path))
    x, y = rs.tensor((4096,), "fp32"), rs.tensor((4096,), "fp32")
    autotuned = capture("gfx950", lambda: ops.axpy(x, y, 2.0)).launches  # three configs, heuristics' constexprs
    gemm = capture("sm90", lambda: ops.gemm(rs.tensor((4, 512), "bf16"), rs.tensor((512, 256), "bf16"))).launches
    made = capture("gfx950", lambda: rs.launch(made_in_a_function.KERNEL, rs.tensor((4096,), "fp32"), 4096, grid=(1,),
                                               BLOCK=128)).launches
    local = capture("gfx950", lambda: rs.launch(fill, rs.tensor((4096,), "fp32"), 4096, grid=(1,), BLOCK=256)).launches
    launches = [("gfx950", launch) for launch in autotuned] + [("sm90", launch) for launch in gemm] + [
        ("gfx950", made[0]), ("gfx950", local[0])]
    portables = [(t, toolchain.portable_launch(launch, get_target(t))) for t, launch in launches]
    assert all(p is not None for _, p in portables)
    done = subprocess.run([sys.executable, "-c", RESTORE_IN_ANOTHER_PROCESS, str(TOY), str(tmp_path)],
                          input=pickle.dumps(portables), capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    restored = pickle.loads(done.stdout)
    assert restored[:-1] == [(launch.kernel, launch.config, launch.name, launch.where,
                              toolchain.triton_cache_hash(launch, get_target(t))) for t, launch in launches[:-1]]
    assert [launch.config for _, launch in launches[:3]] == [0, 1, 2]
    assert restored[-1][0] == "refused" and "<locals>.fill is not in this process" in restored[-1][1]


def test_a_launch_whose_kernel_hashes_otherwise_is_refused(ops: Any) -> None:
    """A kernel whose hash differs where it is made again (its source changed in between) is not the launch
    that travelled: refused (the helper then runs the kind body itself)."""
    import dataclasses

    target = get_target("gfx950")
    gemm = capture("gfx950", lambda: ops.gemm(rs.tensor((4, 512), "bf16"), rs.tensor((512, 256), "bf16")))
    portable = toolchain.portable_launch(gemm.launches[0], target)
    assert portable is not None and toolchain.restored_launch(portable, target).cache_hash == portable.cache_hash
    other = dataclasses.replace(portable, cache_hash="0" * 64)  # as a source changed since it travelled
    with pytest.raises(toolchain.NotRestorable, match="hashes otherwise"):
        toolchain.restored_launch(other, target)


# -- which targets this Triton builds for (compile.toolchain.cannot_build; CI runs it on Triton 3.6 too) ---------


def test_this_triton_builds_for_every_target() -> None:
    assert {name: toolchain.cannot_build(target) for name, target in TARGETS.items()} == dict.fromkeys(TARGETS)


def made_up(base: str, arch: str | int, case: str) -> Target:
    """A target record regsurvey does not have: ``base``'s with another arch, named for the test ``case`` (the
    probe's answer is kept per record and process)."""
    return dataclasses.replace(get_target(base), name=f"{case}-{arch}", arch=arch)


@pytest.mark.parametrize(("base", "arch", "why"), [
    ("gfx1250", "gfx9999", "its AMD backend does not know gfx9999"),  # Triton's own passes, before LLVM
    ("sm120", 999, "its LLVM does not know sm_999a"),  # LLVM says so first; the ptxas then refuses it too
])
def test_an_arch_this_triton_does_not_know_is_said_in_a_few_words(base: str, arch: str | int, why: str) -> None:
    assert toolchain.cannot_build(made_up(base, arch, "unknown")) == why


def stand_in_ptxas(where: Path, monkeypatch: pytest.MonkeyPatch, release: str, refuses: tuple[str, ...] = ()) -> Path:
    """:func:`tests.conftest.write_stand_in_ptxas` at ``where``, the ptxas Triton runs for every arch."""
    write_stand_in_ptxas(where, release, refuses)
    for variable in PTXAS_VARIABLES:
        monkeypatch.setenv(variable, str(where))
    return where


def test_llvm_building_for_a_processor_it_does_not_know_is_refused_though_it_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LLVM builds for a processor it does not know, saying so only on stderr: with a ptxas that takes anything,
    the compile goes through, and the probe still says no."""
    stand_in_ptxas(tmp_path / "ptxas", monkeypatch, "13.0")
    assert toolchain.cannot_build(made_up("sm120", 999, "any-ptxas")) == "its LLVM does not know sm_999a"
    assert toolchain.cannot_build(made_up("sm120", 120, "any-ptxas")) is None


def test_a_ptxas_that_does_not_know_the_arch_is_named_by_its_release_and_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ptxas older than the target (``TRITON_PTXAS_PATH`` naming an old CUDA's) refuses its ``--gpu-name``.
    Triton 3.9 asks LLVM for the PTX version that ptxas reads, too old for sm_120a, and LLVM ends the process
    it runs in: the probe's child, not this one; Triton 3.6 hands the PTX to ptxas."""
    ptxas = stand_in_ptxas(tmp_path / "ptxas", monkeypatch, "12.0", refuses=("sm_90a", "sm_120a"))
    old = made_up("sm90", 90, "old-ptxas")
    assert toolchain.cannot_build(old) == f"its CUDA 12.0 ptxas {ptxas} does not know sm_90a"
    assert toolchain.cannot_build(made_up("sm120", 120, "old-ptxas")) in (
        f"its CUDA 12.0 ptxas {ptxas} reads PTX 8.0, too old for sm_120a",
        f"its CUDA 12.0 ptxas {ptxas} does not know sm_120a")
