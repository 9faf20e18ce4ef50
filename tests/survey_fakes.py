"""Stand-in worker main loops for the scheduler's tests (:mod:`tests.engine.test_survey_pool`).

They speak the worker protocol of :func:`regsurvey.engine.worker.serve` (:mod:`regsurvey.engine.protocol`)
but compile nothing, so that the parent's handling of a worker that dies or falls silent with keys in
flight can be driven exactly. A key's kind says what the fake does with it:

- ``ok``: KeyCompiled, then the rows (KeyFinished);
- ``finish_once``: KeyCompiled, then silence the first time it is seen (a marker file in ``objects_dir``
  remembers), the rows the next time;
- ``never_finishes``: KeyCompiled, then silence;
- ``dies``: the process exits with status 7 before saying anything.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from regsurvey.engine.protocol import KeyCompiled, KeyFinished
from regsurvey.model.keys import Key
from regsurvey.model.results import Row


def _row(key: Key) -> Row:
    return Row(key=key.id, kind=key.kind, axes={}, target=key.target, kernel="k", status="ok")


def serve(conn: Any, root: str, keys_dir: str, objects_dir: str, triton_cache_dir: str | None = None,
          environ: dict[str, str] | None = None, target: str | None = None) -> None:
    seen = Path(objects_dir)
    seen.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        key = request.key
        if key.kind == "dies":
            os._exit(7)
        conn.send(KeyCompiled(key))
        marker = seen / key.id.replace("/", "_")
        if key.kind == "never_finishes" or (key.kind == "finish_once" and not marker.exists()):
            marker.touch()
            continue
        conn.send(KeyFinished(key, (_row(key),), timing={"compile_s": 0.01}))
