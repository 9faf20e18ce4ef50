"""``llvm-objdump -d`` for AMD code objects: the lint's way into an HSACO that Triton did not print.

Triton's bindings carry no AMD disassembler, and LLVM before 20 does not know gfx950 (LLVM 19's
objdump crashes on it), so an installed LLVM >= 20 is needed: on PATH, or Debian/Ubuntu's
``/usr/lib/llvm-<N>/bin`` (``apt-get install llvm-22``). ``REGSURVEY_LLVM_OBJDUMP`` names one explicitly
(and, set to anything else, turns the search off).

Debian's LLVM 22 reads RDNA 3/3.5/4 and gfx1250 objects as Triton 3.9 prints their code, gfx1250's VGPRs
above v255 included (``v0 /*v256*/``, after the ``s_set_vgpr_msb`` it follows); it writes a zero scalar-load
offset as ``null`` and gfx12's forced literals as ``lit(...)``. A disassembler that printed v256 as a bare
``v0`` would leave the lint nothing to judge (``Function.vgprs_unnamed``).
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import tempfile

from ..objects.tools import tool_time_limit

MIN_LLVM = 20


class DisassemblerMissing(RuntimeError):
    """No llvm-objdump of LLVM >= 20 was found; the message says how to get one."""


@functools.cache
def find_objdump() -> str | None:
    """Path of an ``llvm-objdump`` of LLVM >= 20, or None. The newest /usr/lib/llvm-* wins over PATH;
    ``REGSURVEY_LLVM_OBJDUMP``, when set, is the only one considered."""
    explicit = os.environ.get("REGSURVEY_LLVM_OBJDUMP")
    if explicit is not None:
        candidates: list[str | None] = [explicit]
    else:
        versioned: list[str] = sorted(glob.glob("/usr/lib/llvm-*/bin/llvm-objdump"), key=_dir_version, reverse=True)
        candidates = list(versioned)
        candidates += [shutil.which("llvm-objdump")]
        candidates += [shutil.which(f"llvm-objdump-{n}") for n in range(30, MIN_LLVM - 1, -1)]
    for path in candidates:
        if path and os.access(path, os.X_OK) and (_version(path) or 0) >= MIN_LLVM:
            return path
    return None


def disassemble(data: bytes) -> str:
    """The ``llvm-objdump -d`` text of an AMD code object; DisassemblerMissing if no objdump fits.

    ValueError (one line) if objdump rejects the object.
    """
    objdump = find_objdump()
    if objdump is None:
        raise DisassemblerMissing(
            f"no llvm-objdump of LLVM >= {MIN_LLVM} found (on PATH or /usr/lib/llvm-*/bin): "
            "install one, e.g. `apt-get install llvm-22`")
    with tempfile.TemporaryDirectory(prefix="regsurvey-") as tmp:
        path = os.path.join(tmp, "kernel.hsaco")
        with open(path, "wb") as f:
            f.write(data)
        limit = tool_time_limit(len(data))
        try:
            done = subprocess.run([objdump, "-d", path], capture_output=True, text=True, errors="replace",
                                  timeout=limit, check=False)
        except subprocess.TimeoutExpired:
            raise ValueError(f"llvm-objdump did not finish within {limit:.0f} s (a damaged object?)") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        message = lines[0].replace(path, "the object") if lines else f"exit status {done.returncode}"
        raise ValueError(f"llvm-objdump rejected the object: {message}")
    return done.stdout


def _dir_version(path: str) -> int:
    m = re.search(r"llvm-(\d+)", path)
    return int(m[1]) if m else 0


def _version(path: str) -> int | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"LLVM version (\d+)", out)
    return int(m[1]) if m else None
