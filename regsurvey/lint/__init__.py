"""The kernarg lint: kernel arguments that the compiled code loads and then never reads.

A miscompile class seen in the wild: an argument is loaded into SGPRs, spilled under register
pressure, and its restore goes missing or reads the wrong place, so a value the source uses is never
read ("six kernel arguments (s_q_b ... w_o) are loaded and never read"). Two entry points:

- :func:`lint_amdgcn` follows every kernarg dword through copies, SGPR spills to VGPR lanes and
  scratch spills along the CFG (:mod:`.kernarg`, on the parser of :mod:`.amdgcn`);
- :func:`lint_nvidia` compares the parameters the PTX loads with those the SASS reads from the
  parameter constant bank (:mod:`.nvidia`).

Each returns :class:`Finding` records; ``severity`` is ``error`` (a miscompile suspect: the LLVM IR or
the PTX uses the argument) or ``note`` (loaded and never read, with nothing saying it is needed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import CorruptObjectError
from ..objects import amdgcn
from ..objects.amd_object import HsacoInfo, parse_hsaco
from . import kernarg, llir
from .finding import ERROR, NOTE, Finding, LintInputError
from .nvidia import lint_nvidia

__all__ = ["ERROR", "NOTE", "Finding", "LintInputError", "lint_amdgcn", "lint_nvidia"]


def lint_amdgcn(text: str, *, appended_args: int, hsaco: bytes | None = None, llir: str | None = None,
                arg_names: Sequence[str] | None = None, kernel: str | None = None,
                info: HsacoInfo | None = None) -> list[Finding]:
    """Lint AMDGCN code: Triton's ``amdgcn`` text, or ``llvm-objdump -d`` of an HSACO (then ``hsaco``
    is required: a disassembly carries neither the kernel descriptor nor the metadata).

    ``hsaco``, when given, supplies the user-SGPR layout (``<kernel>.kd``) and ``.args`` (metadata
    note); otherwise the text's ``.amdhsa_*`` directives and metadata YAML do. ``llir`` is the kernel's
    LLVM IR: with it, an unread argument the IR uses is an ``error`` and one it does not use is at most
    a ``note``; without it, an argument loaded in the body (or spilled) and never read is an ``error``
    and one only preloaded is a ``note``. ``appended_args``: how many arguments the compiler appended
    after the kernel's own, never reported (Triton's scratch pointers:
    ``compile.triton_facts.APPENDED_ARGS``). ``arg_names`` are the Python parameters that are not
    constexpr, in order. ``kernel`` restricts the lint to one function; ``info`` is ``parse_hsaco(hsaco)``
    if the caller has it.
    Raises :class:`LintInputError` or :class:`~regsurvey.errors.CorruptObjectError` (``hsaco``
    unreadable).
    """
    try:
        return _lint_amdgcn(text, hsaco, llir, arg_names, kernel, info, appended_args)
    except (LintInputError, CorruptObjectError):
        raise
    except ValueError as exc:  # text the parsers cannot read: a register range, a metadata value ...
        raise LintInputError(f"malformed amdgcn: {exc}") from None


def _lint_amdgcn(text: str, hsaco: bytes | None, llir: str | None, arg_names: Sequence[str] | None,
                 kernel: str | None, info: HsacoInfo | None, appended_args: int) -> list[Finding]:
    try:
        functions = amdgcn.parse_functions(text)
    except CorruptObjectError as exc:  # the text, not the object: a register range that runs backwards
        raise LintInputError(f"malformed amdgcn: {exc}") from None
    if kernel is not None:
        functions = [f for f in functions if f.name == kernel]
    if info is None and hsaco is not None:
        info = parse_hsaco(hsaco)
    layouts = _layouts(text, info)
    if not layouts:
        if amdgcn.is_objdump(text):
            raise LintInputError("a disassembly needs its HSACO for the kernel descriptor and metadata")
        raise LintInputError("no .amdhsa_kernel block or metadata: not a kernel's amdgcn text")
    target = info.arch if info is not None else _arch(amdgcn.amdgcn_target(text))
    out: list[Finding] = []
    linted = 0
    for function in functions:
        layout = layouts.get(function.name)
        if layout is None:
            continue  # a helper function, not a kernel
        if not function.blocks:  # a kernel always ends in s_endpgm: this text was cut short
            raise LintInputError(f"kernel {function.name} has no instructions")
        linted += 1
        uses = llir_uses(llir, function.name) if llir is not None else None
        out.extend(kernarg.findings(function, layout, target=target, ir_uses=uses,
                                    arg_names=list(arg_names) if arg_names is not None else None,
                                    appended_args=appended_args))
    if not linted:
        raise LintInputError(f"no kernel {kernel!r} in the code" if kernel else "no kernel function in the code")
    return out


def llir_uses(text: str, kernel: str) -> list[bool] | None:
    """Per parameter of ``kernel`` in the LLVM IR ``text``: does the IR use it (None: not found)."""
    return llir.parameter_uses(text, kernel)


def _layouts(text: str, info: HsacoInfo | None) -> dict[str, kernarg.KernargLayout]:
    if info is not None:
        return {k.name: kernarg.layout_from_hsaco(k) for k in info.kernels}
    directives = amdgcn.amdhsa_directives(text)
    meta = amdgcn.metadata(text) or {}
    entries = meta.get("amdhsa.kernels") or []
    args = {e.get(".name"): kernarg.args_from_metadata(e) for e in entries if isinstance(e, dict)}
    missing = sorted(set(directives) - set(args))
    if missing:
        raise LintInputError(f"no metadata .args for kernel {missing[0]} (the .amdgpu_metadata block is missing)")
    return {name: kernarg.layout_from_directives(d, args[name]) for name, d in directives.items()}


def _arch(target: str | None) -> str:
    # "amdgpu9.50-amd-amdhsa-unknown-gfx950", "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-" or
    # "amdgpu12.50s-amd-amdhsa-unknown-gfx1250-strict".
    if not target:
        return "amdgcn"
    found = re.search(r"\b(gfx[0-9a-f]+(?:-strict)?)(?::|$)", target)
    return found[1] if found else target.rsplit("-", 1)[-1].split(":", 1)[0]
