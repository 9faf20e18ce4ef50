"""Which parameters of a kernel the LLVM IR reads: the lint's evidence that the source needs an argument.

Triton's ``llir`` is the module after LLVM's own optimisation, the input of instruction selection: a
parameter that still has a use there is one the machine code must read. Uses in debug records
(``#dbg_value``, ``llvm.dbg.*``) do not count; they generate no code.
"""

from __future__ import annotations

import re

_DEFINE = re.compile(r"^define\b[^@]*@(\"[^\"]+\"|[-\w$.]+)\((.*)\)[^(]*\{\s*$", re.M)
_DEBUG = re.compile(r"^\s*(?:#dbg_\w+\(|.*\bcall\b.*@llvm\.dbg\.)")


def kernel_names(llir: str) -> list[str]:
    """Names of the functions defined in ``llir`` (kernels and helpers), in order."""
    return [m[1].strip('"') for m in _DEFINE.finditer(llir)]


def parameter_uses(llir: str, kernel: str | None = None) -> list[bool] | None:
    """For each parameter of ``kernel`` (default: the first function defined), whether the body uses it.

    None if the function is not there or its parameter list cannot be read.
    """
    for m in _DEFINE.finditer(llir):
        if kernel is not None and m[1].strip('"') != kernel:
            continue
        names = _parameter_names(m[2])
        if names is None:
            return None
        end = llir.find("\n}", m.end())
        body = llir[m.end(): end if end >= 0 else len(llir)]
        code = "\n".join(line for line in body.splitlines() if not _DEBUG.match(line))
        used = set(re.findall(r"%([-\w$.]+)", code))
        return [name in used for name in names]
    return None


def _parameter_names(params: str) -> list[str] | None:
    """``%name`` of each parameter in a ``define``'s parameter list (unnamed ones get LLVM's numbers)."""
    names: list[str] = []
    depth = 0
    piece = ""
    pieces = []
    for ch in params:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            pieces.append(piece)
            piece = ""
        else:
            piece += ch
    if piece.strip():
        pieces.append(piece)
    for index, text in enumerate(pieces):
        if text.strip() == "...":
            return None
        m = re.search(r"%([-\w$.]+)\s*$", text.strip())
        # LLVM numbers unnamed parameters from 0 in order; Triton's are all unnamed.
        names.append(m[1] if m else str(index))
    return names
