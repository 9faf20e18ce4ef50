"""What noting a kind body's reads costs (issue 37, item 2: ``engine.key_reads``), on a Python-heavy body
(torch's meta-tensor dispatch and JSON, the kind of code launchers run), measured side by side in one run:
the body alone, and under the recorder with ``sys.monitoring`` (Python 3.12+, each code object's event
turned off once seen, restarted per key) and with ``sys.settrace`` (call events only).

    python benchmarks/key_reads_cost.py [--repeat 20]

A benchmark, not a test: it prints figures (the mean of the faster half of the repeats) and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from regsurvey.engine.key_reads import Recorder  # noqa: E402


def body() -> None:
    import torch

    x = torch.empty((256, 512), device="meta", dtype=torch.bfloat16)
    for _ in range(200):
        y = (x @ x.T).float().softmax(-1).to(torch.bfloat16)
        torch.cat([y, y], dim=0).view(-1, 256).sum(0)
    for _ in range(300):
        json.loads(json.dumps({"a": list(range(50)), "b": {"c": [1, 2, 3]}}))


def timed(run: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    faster = sorted(times)[: max(1, repeat // 2)]
    return sum(faster) / len(faster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="regsurvey-reads-")
    modes: dict[str, Callable[[], None]] = {"body alone": body}
    for name, monitoring in (("sys.monitoring", True), ("sys.settrace", False)):
        if name == "sys.monitoring" and not hasattr(sys, "monitoring"):
            continue
        recorder = Recorder(root, monitoring=monitoring)

        def recorded(recorder: Recorder = recorder) -> None:
            with recorder.recording():
                body()

        modes[f"recorded, {name}"] = recorded
    body()  # imports, first-call caches
    print(f"Python {sys.version.split()[0]}, {args.repeat} repeats, each mode twice, interleaved")
    alone = None
    for _ in range(2):
        for name, run in modes.items():
            seconds = timed(run, args.repeat)
            alone = seconds if name == "body alone" else alone
            print(f"  {name:<28} {seconds * 1000:7.1f} ms  ({seconds / alone:.2f}x the body alone)")


if __name__ == "__main__":
    main()
