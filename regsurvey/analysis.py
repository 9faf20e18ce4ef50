"""One analysis per compiled object: :func:`analyze` reads its figures and lints it, parsing each part
once (the HSACO's note and descriptors; the cubin's ELF and, where needed, its SASS), and returns an
:class:`~regsurvey.model.results.ObjectReport`. The survey keeps the report in its result cache, under the
reader revision (:data:`regsurvey.model.version.READER_REVISION`), and on each row.

When it lints: an AMD object always (its amdgcn text is at hand: milliseconds). An NVIDIA object needs
its SASS, and one nvdisasm run costs more than many compiles: :func:`analyze` lints a cubin when its
SASS is read anyway (a kernel that spills: its spills are placed in its loops there, and counted there
when the compile's ptxas log did not give them), when its instruction words show every parameter its PTX
loads read (no disassembly: :func:`regsurvey.lint.nvidia.read_in_words`), or when told to; the survey lints
the other cubins in batches while keys still compile (:mod:`regsurvey.engine.deferred_lint`, one nvdisasm
run over many), so that every build is linted, as ``regsurvey lint`` lints it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from .compile.triton_facts import AMDGCN, APPENDED_ARGS, LLIR, PTX, PTXAS_LOG, TTIR, arg_names_from_ttir
from .lint import LintInputError, lint_amdgcn, lint_nvidia
from .lint.disassembler import disassemble
from .lint.nvidia import read_in_words as nvidia_read_in_words
from .lint.nvidia import words_first
from .model.findings import Finding
from .model.results import ObjectReport
from .model.targets import Target, get_target

if TYPE_CHECKING:
    from .objects.amd_object import HsacoInfo


def analyze(target: Target, binary: bytes, texts: Mapping[str, str], *, shared: int, num_warps: int,
            sass: str | None = None, lint: bool | None = None) -> ObjectReport:
    """The figures and lint findings of one object compiled for ``target``.

    ``texts`` are the compile's texts (``amdgcn`` or ``ptx``, ``llir``, ``ttir``, and for a cubin the
    log of ptxas, which spares a spilling kernel's disassembly, see ``read_cubin_sass``); ``shared`` and
    ``num_warps`` Triton's compiled metadata. ``sass``: a cubin's ``nvdisasm -c``, if the caller has
    it. ``lint``: True always lints, False never; None lints where it is cheap (see the module).
    Raises CorruptObjectError for an object the readers cannot read; a lint that cannot run leaves
    ``findings`` None and says why.
    """
    if target.is_amd:
        from .objects.amd_object import parse_hsaco, read_hsaco

        info = parse_hsaco(binary)
        resources = read_hsaco(binary, lds_bytes=shared, num_warps=num_warps, target=target,
                               code_text=texts.get(AMDGCN), info=info)
        if lint is False:
            return ObjectReport(resources)
        try:
            return ObjectReport(resources, tuple(_lint_amd(binary, texts.get, info=info)))
        except LintInputError as exc:
            return ObjectReport(resources, why_not_linted=str(exc))
    from .objects.nvidia_object import read_cubin_sass

    resources, sass = read_cubin_sass(binary, shared_bytes=shared, num_warps=num_warps, target=target,
                                      sass=sass, want_sass=bool(lint), ptxas_log=texts.get(PTXAS_LOG))
    if lint is False:
        return ObjectReport(resources)
    if sass is None:
        # Linted here where its instruction words show every loaded parameter read (no disassembly); else
        # left to the survey's batched lint.
        return ObjectReport(resources, ()) if read_in_words(binary, texts.get) else ObjectReport(resources)
    try:
        return ObjectReport(resources, tuple(lint_object(target.name, binary, texts.get, sass)))
    except LintInputError as exc:
        return ObjectReport(resources, why_not_linted=str(exc))


def lint_object(target: str, binary: bytes, text: Callable[[str], str | None], sass: str | None = None
                ) -> list[Finding]:
    """Lint one compiled object of ``target`` given a way to its texts (``amdgcn``/``ptx``, ``llir``,
    ``ttir``; None where absent) and, for a cubin, its SASS if already disassembled. Raises
    LintInputError, CorruptObjectError."""
    if get_target(target).is_amd:
        return _lint_amd(binary, text)
    ptx = text(PTX)
    if ptx is None:
        raise LintInputError("no PTX stored beside the cubin")
    try:
        return lint_nvidia(ptx, binary, appended_args=len(APPENDED_ARGS), arg_names=_arg_names(text), sass=sass)
    except ValueError as exc:
        raise LintInputError(str(exc)) from None


def read_in_words(binary: bytes, text: Callable[[str], str | None]) -> bool:
    """Whether a cubin's lint finds nothing without a disassembly (every parameter its PTX loads is read by an
    instruction decoded from its words: :func:`regsurvey.lint.nvidia.read_in_words`)."""
    ptx = text(PTX)
    return ptx is not None and words_first() and nvidia_read_in_words(ptx, binary, appended_args=len(APPENDED_ARGS))


def _lint_amd(binary: bytes, text: Callable[[str], str | None], info: HsacoInfo | None = None) -> list[Finding]:
    asm = text(AMDGCN)
    if asm is None:
        try:
            asm = disassemble(binary)
        except ValueError as exc:
            raise LintInputError(str(exc)) from None
    return lint_amdgcn(asm, appended_args=len(APPENDED_ARGS), hsaco=binary, llir=text(LLIR), arg_names=_arg_names(text),
                       info=info)


def _arg_names(text: Callable[[str], str | None]) -> list[str] | None:
    """The kernel's non-constexpr Python parameters, from its stored ``ttir`` (None without it)."""
    ttir = text(TTIR)
    return arg_names_from_ttir(ttir) if ttir else None
