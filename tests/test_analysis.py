"""One analysis per object (:func:`regsurvey.analysis.analyze`): the same figures as the vendor readers
and the same findings as the lint, each part of the object parsed once, on real compiled objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from regsurvey import analysis
from regsurvey.compile.triton_facts import APPENDED_ARGS, PTXAS_LOG
from regsurvey.lint import lint_amdgcn, lint_nvidia
from regsurvey.model.targets import get_target
from regsurvey.objects import amd_object, nvidia_object

from .objects_kernels import compile_kernel

APPENDED = len(APPENDED_ARGS)  # Triton's scratch pointers, never reported by the lint

FIXTURES = Path(__file__).parent / "fixtures" / "lint"


def counted(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Count the calls of ``module.name`` (still calling it)."""
    calls: list[int] = []
    real = getattr(module, name)

    def wrapper(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def test_an_amd_object_is_read_and_linted_from_one_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    binary = (FIXTURES / "many_buffers-gfx950.hsaco").read_bytes()
    texts = {"amdgcn": (FIXTURES / "restore-removed.amdgcn").read_text(),
             "llir": (FIXTURES / "many_buffers-gfx950.llir").read_text()}
    target = get_target("gfx950")
    expected = amd_object.read_hsaco(binary, lds_bytes=0, num_warps=4, target=target, code_text=texts["amdgcn"])
    assert expected["loop_spill_ops"] > 0  # its SGPRs spill to VGPR lanes in the loop over the buffers
    expected_findings = tuple(lint_amdgcn(texts["amdgcn"], hsaco=binary, llir=texts["llir"], appended_args=APPENDED))
    parses = counted(monkeypatch, amd_object, "parse_hsaco")
    report = analysis.analyze(target, binary, texts, shared=0, num_warps=4)
    assert report.resources == expected and report.findings == expected_findings and report.linted
    assert [f.arg_offset for f in report.findings or ()] == [256]  # the restore the mutant removed
    assert len(parses) == 1


def test_an_amd_object_the_lint_cannot_read_keeps_its_figures() -> None:
    binary = (FIXTURES / "many_buffers-gfx950.hsaco").read_bytes()
    report = analysis.analyze(get_target("gfx950"), binary, {"amdgcn": "s_endpgm\n"}, shared=0, num_warps=4)
    assert report.resources["sgpr_spill"] == 156 and not report.linted
    assert report.why_not_linted == "no kernel function in the code"


def test_a_cubin_with_a_stack_frame_is_disassembled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_kernel("hold_tile_kernel", "sm90", options=(("num_warps", 1),), BLOCK=4096)
    cubin, target = compiled.asm["cubin"], get_target("sm90")
    expected = nvidia_object.read_cubin(cubin, shared_bytes=compiled.metadata.shared, num_warps=1,
                                        target=target)
    expected_findings = tuple(lint_nvidia(compiled.asm["ptx"], cubin, appended_args=APPENDED))
    runs = counted(monkeypatch, nvidia_object, "disassemble")
    report = analysis.analyze(target, cubin, compiled.asm, shared=compiled.metadata.shared, num_warps=1)
    assert expected["stack_bytes"] > 0 and expected["spill_store_bytes"] > 0
    assert report.resources == expected and report.findings == expected_findings
    assert len(runs) == 1  # the spills and the lint read the same SASS


def test_a_spilling_cubin_takes_its_spills_from_the_compiles_ptxas_log(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import regsurvey as rs
    from regsurvey.compile import toolchain
    from regsurvey.keys.session import CaptureSession

    from .objects_kernels import hold_tile_kernel

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))  # a cold cache: ptxas runs, and logs
    target = get_target("sm90")
    session = CaptureSession(target)
    with toolchain.capturing(session):
        hold_tile_kernel[(1,)](rs.tensor((4096,), "fp32"), rs.tensor((4096,), "fp32"), BLOCK=4096, num_warps=1)
    compiled = toolchain.compile_launch(session.launches[0], target)
    log = compiled.asm[PTXAS_LOG]
    assert f"Function properties for {compiled.kernel_name}" in log
    runs = counted(monkeypatch, nvidia_object, "disassemble")
    report = analysis.analyze(target, compiled.binary, compiled.asm, shared=compiled.shared, num_warps=1)
    # The bytes came from the log; a kernel that spills is disassembled once all the same, to place its spills in
    # its loops, and its lint comes with that SASS (no batch needed).
    assert len(runs) == 1 and report.linted
    from_sass = nvidia_object.read_cubin(compiled.binary, shared_bytes=compiled.shared, num_warps=1, target=target)
    assert len(runs) == 2
    assert report.resources == from_sass and from_sass["spill_store_bytes"] > 0 and from_sass["stack_bytes"] > 0
    # A log that gives another frame size is another compile's: the SASS counts instead.
    frame = from_sass["stack_bytes"]
    other = log.replace(f"{frame} bytes stack frame", f"{frame + 8} bytes stack frame")
    assert nvidia_object.logged_spills(log, compiled.kernel_name, frame) == (
        from_sass["spill_store_bytes"], from_sass["spill_load_bytes"])
    assert nvidia_object.logged_spills(other, compiled.kernel_name, frame) is None
    assert nvidia_object.logged_spills(log, "another_kernel", frame) is None
    texts = dict(compiled.asm, **{PTXAS_LOG: other})
    assert analysis.analyze(target, compiled.binary, texts, shared=compiled.shared, num_warps=1).resources == (
        report.resources)
    assert len(runs) == 3


def test_a_user_asking_for_the_ptxas_log_still_sees_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import regsurvey as rs
    from regsurvey.compile import toolchain
    from regsurvey.keys.session import CaptureSession

    from .objects_kernels import add_kernel

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_DUMP_PTXAS_LOG", "1")
    session = CaptureSession(get_target("sm90"))
    with toolchain.capturing(session):
        add_kernel[(1,)](rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32"), 1024,
                         BLOCK=1024)
    compiled = toolchain.compile_launch(session.launches[0], session.target)
    assert f"Function properties for {compiled.kernel_name}" in capsys.readouterr().out
    assert "bytes spill stores" in compiled.asm[PTXAS_LOG]


def test_a_frameless_cubin_is_left_to_the_batch_lint_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_kernel("add_kernel", "sm90", options=(("num_warps", 4),), BLOCK=1024)
    cubin, target = compiled.asm["cubin"], get_target("sm90")
    runs = counted(monkeypatch, nvidia_object, "disassemble")
    # Its instruction words show every parameter its PTX loads read: linted at once, with no disassembly.
    words = analysis.analyze(target, cubin, compiled.asm, shared=compiled.metadata.shared, num_warps=4)
    assert words.linted and words.findings == () and runs == []
    monkeypatch.setenv("REGSURVEY_LINT_WORDS", "off")  # as before issue 37: the words are not read
    cheap = analysis.analyze(target, cubin, compiled.asm, shared=compiled.metadata.shared, num_warps=4)
    assert cheap.resources["stack_bytes"] == 0 and not cheap.linted and cheap.why_not_linted is None
    assert runs == []  # nvdisasm costs more than the compile: not run for a cubin without a frame
    asked = analysis.analyze(target, cubin, compiled.asm, shared=compiled.metadata.shared, num_warps=4, lint=True)
    assert asked.linted and asked.findings == () and asked.resources == cheap.resources and len(runs) == 1
