"""The fuzzing campaign of issue #12: mutated real objects and texts into every public reader.

Seeds are real: the gfx950 HSACOs, code objects and ``amdgcn`` texts of ``tests/fixtures/lint`` and an sm_90
cubin and its PTX compiled here; where an LLVM >= 20 objdump is installed, also ``regsurvey lint FILE`` on
mutated objects (objdump runs on each) and the lint on mutated objdump text. Each input is one to three
mutations of a seed (:mod:`.mutate`: bit flips, byte and word overwrites, truncation, duplicated or
deleted chunks; for text, deleted, duplicated or swapped lines and changed numbers). A target may return a
result or raise :class:`~regsurvey.errors.CorruptObjectError` / :class:`~regsurvey.lint.LintInputError`
with a one-line message; anything else (an IndexError, a RecursionError, a case over its time budget ...)
fails the test, naming the target, the seed and the operations that reproduce it.

A short deterministic slice runs in the default test run; ``pytest -m fuzz tests/fuzz`` runs the campaign,
``REGSURVEY_FUZZ_N`` inputs in all (default 10,000), drawn from other seeds than the slice's.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import signal
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from regsurvey.compile.triton_facts import APPENDED_ARGS
from regsurvey.errors import CorruptObjectError
from regsurvey.lint import LintInputError, lint_amdgcn
from regsurvey.lint.disassembler import disassemble, find_objdump
from regsurvey.lint.nvidia import lint_ptx_sass, ptx_params
from regsurvey.linting import lint_file
from regsurvey.model.targets import get_target
from regsurvey.objects import nvidia_object
from regsurvey.objects.amd_object import parse_hsaco, read_hsaco
from regsurvey.objects.amdgcn import parse_functions
from regsurvey.objects.nvidia_object import read_cubin

from .mutate import Op, apply, draw

APPENDED = len(APPENDED_ARGS)  # Triton's scratch pointers, never reported by the lint

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "lint"
CASE_BUDGET_S = 5.0  # one input, one target: anything slower is a hang
SLICE_PER_TARGET = 150
CAMPAIGN_TOTAL = int(os.environ.get("REGSURVEY_FUZZ_N", "10000"))
ACCEPTED = (CorruptObjectError, LintInputError)


# -- seeds -------------------------------------------------------------------------------------------

@functools.cache
def amd_objects() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted([*FIXTURES.glob("*.hsaco"), *FIXTURES.glob("*.co")])}


@functools.cache
def amd_texts() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(FIXTURES.glob("*.amdgcn"))}


def object_of(text_name: str) -> bytes:
    """The code object beside an ``.amdgcn`` text: its ``.hsaco``, or its ``.co``."""
    stem = text_name.removesuffix(".amdgcn")
    objects = amd_objects()
    return objects.get(f"{stem}.hsaco") or objects[f"{stem}.co"]


@functools.cache
def nvidia_kernel() -> tuple[bytes, str, str]:
    """An sm_90 cubin, its PTX and its SASS (disassembled once)."""
    from ..objects_kernels import compile_kernel

    compiled = compile_kernel("add_kernel", "sm90", options=(("num_warps", 4),), BLOCK=1024)
    cubin = compiled.asm["cubin"]
    return cubin, compiled.asm["ptx"], nvidia_object.disassemble(cubin)


# -- targets -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Target:
    seeds: Callable[[], dict[str, bytes | str]]
    run: Callable[[str, bytes | str], object]  # (seed name, mutated input)


def _read_hsaco(_: str, data: bytes | str) -> object:
    assert isinstance(data, bytes)
    info = parse_hsaco(data)
    return info, read_hsaco(data, lds_bytes=0, num_warps=4, target=get_target("gfx950"))


def _lint_with_mutated_object(name: str, data: bytes | str) -> object:
    assert isinstance(data, bytes)
    text = amd_texts()[name.removesuffix(".hsaco").removesuffix(".co") + ".amdgcn"]
    return lint_amdgcn(text, hsaco=data, appended_args=APPENDED)


def _amdgcn(_: str, text: bytes | str) -> object:
    assert isinstance(text, str)
    return parse_functions(text), lint_amdgcn(text, appended_args=APPENDED)


def _amdgcn_with_object(name: str, text: bytes | str) -> object:
    assert isinstance(text, str)
    return lint_amdgcn(text, hsaco=object_of(name), appended_args=APPENDED)


def _read_cubin(_: str, data: bytes | str) -> object:
    assert isinstance(data, bytes)
    return read_cubin(data, shared_bytes=0, num_warps=4, target=get_target("sm90"))


def _ptx(_: str, ptx: bytes | str) -> object:
    assert isinstance(ptx, str)
    return ptx_params(ptx), lint_ptx_sass(ptx, nvidia_kernel()[2], appended_args=APPENDED)


@functools.cache
def objdump_texts() -> dict[str, str]:
    """``llvm-objdump -d`` of each linked seed object (what ``regsurvey lint FILE.hsaco`` lints)."""
    return {name: disassemble(data) for name, data in amd_objects().items() if name.endswith(".hsaco")}


def _objdump_text(name: str, text: bytes | str) -> object:
    assert isinstance(text, str)
    return lint_amdgcn(text, hsaco=amd_objects()[name], appended_args=APPENDED)


def _lint_file(_: str, data: bytes | str) -> object:
    """``regsurvey lint FILE`` on a mutated object: parsed, then disassembled by llvm-objdump, then linted."""
    assert isinstance(data, bytes)
    with tempfile.NamedTemporaryFile(suffix=".hsaco") as f:
        f.write(data)
        f.flush()
        return lint_file(Path(f.name))


def _linked_objects() -> dict[str, bytes | str]:
    return {name: data for name, data in amd_objects().items() if name.endswith(".hsaco")}


def _paired_objects() -> dict[str, bytes | str]:
    texts = amd_texts()
    return {name: data for name, data in amd_objects().items()
            if name.removesuffix(".hsaco").removesuffix(".co") + ".amdgcn" in texts}


TARGETS: dict[str, Target] = {
    "read_hsaco": Target(lambda: dict(amd_objects()), _read_hsaco),
    "lint_amdgcn(hsaco=mutated)": Target(_paired_objects, _lint_with_mutated_object),
    "parse_functions+lint_amdgcn": Target(lambda: dict(amd_texts()), _amdgcn),
    "lint_amdgcn(mutated, hsaco=)": Target(lambda: dict(amd_texts()), _amdgcn_with_object),
    "read_cubin": Target(lambda: {"add_kernel-sm90.cubin": nvidia_kernel()[0]}, _read_cubin),
    "ptx_params+lint_ptx_sass": Target(lambda: {"add_kernel-sm90.ptx": nvidia_kernel()[1]}, _ptx),
}
if find_objdump() is not None:  # (docs/commands.md: LLVM >= 20's objdump; the CI installs one)
    TARGETS["lint_file(mutated hsaco)"] = Target(_linked_objects, _lint_file)
    TARGETS["lint_amdgcn(mutated objdump text)"] = Target(lambda: dict(objdump_texts()), _objdump_text)


# -- running a case ----------------------------------------------------------------------------------

class CaseTimeout(BaseException):
    """One case ran past its budget (a BaseException: no ``except Exception`` in a target swallows it)."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"over the {seconds} s budget of one case")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(target: str, seed: str, ops: list[Op]) -> str | None:
    """Run one input; None if the target behaved (a result, or one accepted one-line error), else why not."""
    data = apply(TARGETS[target].seeds()[seed], ops)
    start = time.perf_counter()
    try:
        with deadline(CASE_BUDGET_S):
            TARGETS[target].run(seed, data)
    except ACCEPTED as exc:
        message = str(exc)
        if not message or "\n" in message:
            return f"{type(exc).__name__} whose message is not one line: {message!r}"
    except (Exception, CaseTimeout, RecursionError) as exc:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return f"{type(exc).__name__}: {str(exc)[:200]} (at {Path(where.filename).name}:{where.lineno})"
    elapsed = time.perf_counter() - start
    if elapsed > CASE_BUDGET_S:
        return f"took {elapsed:.1f} s"
    return None


