"""A process of its own that compiles one AMD build's LLVM IR again with LLVM command-line options
(``regsurvey fix``'s LLVM-option variants): LLVM's options are its process's, so no other compile runs
beside it.

Reads ``{"llir", "arch", "flags", "fp_fusion"}`` as JSON on stdin; writes ``{"hsaco": base64, "amdgcn",
"seconds"}``, or ``{"error": one line}``, as JSON on stdout (exit status 0 either way).
"""

from __future__ import annotations

import base64
import json
import sys
import time


def main() -> None:
    request = json.loads(sys.stdin.read())
    started = time.perf_counter()
    try:
        from .toolchain import recompile_llir

        hsaco, assembly = recompile_llir(request["llir"], request["arch"], list(request["flags"]),
                                         bool(request["fp_fusion"]))
    except Exception as exc:  # the compiler's own failure is the variant's result
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        json.dump({"error": f"{type(exc).__name__}: {line}"}, sys.stdout)
        return
    json.dump({"hsaco": base64.b64encode(hsaco).decode("ascii"), "amdgcn": assembly,
               "seconds": round(time.perf_counter() - started, 3)}, sys.stdout)


if __name__ == "__main__":
    main()
