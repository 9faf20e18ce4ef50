"""Which Triton release builds which target: the evidence behind ``compile/triton_facts.py``'s
``FIRST_BUILDING_RELEASE`` (issue 39).

Each interpreter given (a virtual environment's ``bin/python`` with a Triton of its own; torch is not needed)
compiles one small kernel (an elementwise add) for every target regsurvey knows, offline, and says per target
whether it built and, where not, the line of the error that says why; also what LLVM printed of a processor it
does not know ("... is not a recognized processor for this target (ignoring processor)"), which LLVM prints and
goes on. With regsurvey importable there (Triton 3.5 on), the probe a survey runs first
(``compile.toolchain.cannot_build``) answers beside each.

    python benchmarks/first_triton.py .venv/bin/python /tmp/venv3.5.1/bin/python /tmp/venv3.4.0/bin/python ...

A Triton before 3.5 links AMD objects with ROCm's ``ld.lld``: where ROCm is not installed, name any LLVM's
``ld.lld`` in ``TRITON_HIP_LLD_PATH``. Found so (PyPI wheels, Linux x86-64, Python 3.11): 3.0.0 builds gfx942,
gfx1100, gfx1151, gfx1201 and sm90; gfx950 from 3.2.0 (3.1.0: "unsupported target: 'gfx950'"); sm100 and sm120
from 3.3.0 (3.2.0's ptxas, CUDA 12.4: "Value 'sm_100' is not defined for option 'gpu-name'"); gfx1250 from 3.6.0
(3.5.1: "unsupported target: 'gfx1250'"); sm103 from 3.6.0 (3.5.1's ptxas, CUDA 12.8: "Value 'sm_103a' is not
defined for option 'gpu-name'"). 3.6.0 to 3.9.0 build every target.

A benchmark, not a test: it prints what it finds and asserts nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in the other interpreter, from a file: argv[1] is regsurvey's directory, argv[2] the targets as JSON
# ({name: [backend, arch, warp size]}); the last line of stdout is the answer.
COMPILE_EACH = r'''
import json, os, re, sys, tempfile
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def source():
    if tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 2):  # names, and constexprs in the signature
        signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
        return ASTSource(add_kernel, signature, {"BLOCK": 256})
    return ASTSource(add_kernel, {0: "*fp32", 1: "*fp32", 2: "*fp32", 3: "i32"}, {4: 256})

probe = None
try:
    sys.path.insert(0, sys.argv[1])
    from regsurvey.compile.toolchain import cannot_build
    from regsurvey.model.targets import TARGETS
    probe = lambda name: cannot_build(TARGETS[name])
except BaseException:
    pass
found = {}
for name, (backend, arch, warp) in json.loads(sys.argv[2]).items():
    with tempfile.TemporaryFile() as said:
        saved = os.dup(2)
        os.dup2(said.fileno(), 2)
        try:
            try:
                kernel = triton.compile(source(), target=GPUTarget(backend, arch, warp))
                error = None
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        said.seek(0)
        printed = said.read().decode(errors="replace")
    why = None
    if error is not None:
        lines = [line.strip() for line in (printed + "\n" + error).splitlines()]
        why = next((line for line in lines if re.search(r"unsupported target|not defined for option|fatal|"
                                                         r"LLVM ERROR|not found", line)), error.splitlines()[0])
    unknown = re.search(r"'([^']+)' is not a recognized processor", printed)
    found[name] = {"built": error is None, "why": why, "llvm_unknown": unknown[1] if unknown else None,
                   "probe": probe(name) if probe else "(regsurvey does not import here)"}
print(json.dumps({"triton": triton.__version__, "found": found}))
'''


def targets() -> dict[str, tuple[str, str | int, int]]:
    """regsurvey's targets as Triton's GPUTarget takes them."""
    sys.path.insert(0, str(ROOT))
    from regsurvey.model.targets import TARGETS

    return {t.name: (t.backend, t.arch, t.warp_size) for t in TARGETS.values()}


def main() -> None:
    wanted = targets()
    for python in sys.argv[1:]:
        # A file of its own (Triton reads a jit function's source from its file) and a Triton cache of its own:
        # every kernel compiled, none read back.
        with tempfile.TemporaryDirectory(prefix="first-triton-") as scratch:
            script = Path(scratch) / "compile_each.py"
            script.write_text(COMPILE_EACH)
            done = subprocess.run([python, str(script), str(ROOT), json.dumps(wanted)], capture_output=True,
                                  text=True, timeout=1800, env={**os.environ, "TRITON_CACHE_DIR": f"{scratch}/cache"})
        if done.returncode != 0 or not done.stdout.strip():
            print(f"{python}: did not answer ({done.stderr.strip().splitlines()[-1:]})")
            continue
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"Triton {answer['triton']} ({python})")
        for name, it in answer["found"].items():
            said = "builds" if it["built"] else f"fails: {it['why']}"
            if it["llvm_unknown"]:
                said += f" (LLVM: {it['llvm_unknown']!r} is not a recognized processor)"
            print(f"  {name:8} {said}\n  {'':8} probe: {it['probe'] or 'no refusal'}")


if __name__ == "__main__":
    main()