def cases(target: str, stream: str, count: int) -> Iterator[tuple[str, list[Op]]]:
    """``count`` inputs for ``target``: case ``i`` draws from ``random.Random(f"{target}/{stream}/{i}")``."""
    seeds = TARGETS[target].seeds()
    names = sorted(seeds)
    for i in range(count):
        rng = random.Random(f"{target}/{stream}/{i}")
        name = rng.choice(names)
        yield name, draw(rng, seeds[name])


def fuzz(target: str, stream: str, count: int) -> None:
    failures = []
    nvdisasm_before = _nvdisasm_runs()
    for name, ops in cases(target, stream, count):
        why = run_case(target, name, ops)
        if why is not None:
            failures.append(f"{target} on {name} with {ops!r}: {why}")
    detail = "\n".join(failures[:20])
    assert not failures, f"{len(failures)} of {count} inputs failed; reproduce with run_case:\n{detail}"
    # Reading a cubin runs nvdisasm (0.4 s) only if it has a stack frame: mutations should rarely make one.
    assert _nvdisasm_runs() - nvdisasm_before <= max(5, count // 50)


_NVDISASM_RUNS = [0]


def _nvdisasm_runs() -> int:
    return _NVDISASM_RUNS[0]


@pytest.fixture(autouse=True)
def _count_nvdisasm(monkeypatch: pytest.MonkeyPatch) -> None:
    run_tool = nvidia_object.run_tool

    def counted(name: str, args: list[str], path: str, program: str | None = None) -> str:
        _NVDISASM_RUNS[0] += 1
        return run_tool(name, args, path, program)

    monkeypatch.setattr(nvidia_object, "run_tool", counted)


# -- the tests ---------------------------------------------------------------------------------------

def test_the_seeds_are_read_cleanly() -> None:
    """Unmutated, every seed gives a result (or, for the unlinked ``.co`` objects, a CorruptObjectError)."""
    for target in TARGETS:
        for name in TARGETS[target].seeds():
            assert run_case(target, name, []) is None, (target, name)


@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_slice(target: str) -> None:
    fuzz(target, "slice", SLICE_PER_TARGET)


@pytest.mark.fuzz
@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_campaign(target: str) -> None:
    fuzz(target, "campaign", -(-CAMPAIGN_TOTAL // len(TARGETS)))


# Inputs that once failed: (target, seed, operations, the one-line error they give now), with the bug.
REGRESSIONS: list[tuple[str, str, list[Op], str]] = [
    # A metadata `.offset:` left empty: int(None), a TypeError out of kernarg.args_from_metadata.
    ("parse_functions+lint_amdgcn", "restore-removed.amdgcn",
     [("number", 1516, 25, 26, ""), ("line_swap", 1417, 1530), ("line_del", 162)],
     "malformed amdgcn: metadata field .size is empty, not an integer"),
    # parse_functions raised a bare ValueError for a register range that runs backwards.
    ("parse_functions+lint_amdgcn", "matmul-gfx950.amdgcn", [("number", 126, 27, 28, "255"), ("line_del", 551)],
     "register range s[255:3] runs backwards"),
    # s[2:2147483648]: the lint followed two billion register units (a hang).
    ("lint_amdgcn(mutated, hsaco=)", "matmul-gfx950.amdgcn", [("number", 73, 29, 30, "2147483648")],
     "malformed amdgcn: register range s[2:2147483648] runs past the end of any register file"),
    ("parse_functions+lint_amdgcn", "many_buffers-gfx950.amdgcn",
     [("number", 493, 8, 10, "67"), ("number", 667, 15, 16, "18446744073709551616")],
     "runs past the end of any register file"),
    # Text cut right after the kernel's label: a function with no block, an IndexError in reachable().
    ("lint_amdgcn(mutated, hsaco=)", "matmul-gfx950.amdgcn", [("truncate", 224)],
     "kernel matmul_kernel has no instructions"),
    # PTX the NVIDIA lint cannot read raised bare ValueErrors.
    ("ptx_params+lint_ptx_sass", "add_kernel-sm90.ptx", [("truncate", 393), ("line_del", 10)], "no .entry in the PTX"),
    ("ptx_params+lint_ptx_sass", "add_kernel-sm90.ptx", [("line_swap", 51, 15)],
     "cannot read the PTX parameter 'setp.lt.s32"),
    ("ptx_params+lint_ptx_sass", "add_kernel-sm90.ptx", [("number", 5, 11, 13, "1")],
     "no known parameter bank offset for sm_1"),
    ("ptx_params+lint_ptx_sass", "add_kernel-sm90.ptx", [("line_del", 5), ("truncate", 3808)],
     "no .target in the PTX"),
]


@pytest.mark.parametrize(("target", "seed", "ops", "error"), REGRESSIONS)
def test_regression(target: str, seed: str, ops: list[Op], error: str) -> None:
    assert run_case(target, seed, ops) is None
    with pytest.raises(ACCEPTED) as caught:
        TARGETS[target].run(seed, apply(TARGETS[target].seeds()[seed], ops))
    assert error in str(caught.value)
