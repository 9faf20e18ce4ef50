"""The capture session API kind bodies call (regsurvey.keys.session, exported as ``rs.*``): the session
that receives one key's launches, ``rs.target()``, ``rs.skip``, ``rs.pin_config`` and ``rs.launch``; first
as plain calls, then inside a real capture of the toy kernels (nothing compiles)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import regsurvey as rs
from regsurvey.keys import session as capture
from regsurvey.keys.session import CaptureSession, SkipKey
from regsurvey.model.targets import get_target


@pytest.fixture
def toolchain() -> Any:
    from regsurvey.compile import toolchain as module

    return module


def test_outside_a_survey_there_is_no_session() -> None:
    assert capture.current_session() is None
    assert capture.current_target_or_none() is None
    with pytest.raises(RuntimeError, match=r"^rs\.target\(\) is only available while regsurvey surveys a key$"):
        rs.target()


def test_a_session_is_current_between_begin_and_end() -> None:
    gfx950, sm90 = CaptureSession(get_target("gfx950")), CaptureSession(get_target("sm90"))
    outer = capture.begin(gfx950)
    try:
        assert capture.current_session() is gfx950
        assert rs.target() is get_target("gfx950") and rs.target().is_amd
        inner = capture.begin(sm90)
        assert capture.current_session() is sm90 and rs.target().arch == 90
        capture.end(inner)
        assert capture.current_session() is gfx950  # the outer one again
        assert capture.current_target_or_none() is get_target("gfx950")
    finally:
        capture.end(outer)
    assert capture.current_session() is None


def test_a_session_belongs_to_the_thread_that_began_it() -> None:
    session = CaptureSession(get_target("gfx950"))
    seen: list[CaptureSession | None] = []
    token = capture.begin(session)
    try:
        other = threading.Thread(target=lambda: seen.append(capture.current_session()))
        other.start()
        other.join()
        seen.append(capture.current_session())
    finally:
        capture.end(token)
    assert seen == [None, session]  # another thread (another key being captured) does not see it


def test_a_new_session_is_empty() -> None:
    session = CaptureSession(get_target("sm90"))
    assert (session.launches, session.pinned_configs, session.benched, session.compiled_here) == ([], {}, [], [])
    assert (session.config_index, session.tuner, session.warmup_started) == (None, None, None)
    assert CaptureSession(get_target("sm90")).launches is not session.launches


@pytest.mark.parametrize("in_session", [False, True])
def test_skip_raises_with_its_reason(in_session: bool) -> None:
    token = capture.begin(CaptureSession(get_target("gfx950"))) if in_session else None
    try:
        with pytest.raises(SkipKey) as raised:
            rs.skip("no 64-row variant of this layer")
    finally:
        if token is not None:
            capture.end(token)
    assert raised.value.reason == str(raised.value) == "no 64-row variant of this layer"
    with pytest.raises(SkipKey) as raised:
        rs.skip(64)  # type: ignore[arg-type]  # a reason is kept as text
    assert raised.value.reason == "64"


def test_pin_config_needs_a_survey_and_an_autotuner(ops: Any) -> None:
    with pytest.raises(RuntimeError, match=r"rs\.pin_config\(\) is only available while regsurvey surveys a key"):
        rs.pin_config(ops.axpy_kernel, 0)
    session = CaptureSession(get_target("gfx950"))
    token = capture.begin(session)
    try:
        with pytest.raises(TypeError, match="is not an @triton.autotune kernel"):
            rs.pin_config(ops.scale_rows, 0)  # a plain @triton.jit function
        with pytest.raises(TypeError, match="is not an @triton.autotune kernel"):
            rs.pin_config(ops.axpy_kernel.fn, 0)  # the @triton.heuristics under the autotuner
        for index in (3, -1):
            with pytest.raises(IndexError, match=rf"^config {index} out of range: .* has 3 configs$"):
                rs.pin_config(ops.axpy_kernel, index)
        assert session.pinned_configs == {}
        rs.pin_config(ops.axpy_kernel, 2)
        rs.pin_config(ops.axpy_kernel, 1)  # the last pin holds
        assert session.pinned_configs == {id(ops.axpy_kernel): 1}
    finally:
        capture.end(token)


def captured(toolchain: Any, target: str, body: Any) -> CaptureSession:
    session = CaptureSession(get_target(target))
    with toolchain.capturing(session):
        body()
    return session


def test_a_pin_holds_for_its_key_only(ops: Any, toolchain: Any) -> None:
    x, y = rs.tensor((4096,), "fp32"), rs.tensor((4096,), "fp32")

    def pinned() -> None:
        rs.pin_config(ops.axpy_kernel, 1)
        ops.axpy(x, y, 2.0)

    one = captured(toolchain, "gfx950", pinned)
    assert [(launch.config, launch.constexprs[(4,)], launch.options["num_warps"]) for launch in one.launches] == [
        (1, 512, 4)]
    # The next key's session knows no pin: every config the autotuner may pick on the GPU is a launch.
    every = captured(toolchain, "gfx950", lambda: ops.axpy(x, y, 2.0))
    assert [launch.config for launch in every.launches] == [0, 1, 2]


def test_rs_target_and_rs_launch_inside_a_kind_body(ops: Any, toolchain: Any) -> None:
    def body() -> None:
        # A launcher that picks its tile per arch, launching through rs.launch.
        block = 256 if rs.target().is_amd else 128
        x = rs.tensor((8, 4096), "bf16")
        rs.launch(ops.scale_rows, x, rs.tensor((8, 4096), "bf16"), 4096, x.stride(0), 0.5, grid=(8,),
                  BLOCK=block, STOP=False)

    line = body.__code__.co_firstlineno + 4
    for target, block in (("gfx950", 256), ("sm90", 128)):
        session = captured(toolchain, target, body)
        (launch,) = session.launches
        assert (launch.kernel, launch.config) == ("scale_rows", None)
        assert toolchain.jit_function_name(launch.jit_function) == "toykernels.ops:scale_rows"
        assert launch.constexprs[(5,)] == block and launch.constexprs[(6,)] is False  # BLOCK, STOP
        assert launch.where == f"{__file__}:{line}"  # the body's call, not regsurvey's
        assert launch.compiled is None  # captured, not compiled
        assert capture.current_session() is None  # over with the capture


def test_the_fp8_formats_follow_the_surveyed_target(ops: Any, toolchain: Any) -> None:
    import torch

    dtypes: dict[str, tuple[torch.dtype, torch.dtype]] = {}
    for target in ("gfx942", "gfx950", "sm90"):
        captured(toolchain, target, lambda t=target: dtypes.__setitem__(
            t, (rs.tensor((16,), "e4m3").dtype, rs.tensor((16,), "e5m2").dtype)))
    assert dtypes == {"gfx942": (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz),
                      "gfx950": (torch.float8_e4m3fn, torch.float8_e5m2),
                      "sm90": (torch.float8_e4m3fn, torch.float8_e5m2)}
    assert rs.tensor((16,), "e4m3").dtype == torch.float8_e4m3fn  # outside a survey: the OCP format


def test_a_skip_ends_the_capture_and_keeps_what_was_launched(ops: Any, toolchain: Any) -> None:
    from triton.runtime.jit import JITFunction

    run = JITFunction.run
    session = CaptureSession(get_target("sm90"))

    def body() -> None:
        ops.scale(rs.tensor((2, 64), "fp32"), 0.5)
        rs.skip("launched, then found the combination does not exist")

    with pytest.raises(SkipKey, match="does not exist"), toolchain.capturing(session):
        body()
    # The launch before the skip is the session's (the survey drops it with the key); nothing stays hooked.
    assert [launch.kernel for launch in session.launches] == ["scale_rows"]
    assert capture.current_session() is None and JITFunction.run is run
    with pytest.raises(RuntimeError):
        rs.target()
