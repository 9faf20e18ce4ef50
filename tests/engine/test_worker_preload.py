"""engine/worker_preload.py: what the worker forkserver (and the warm server) import once, so that every
worker forked from it starts with torch, Triton, regsurvey's readers and Triton's backends loaded, with
Ctrl-C left to the survey's own process and no thread started (a fork keeps only the calling thread).
Imported in a process of its own: in the test process it would ignore Ctrl-C."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, signal, sys, threading
import regsurvey.engine.worker_preload
print(json.dumps({
    "modules": sorted(m for m in ("torch", "triton", "regsurvey.engine.worker", "regsurvey.linting",
                                  "regsurvey.objects.amd_object", "regsurvey.objects.nvidia_object",
                                  "triton.backends.amd.compiler", "triton.backends.nvidia.compiler")
                      if m in sys.modules),
    "sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
    "threads": threading.active_count(),
}))
"""


def test_a_preloaded_process_holds_what_workers_need_and_no_thread() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=300)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {
        "modules": ["regsurvey.engine.worker", "regsurvey.linting", "regsurvey.objects.amd_object",
                    "regsurvey.objects.nvidia_object", "torch", "triton", "triton.backends.amd.compiler",
                    "triton.backends.nvidia.compiler"],
        "sigint_ignored": True,
        "threads": 1,
    }
