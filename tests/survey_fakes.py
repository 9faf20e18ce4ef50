"""Stand-in worker main loops for the scheduler's tests (:mod:`tests.engine.test_transport_local`).

They speak the worker protocol of :func:`regsurvey.engine.worker.serve` (:mod:`regsurvey.engine.protocol`)
but compile nothing, so that the parent's handling of a worker that dies or falls silent with keys in
flight can be driven exactly. A key's kind says what the fake does with it:

- ``ok``: KeyCompiled, then the rows (KeyFinished);
- ``finish_once``: KeyCompiled, then silence the first time it is seen (a marker file in ``objects_dir``
  remembers), the rows the next time;
- ``never_finishes``: KeyCompiled, then silence;
- ``dies``: the process exits with status 7 before saying anything;
- ``shared``: a key of two launches (KeyCaptured). Its first copy waits for a second (an idle worker
  helping) for up to 20 s and says it compiled launch 0 and reused launch 1; the second copy says the
  opposite;
- ``helper_dies``: as ``shared``, but the second copy exits with status 7, and the first then finishes;
- ``slow``: as ``ok``, after 3 s of "compiling".
- ``long_tail``: a key of six launches whose first copy takes 1.5 s and whose helpers finish at once (each
  reads what the first compiles); every copy is noted, a line each, in ``long_tail-copies``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from regsurvey.engine.protocol import KeyCaptured, KeyCompiled, KeyFinished
from regsurvey.model.keys import Key
from regsurvey.model.results import Row


def _row(key: Key) -> Row:
    return Row(key=key.id, kind=key.kind, axes={}, target=key.target, kernel="k", status="ok")


def _launch_rows(key: Key, compiled: int, launches: int = 2) -> tuple[Row, ...]:
    """The launches' rows, launch ``compiled`` compiled here and the others reused."""
    return tuple(Row(key=key.id, kind=key.kind, axes={}, target=key.target, kernel="k", status="ok", launch=i,
                     triton_hash=f"h{i}", reused=i != compiled, compile_s=1.0 + i) for i in range(launches))


def _copy(key: Key, seen: Path, conn: Any) -> bool:
    """For ``shared`` and ``helper_dies``: True in the key's first copy (after waiting for the second)."""
    conn.send(KeyCaptured(key, 2))
    first, second = seen / f"{key.kind}-first", seen / f"{key.kind}-second"
    if first.exists():
        second.touch()
        return False
    first.touch()
    deadline = time.monotonic() + 20
    while not second.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the second copy finishes (or dies) first
    return True


def serve(conn: Any, root: str, keys_dir: str, objects_dir: str, triton_cache_dir: str | None = None,
          environ: dict[str, str] | None = None, target: str | None = None, survey: int | None = None) -> None:
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
        if key.kind in ("shared", "helper_dies"):
            first = _copy(key, seen, conn)
            if not first and key.kind == "helper_dies":
                os._exit(7)
            conn.send(KeyCompiled(key))
            conn.send(KeyFinished(key, _launch_rows(key, 0 if first else 1), timing={"compile_s": 1.0}))
            continue
        if key.kind == "long_tail":
            conn.send(KeyCaptured(key, 6))
            with (seen / "long_tail-copies").open("a") as copies:
                first = copies.tell() == 0
                copies.write(f"{os.getpid()}\n")
            if first:
                time.sleep(1.5)
            conn.send(KeyCompiled(key))
            conn.send(KeyFinished(key, _launch_rows(key, 0 if first else 1, 6), timing={"compile_s": 1.0}))
            continue
        if key.kind == "slow":
            time.sleep(3)
        conn.send(KeyCompiled(key))
        marker = seen / key.id.replace("/", "_")
        if key.kind == "never_finishes" or (key.kind == "finish_once" and not marker.exists()):
            marker.touch()
            continue
        conn.send(KeyFinished(key, (_row(key),), timing={"compile_s": 0.01}))
