"""Surveys on a Ray cluster whose nodes are hosts on a network (tests/engine/hosts.py: network namespaces,
each node with a /tmp and a home of its own), not processes on loopback sharing this machine's files: the
survey runs on the head, which has no CPU for actors, so every key is compiled on a host that sees neither
the checkout nor the store, and everything comes back over the network. Then a host cut off the network
mid-survey, as a machine whose link fails.

Skipped where hosts cannot be made (not root, no iproute2) or ray is not installed.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

pytest.importorskip("ray")

from regsurvey.store.objectstore import ObjectStore  # noqa: E402

from ..conftest import privileged_or_skip  # noqa: E402
from .hosts import Hosts, unavailable  # noqa: E402
from .test_ray import by_build  # noqa: E402

why_not = unavailable()


@pytest.fixture(autouse=True, scope="module")
def _privileged() -> None:
    privileged_or_skip(why_not)


# The head notices a host that stops answering within about 2 s (Ray's defaults: about 30 s).
FAST_HEALTH_CHECKS = {"RAY_health_check_initial_delay_ms": "1000", "RAY_health_check_period_ms": "500",
                      "RAY_health_check_timeout_ms": "500", "RAY_health_check_failure_threshold": "3"}


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    """The head (host 0) and two hosts of one CPU (1 and 2)."""
    h = Hosts(tmp_path_factory.mktemp("hosts"))
    try:
        h.start_head(FAST_HEALTH_CHECKS)
        h.add_node(1)
        h.add_node(2)
        h.wait_for_nodes(3)
        yield h
    finally:
        h.close()


def without_objects(survey: dict[str, Any]) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {build: (status, resources, triton_hash, lint, config)
            for build, (status, resources, triton_hash, _, lint, config) in by_build(survey).items()}


def code_sections(data: bytes) -> dict[str, bytes]:
    """An object's machine code: its ``.text`` sections, by name."""
    elf = ELFFile(io.BytesIO(data))
    return {s.name: s.data() for s in elf.iter_sections() if s.name.startswith(".text")}


def on_head(hosts: Hosts, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """regsurvey run on the head host, from ``repo``."""
    return subprocess.run(hosts.command(0, [sys.executable, "-m", "regsurvey", *args]), cwd=repo,
                          capture_output=True, text=True, timeout=300)


def test_a_survey_on_two_hosts_matches_a_local_one(toy_repo: Path, hosts: Hosts, tmp_path: Path) -> None:
    on_ray = on_head(hosts, toy_repo, "run", "--commit", "HEAD", "--ray", hosts.address, "--store",
                     str(tmp_path / "ray"), "--format", "json", "-q")
    assert on_ray.returncode == 0, on_ray.stderr
    local = subprocess.run([sys.executable, "-m", "regsurvey", "run", "--commit", "HEAD", "--store",
                            str(tmp_path / "local"), "--format", "json", "-q"], cwd=toy_repo, capture_output=True,
                           text=True, timeout=300)
    assert local.returncode == 0, local.stderr
    remote_survey, local_survey = json.loads(on_ray.stdout), json.loads(local.stdout)
    timing = remote_survey["timing"]
    assert timing["ray_nodes"] == 2  # both hosts compiled; the head has no CPU for actors
    assert len(local_survey["rows"]) == 12
    # The same builds, figures, Triton hashes and lint findings.
    assert without_objects(remote_survey) == without_objects(local_survey)
    # Every object and the texts beside it came over the network into the store on the head, with the same
    # machine code as the local build's. (Not the same bytes: an object's debug sections record the path of
    # the checkout it was compiled from, a directory of the host's here, and the hosts have Triton caches of
    # their own.)
    remote_objects = ObjectStore(tmp_path / "ray" / "objects")
    local_objects = ObjectStore(tmp_path / "local" / "objects")
    local_rows = {(r["key"], r["target"], r["launch"]): r for r in local_survey["rows"]}
    for row in remote_survey["rows"]:
        ref, local_ref = row["object"], local_rows[(row["key"], row["target"], row["launch"])]["object"]
        code = code_sections(remote_objects.get(ref["path"], ref["sha256"]))
        assert code and code == code_sections(local_objects.get(local_ref["path"], local_ref["sha256"]))
        assert remote_objects.text(ref["path"], "amdgcn" if row["target"] == "gfx950" else "ptx")
    # Each host's own /tmp holds only Ray's files (and what it runs with, when that is under /tmp): the
    # actors removed their directories when the survey ended, and the store they shared on the host.
    for i in (1, 2):
        assert set(hosts.private_tmp(i)) <= {"home", "ray", *hosts.kept}, hosts.private_tmp(i)


SURVEY = textwrap.dedent('''
    """Survey on the hosts, three keys in flight at a time; print the rows and the timing as JSON."""
    import json, sys
    from pathlib import Path

    from regsurvey.engine.survey import survey_checkout
    from regsurvey.model.options import SurveyOptions
    from regsurvey.model.progress import Progress
    from regsurvey.repo.checkout import working_tree

    address, repo, store = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    survey = survey_checkout(working_tree(repo), store / "objects", SurveyOptions(ray_address=address, jobs=3,
                             timeout=240), Progress())
    print(json.dumps({"rows": [[r.row_id, r.ok, r.error, r.object.path if r.object else None,
                                r.object.sha256 if r.object else None] for r in survey.rows],
                      "timing": survey.timing}))
''')


def test_a_host_cut_off_mid_survey_loses_no_key(toy_repo: Path, hosts: Hosts, tmp_path: Path) -> None:
    """Host 3 joins, and loses its link once its actor has keys (or is listing them): the head declares it
    dead, what it held is surveyed again on hosts 1 and 2, and every row is a build with its object."""
    hosts.add_node(3)
    hosts.wait_for_nodes(4)
    script = tmp_path / "survey.py"
    script.write_text(SURVEY)
    driver = subprocess.Popen(hosts.command(0, [sys.executable, str(script), hosts.address, str(toy_repo),
                                                str(tmp_path / "store")]), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # The actor made its directory on host 3: the survey sent it its first keys with it.
        while not any(name.startswith("regsurvey-ray-") for name in hosts.private_tmp(3)):
            assert driver.poll() is None and time.monotonic() < deadline, "host 3 never had an actor"
            time.sleep(0.1)
        subprocess.run(hosts.cut(3), check=True, timeout=30)
        out, err = driver.communicate(timeout=400)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, err[-3000:]
    survey = json.loads(out.strip().splitlines()[-1])
    rows, timing = survey["rows"], survey["timing"]
    assert len(rows) == 12
    assert all(ok for _, ok, _, _, _ in rows), [(r, e) for r, ok, e, _, _ in rows if not ok]
    # What host 3 held was surveyed again on the others: its keys, or the listing of the keys (the first
    # actor, which may be host 3's).
    assert timing["ray_rescheduled"] >= 1
    assert "its keys are surveyed again" in err or "importing the keys files was lost" in err, err
    objects = ObjectStore(tmp_path / "store" / "objects")
    for _, _, _, path, sha in rows:
        assert objects.get(path, sha)
