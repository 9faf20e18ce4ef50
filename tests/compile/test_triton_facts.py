"""compile/triton_facts.py against the installed Triton: each fact as Triton's own source or a compile of it
says it (CI runs this on Triton 3.6 too)."""

from __future__ import annotations

import inspect

import pytest
import triton

from regsurvey.compile import triton_facts as facts
from regsurvey.lint.llir import parameter_uses
from regsurvey.model.targets import TARGETS

from ..objects_kernels import SIGNATURES, compile_kernel


@pytest.mark.parametrize("target", ["gfx950", "sm90"])
def test_a_compile_has_the_texts_and_the_appended_arguments_the_facts_name(target: str) -> None:
    ck = compile_kernel("add_kernel", target, BLOCK=1024)
    assert {facts.TTIR, facts.TTGIR, facts.LLIR, facts.code_key(TARGETS[target]),
            facts.object_key(TARGETS[target])} <= set(ck.asm)
    own = [name for name, kind in SIGNATURES["add_kernel"].items() if kind != "constexpr"]
    assert facts.arg_names_from_ttir(ck.asm[facts.TTIR]) == own
    # The kernel's own arguments, then Triton's scratch pointers (the lint never reports those).
    uses = parameter_uses(ck.asm[facts.LLIR], ck.metadata.name)
    assert uses is not None and len(uses) == len(own) + len(facts.APPENDED_ARGS)


def test_the_variables_and_the_warning_are_tritons() -> None:
    knobs = inspect.getsource(triton.knobs)
    assert all(f'"{name}"' in knobs for name in (facts.CACHE_DIR_VAR, facts.HOME_VAR, facts.FP_FUSION_VAR))
    from triton import _utils

    warning = getattr(_utils, "FP_FUSION_DEFAULT_WARNING", None)  # Triton 3.9's; 3.6 warns of nothing
    assert warning is None or warning.startswith(facts.FP_FUSION_UNSET_WARNING)


def test_the_supported_releases_are_pyprojects_and_the_installed_one() -> None:
    """The releases ``--toolchain`` accepts are those pyproject.toml requires (``triton>=3.6,<3.10``)."""
    import re
    from pathlib import Path

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    found = re.search(r'"triton>=(\d+)\.(\d+),<(\d+)\.(\d+)"', pyproject)
    assert found is not None
    low_major, low_minor, below_major, below_minor = (int(g) for g in found.groups())
    assert facts.SUPPORTED_TRITON == ((low_major, low_minor), (below_major, below_minor - 1))
    assert facts.supported_text() == "3.6 to 3.9"
    assert facts.supported_triton(triton.__version__)
    assert [facts.supported_triton(v) for v in ("3.5.1", "3.6.0", "3.9.0+git1a2b", "3.10.0", "4.0", "x")] == [
        False, True, True, False, False, False]


def test_every_target_names_the_first_release_that_builds_it_and_this_one_builds_each() -> None:
    """FIRST_BUILDING_RELEASE holds every target; a release at least as new as a target's first (this one, 3.6
    or 3.9 in CI) builds it, as compile.toolchain's probe finds."""
    from regsurvey.compile.toolchain import cannot_build

    assert set(facts.FIRST_BUILDING_RELEASE) == set(TARGETS)
    installed = facts.release(triton.__version__)
    assert installed is not None
    assert {name: cannot_build(TARGETS[name]) for name, first in facts.FIRST_BUILDING_RELEASE.items()
            if first <= installed} == dict.fromkeys(TARGETS)


def test_a_refusal_is_one_line_naming_the_release_that_can() -> None:
    assert facts.cannot_build_text("gfx1250", "3.4.0", "its LLVM does not know gfx1250") == (
        "target gfx1250: Triton 3.4.0 cannot build for it (its LLVM does not know gfx1250); Triton 3.6 or newer can")
    # A release that ships what builds it, running something else (TRITON_PTXAS_PATH): said so.
    why = "its CUDA 12.8 ptxas /opt/ptxas does not know sm_103a"
    assert facts.cannot_build_text("sm103", "3.9.0+git1a2b", why) == (
        "target sm103: Triton 3.9.0+git1a2b cannot build for it (its CUDA 12.8 ptxas /opt/ptxas does not know "
        "sm_103a); Triton 3.6 or newer can, with the compilers it ships")
    assert facts.cannot_build_text("gfx9999", "3.9.0", "its AMD backend does not know gfx9999") == (
        "target gfx9999: Triton 3.9.0 cannot build for it (its AMD backend does not know gfx9999); regsurvey "
        "knows no Triton release that can")
    assert [facts.release(v) for v in ("3.6.0", "3.10.1+git1a2b", "x")] == [(3, 6), (3, 10), None]
