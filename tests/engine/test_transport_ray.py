"""The one scheduler through the Ray transport (engine/transport_ray.py), on a local Ray of two CPUs whose actors
are stand-ins: they compile nothing, so that a key that hangs, an actor that dies with calls in flight and the
answers' storing can be driven exactly, in seconds. (tests/engine/test_ray.py surveys real keys on a cluster of
two nodes.)

Skipped when ray (the ``ray`` extra) is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from regsurvey.engine.survey import surveyed  # noqa: E402
from regsurvey.engine.transport_ray import RayPool  # noqa: E402
from regsurvey.model.keys import Key  # noqa: E402
from regsurvey.model.options import SurveyOptions  # noqa: E402
from regsurvey.model.progress import Progress  # noqa: E402
from regsurvey.repo.checkout import Checkout  # noqa: E402

KINDS = ["ok", "ok", "dies", "ok", "hang", "ok", "ok"]


def stand_in_actor(gate: str) -> type:
    """The actor class: a key of kind ``hang`` never answers; one of kind ``dies`` ends its actor's process the
    first time (``gate`` remembers), and is answered the next; any other is answered at once. (Defined in a
    function: Ray sends it by value, and the actors need not import the tests.)"""
    import os
    import time

    from regsurvey.engine.protocol import KeyFinished, KeysListed, ToolchainInfo
    from regsurvey.engine.ray_actor import KeyShipped
    from regsurvey.model.results import Row

    class StandIn:
        def __init__(self, tree: Any, target: str, *args: Any) -> None:
            self.target = target
            self.node = ray.get_runtime_context().get_node_id()

        def list_keys(self, targets: Any) -> KeysListed:
            keys = tuple(Key(kind=kind, axes=(("n", i),), target="sm90", id=f"{kind}/n{i}")
                         for i, kind in enumerate(KINDS))
            return KeysListed(keys, self.target)

        def toolchain(self, backend: str) -> ToolchainInfo:
            return ToolchainInfo({"backend": backend})

        def survey(self, key: Key, reuse: bool, captured: object = None) -> KeyShipped:
            if key.kind == "hang":
                time.sleep(3600)
            if key.kind == "dies" and not os.path.exists(gate):
                open(gate, "w").close()
                os._exit(1)
            row = Row(key=key.id, kind=key.kind, axes=key.axes_dict, target=key.target, kernel="k", status="ok",
                      compile_s=0.5)
            return KeyShipped(KeyFinished(key, (row,), timing={"compile_s": 0.5}), seconds=0.01, node=self.node)

        def ship(self, wanted: Any) -> tuple[()]:
            return ()

        def close(self) -> None:
            pass

    return StandIn


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    # A Ray of its own ("local"): not whatever cluster this machine already runs, which a bare init would join.
    ray.init(address="local", num_cpus=2, log_to_driver=False, logging_level="ERROR", include_dashboard=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_keys_time_out_and_lost_actors_keys_go_again_on_ray(local_ray: None, tmp_path: Path,
                                                            capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "repo" / "keys").mkdir(parents=True)
    checkout = Checkout(root=tmp_path / "repo", repo=tmp_path / "repo", commit=None, label="stand-ins", dirty=False)
    options = SurveyOptions(ray_address="local", targets=("sm90",), timeout=8)
    actor_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(stand_in_actor(str(tmp_path / "died")))
    finished: list[str] = []
    pool = RayPool(ray, b"", tmp_path / "store" / "objects", options, {}, actor_class)
    survey = surveyed(pool, checkout, tmp_path / "store" / "objects", options,
                      Progress(on_key=lambda key, _: finished.append(key.id)))
    rows = {r.key: r for r in survey.rows}
    assert list(rows) == [f"{kind}/n{i}" for i, kind in enumerate(KINDS)]  # the keys files' order
    assert rows["hang/n4"].error == "timed out after 8 s (--timeout)" and rows["hang/n4"].transient
    assert all(r.ok for key, r in rows.items() if key != "hang/n4"), rows  # dies/n2 too: it went again
    assert sorted(finished) == sorted(rows)
    timing = survey.timing
    assert timing["ray_rescheduled"] >= 1  # the keys of the actor that died
    assert timing["ray_calls"] == len(KINDS) - 1  # each answered once (the hung and lost calls are not answers)
    assert timing["jobs"] == 2 and timing["compile_s"] == 0.5 * (len(KINDS) - 1)
    assert "regsurvey: warning: Ray actor lost (" in capfd.readouterr().err
