"""Surveys on a Ray cluster (engine/ray_executor.py): a local cluster of two nodes on this host (each node's
processes with a temporary directory of their own), the toy project surveyed on it through the CLI and
compared with a local survey of the same commit; a node removed while its keys are in flight.

Skipped when ray (the ``ray`` extra) is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from regsurvey.engine.survey import survey_checkout  # noqa: E402
from regsurvey.model.options import SurveyOptions  # noqa: E402
from regsurvey.model.progress import Progress  # noqa: E402
from regsurvey.model.results import Survey  # noqa: E402
from regsurvey.repo.checkout import working_tree  # noqa: E402
from regsurvey.store.objectstore import ObjectStore  # noqa: E402

from ..conftest import commit_all, git  # noqa: E402


def node(directory: Path) -> dict[str, Any]:
    """A node of one CPU on this host, whose processes (the actors among them) make their temporary files in
    ``directory``. (On this host's address: a cluster pinned to 127.0.0.1 leaves a driver started in
    another process, the CLI's, waiting in ``ray.init`` with Ray 2.60.)"""
    return {"num_cpus": 1, "env_vars": {"TMPDIR": str(directory)}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, list[Path]]]:
    """A head node and a second node, one CPU each (so one actor each), on loopback."""
    from ray.cluster_utils import Cluster

    dirs = [tmp_path_factory.mktemp("head-node"), tmp_path_factory.mktemp("second-node")]
    c = Cluster(initialize_head=True, head_node_args=node(dirs[0]))
    c.add_node(**node(dirs[1]))
    c.wait_for_nodes()
    try:
        yield c, dirs
    finally:
        ray.shutdown()
        c.shutdown()


def regsurvey(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=repo, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "REGSURVEY_RAY": ""})


def by_build(survey: dict[str, Any]) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {(r["key"], r["target"], r["launch"]): (r["status"], r["resources"], r["triton_hash"], r["object"],
                                                   r["lint"], r["build"]) for r in survey["rows"]}


def left_on(node_dirs: list[Path]) -> list[Path]:
    """What a survey's actors left on the nodes: their checkouts, the stores they shared."""
    return [p for d in node_dirs for p in [*d.glob("regsurvey-ray-*"), *d.glob("regsurvey-node-*")]]


def survey_on(c: Any, repo: Path, objects: Path, options: SurveyOptions, progress: Progress | None = None) -> Survey:
    """``repo``'s working tree surveyed on the cluster ``c`` from this process."""
    ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
    try:
        return survey_checkout(working_tree(repo), objects, options, progress or Progress())
    finally:
        ray.shutdown()


def test_a_survey_on_two_nodes_matches_a_local_one(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                   tmp_path: Path) -> None:
    c, node_dirs = cluster
    on_ray = regsurvey(toy_repo, "run", "--commit", "HEAD", "--ray", c.address, "--store", str(tmp_path / "ray"),
                       "--format", "json", "-q")
    assert on_ray.returncode == 0, on_ray.stderr
    local = regsurvey(toy_repo, "run", "--commit", "HEAD", "--store", str(tmp_path / "local"), "--format", "json",
                      "-q")
    assert local.returncode == 0, local.stderr
    remote_survey, local_survey = json.loads(on_ray.stdout), json.loads(local.stdout)
    timing = remote_survey["timing"]
    print(f"\nRay: {timing['ray_calls']:.0f} calls on {timing['ray_nodes']:.0f} nodes in {timing['wall_s']:.1f} s "
          f"(local: {local_survey['timing']['wall_s']:.1f} s); overhead per build "
          f"{timing.get('ray_overhead_per_build_ms', float('nan')):.1f} ms")
    assert timing["ray_nodes"] == 2  # both nodes compiled
    assert len(local_survey["rows"]) == 12
    # A call per key, and one per copy an idle actor took of a key running long (then a shared key).
    assert timing["ray_calls"] == 12 or (timing["ray_calls"] > 12 and timing["keys_shared"] >= 1)
    # The same builds, figures, Triton hashes, objects (by content) and lint findings.
    assert by_build(remote_survey) == by_build(local_survey)
    assert all(r["status"] == "ok" for r in remote_survey["rows"])
    # The objects and the texts beside them came back into the local store.
    objects = ObjectStore(tmp_path / "ray" / "objects")
    for row in remote_survey["rows"]:
        ref = row["object"]
        assert objects.get(ref["path"], ref["sha256"])
        assert objects.text(ref["path"], "amdgcn" if row["target"] == "gfx950" else "ptx")
        if row["target"] == "gfx950":
            assert objects.text(ref["path"], "pressure")  # kept by the actor's finishing step
    # Reports read them as a local survey's: the lint of the stored survey, explain from its objects.
    lint = regsurvey(toy_repo, "lint", "--commit", "HEAD", "--store", str(tmp_path / "ray"), "-q")
    assert lint.returncode == 0, lint.stdout + lint.stderr
    explained = regsurvey(toy_repo, "explain", "gemm/w2", "--commit", "HEAD", "-t", "gfx950", "--store",
                          str(tmp_path / "ray"), "-q", "--format", "json")
    assert explained.returncode == 0, explained.stderr
    gemm = next(r for r in remote_survey["rows"] if r["key"] == "gemm/w2" and r["target"] == "gfx950")
    assert str(gemm["resources"]["vgpr"]) in explained.stdout
    # The actors removed their directories on the nodes when the survey ended, and the store they shared on
    # each node.
    assert not left_on(node_dirs)


def test_what_a_library_says_once_per_process_is_the_surveys_on_ray_too(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                                        tmp_path: Path) -> None:
    """Each actor says the config line once (its checkout in a directory of its own, named relative to it):
    the survey holds it once, as a local survey does, and no row does."""
    from ..commands.test_cli_run import ONCE_KEYS, ONCE_LIBRARY

    c, _ = cluster
    (toy_repo / "toykernels" / "oncelib.py").write_text(ONCE_LIBRARY)
    (toy_repo / "keys" / "zz_once.py").write_text(ONCE_KEYS)
    commit_all(toy_repo, "a launcher that says things once per process")
    surveys = [regsurvey(toy_repo, "run", "--commit", "HEAD", "--kind", "once", *where, "--store", str(tmp_path / name),
                         "--format", "json", "-q") for name, where in (("ray", ("--ray", c.address)), ("local", ()))]
    assert all(s.returncode == 0 for s in surveys), [s.stderr for s in surveys]
    on_ray, local = (json.loads(s.stdout) for s in surveys)
    assert on_ray["said_once"] == local["said_once"] and len(local["said_once"]) == 2
    assert "Using configuration from toykernels/configs/N=4096,device=toy.json" in local["said_once"][0]["text"]
    assert [r["messages"] for r in on_ray["rows"]] == [r["messages"] for r in local["rows"]]
    assert not any("Using configuration" in m for r in on_ray["rows"] for m in r["messages"])


def test_two_nodes_share_a_key_of_many_launches(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                 tmp_path: Path) -> None:
    """One key of twelve builds on two nodes of one CPU: the idle node's actor takes a copy, and through the
    survey's build claims the two nodes compile each build once between them, each taking the other's
    results; every object comes back, with the answer of the node that compiled it."""
    from collections import Counter

    from ..conftest import commit_all
    from .test_ray_sharing import MANY_LAUNCHES_KEYS

    c, node_dirs = cluster
    (toy_repo / "keys" / "toy.py").write_text(MANY_LAUNCHES_KEYS)
    commit_all(toy_repo, "one key, twelve builds")
    options = SurveyOptions(ray_address=c.address, triton_cache_dir=str(tmp_path / "triton"))
    survey = survey_on(c, toy_repo, tmp_path / "ray" / "objects", options)
    rows = survey.rows
    assert [r.launch for r in rows] == list(range(12)) and all(r.ok for r in rows)
    assert not any(r.reused for r in rows)  # each row is its compile's, wherever it ran
    assert Counter(r.triton_hash for r in rows) == Counter(dict.fromkeys((r.triton_hash for r in rows), 1))
    timing = survey.timing
    assert timing["ray_nodes"] == 2 and timing["ray_calls"] == 2  # the key and its copy, one on each node
    assert timing["keys_shared"] == 1 and 1 <= timing["launches_shared"] <= 11
    assert timing["ray_builds_across_nodes"] >= 1  # a node took another's build rather than compile it
    objects = ObjectStore(tmp_path / "ray" / "objects")
    for row in rows:
        assert row.object is not None and objects.get(row.object.path, row.object.sha256)
        assert objects.text(row.object.path, "ptx")
    assert not left_on(node_dirs)


def test_the_build_claims_live_on_the_surveys_own_node(cluster: tuple[Any, list[Path]]) -> None:
    """The claims actor runs where the survey runs (no other node's loss takes the claims with it), whichever
    node the cluster would otherwise pick."""
    from regsurvey.engine.ray_actor import claims_class

    c, _ = cluster
    ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
    try:
        here = ray.get_runtime_context().get_node_id()
        claims = [claims_class().remote() for _ in range(4)]
        nodes = ray.get([a.__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id())
                         for a in claims])
        for a in claims:
            ray.kill(a)
    finally:
        ray.shutdown()
    assert nodes == [here] * 4


def test_the_nodes_reuse_what_the_store_compiled_before(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                        tmp_path: Path) -> None:
    """A commit that changes one kind, surveyed on the cluster with a store that surveyed its parent
    locally: the nodes compile only that kind's kernels; the rest are the store's results, their objects
    read here (not sent back), their figures as the parent's."""

    c, _ = cluster
    store = tmp_path / "store"
    parent = regsurvey(toy_repo, "run", "--commit", "HEAD", "--store", str(store), "--format", "json", "-q")
    assert parent.returncode == 0, parent.stderr
    ops = toy_repo / "toykernels" / "ops.py"
    ops.write_text(ops.read_text().replace("block_n: int = 64", "block_n: int = 128"))
    commit_all(toy_repo, "bigger gemm tile")
    out = regsurvey(toy_repo, "run", "--commit", "HEAD", "--ray", c.address, "--store", str(store), "--format",
                    "json", "-q")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    before = {(r["key"], r["target"]): r for r in json.loads(parent.stdout)["rows"]}
    assert all(r["status"] == "ok" for r in rows)
    scale = [r for r in rows if r["kind"] == "scale"]
    gemm = [r for r in rows if r["kind"] == "gemm"]
    assert scale and all(r["reused"] for r in scale)
    assert all(r["object"] == before[(r["key"], r["target"])]["object"] and
               r["resources"] == before[(r["key"], r["target"])]["resources"] for r in scale)
    assert gemm and {r["triton_hash"] for r in gemm}.isdisjoint({r["triton_hash"] for r in before.values()})
    assert any(not r["reused"] for r in gemm)  # compiled on the nodes, its objects sent back
    objects = ObjectStore(store / "objects")
    for r in rows:
        assert objects.get(r["object"]["path"], r["object"]["sha256"])


@pytest.mark.slow  # the default run has tests/engine/test_ray_hosts.py's host cut off mid-survey
def test_a_node_removed_mid_survey_loses_no_key(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                              tmp_path: Path) -> None:
    c, _ = cluster
    third_dir = tmp_path / "third-node"
    third_dir.mkdir()
    third = c.add_node(**node(third_dir))
    c.wait_for_nodes()
    removed: list[int] = []

    def on_key(key: Any, rows: Any) -> None:
        if not removed:  # the first key is back: the third node's actor holds keys (or is still importing)
            removed.append(len(list(third_dir.glob("regsurvey-ray-*"))))
            c.remove_node(third)

    survey = survey_on(c, toy_repo, tmp_path / "store" / "objects",
                       SurveyOptions(ray_address=c.address, jobs=3, timeout=240), Progress(on_key=on_key))
    assert removed == [1]  # the third node had its actor
    assert len(survey.rows) == 12
    assert all(r.ok for r in survey.rows), [(r.row_id, r.error) for r in survey.rows if not r.ok]
    assert survey.timing["ray_rescheduled"] >= 1  # the third node's keys were surveyed again elsewhere
    objects = ObjectStore(tmp_path / "store" / "objects")
    for row in survey.rows:
        assert row.object is not None and objects.get(row.object.path, row.object.sha256)


HANG = '''"""A kind whose body never returns."""

import time

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[2])


@matrix.kind(axes=["width"])
def hang(width):
    time.sleep(3600)
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
'''


def cpus_held(wait_s: float = 15.0) -> float:
    """The cluster's CPUs still held (by actors left alive) once they have had ``wait_s`` to be freed."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        held = ray.cluster_resources().get("CPU", 0.0) - ray.available_resources().get("CPU", 0.0)
        if held == 0 or time.monotonic() > deadline:
            return held
        time.sleep(0.2)


def with_a_hanging_key(repo: Path) -> Path:
    """``repo``'s working tree with a keys file added (tracked, not committed: it travels to the cluster)."""
    (repo / "keys" / "hang.py").write_text(HANG)
    git(repo, "add", "keys/hang.py")
    return repo


def test_a_key_past_the_timeout_is_an_error_and_its_actor_replaced(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                                  tmp_path: Path) -> None:
    c, node_dirs = cluster
    ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
    try:
        survey = survey_checkout(working_tree(with_a_hanging_key(toy_repo)), tmp_path / "store" / "objects",
                                 SurveyOptions(ray_address=c.address, targets=("sm90",), kinds=("hang", "gemm"),
                                               timeout=12))
        held = cpus_held()
    finally:
        ray.shutdown()
    rows = {r.key: r for r in survey.rows}
    assert sorted(rows) == ["gemm/w2", "gemm/w8", "hang/width2"]
    assert rows["hang/width2"].error == "timed out after 12 s (--timeout)" and rows["hang/width2"].transient
    assert rows["gemm/w2"].ok and rows["gemm/w8"].ok
    assert held == 0  # the hung actor was killed, the others ended with the survey
    # What the killed actor left on its node (its checkout, its marker in the node's store) was removed: by
    # the survey's last actor there, or by a shipper at the end when none was left.
    assert not left_on(node_dirs)


LISTER_DIES = '''"""Keys whose first import kills its process: the actor that lists them."""

import os
from pathlib import Path

from toykernels import ops

import regsurvey as rs

GATE = Path({gate!r})
if not GATE.exists():
    GATE.touch()
    os._exit(3)

# Targets computed, not literal: no actor starts beside the one listing the keys (keyfiles.declared_targets).
matrix = rs.Matrix(targets=["sm" + "90"], width=[2, 8])


@matrix.kind(axes=["width"])
def scale(width):
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
'''


def test_the_actor_listing_the_keys_lost_is_replaced(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                      tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The only actor, importing the keys files to list them, dies (as on a node lost then): another lists
    them, and the survey goes on."""

    c, node_dirs = cluster
    (toy_repo / "keys" / "toy.py").write_text(LISTER_DIES.format(gate=str(tmp_path / "imported")))
    commit_all(toy_repo, "keys whose first import dies")
    survey = survey_on(c, toy_repo, tmp_path / "store" / "objects", SurveyOptions(ray_address=c.address))
    assert [r.key for r in survey.rows] == ["scale/width2", "scale/width8"] and all(r.ok for r in survey.rows)
    assert survey.timing["ray_rescheduled"] == 1
    assert "the Ray actor importing the keys files was lost" in capfd.readouterr().err
    assert not left_on(node_dirs)


SHARED_THEN_LOST = '''"""Two keys sharing a kernel (scale_rows): ``lost`` compiles it, then hangs on its gemm until the
survey's time-out kills its actor, so its answer, with the kernel's object, never comes; ``sharer`` waits for
that compile and takes its result through the survey's claims."""

import time
from pathlib import Path

import triton
from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[2])
GATE = Path({gate!r})
compiled_here = []  # this process compiled scale_rows


def hanging(src, *args, **kwargs):
    if src.name == "matmul" and compiled_here:
        time.sleep(3600)
    kernel = hanging.compile(src, *args, **kwargs)
    if src.name == "scale_rows":
        compiled_here.append(src.name)
        GATE.touch()
    return kernel


@matrix.kind(axes=["width"])
def lost(width):
    if not hasattr(triton.compile, "compile"):
        hanging.compile, triton.compile = triton.compile, hanging
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
    ops.gemm(rs.tensor((16, 512), "bf16"), rs.tensor((512, 1024), "bf16"))


@matrix.kind(axes=["width"])
def sharer(width):
    deadline = time.monotonic() + 120
    while not GATE.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
'''


def test_an_object_whose_nodes_answer_was_lost_is_fetched_at_the_end(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                                     tmp_path: Path) -> None:
    """A kernel compiled on one node and taken by another through the claims, whose compiling actor is then
    killed (a time-out) before it answers: the rows naming that object are held until the survey's end,
    when the node that compiled it (no actor of the survey alive there) sends it through a shipper. Every
    row but the hung key's is a build with its object here; nothing is left on the nodes."""

    c, node_dirs = cluster
    (toy_repo / "keys" / "toy.py").write_text(SHARED_THEN_LOST.format(gate=str(tmp_path / "compiled")))
    commit_all(toy_repo, "a shared kernel whose compiler hangs")
    survey = survey_on(c, toy_repo, tmp_path / "store" / "objects",
                       SurveyOptions(ray_address=c.address, timeout=20, triton_cache_dir=str(tmp_path / "triton")))
    rows = {(r.key, r.launch): r for r in survey.rows}
    assert rows[("lost/width2", 0)].error == "timed out after 20 s (--timeout)"
    shared = [r for r in survey.rows if r.ok and r.kernel == "scale_rows"]
    assert shared and all(r.key != "lost/width2" for r in shared), survey.rows
    assert survey.timing["ray_builds_across_nodes"] >= 1
    assert survey.timing["ray_objects_fetched_at_end"] >= 1
    objects = ObjectStore(tmp_path / "store" / "objects")
    for row in shared:
        assert row.object is not None and objects.get(row.object.path, row.object.sha256)
        assert objects.text(row.object.path, "ptx")
    assert not left_on(node_dirs)


@pytest.mark.slow
def test_ctrl_c_cancels_the_calls_and_keeps_what_finished(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                         tmp_path: Path) -> None:
    import signal
    import time

    c, _ = cluster
    store = tmp_path / "store"
    survey = subprocess.Popen([sys.executable, "-m", "regsurvey", "run", "--ray", c.address, "--store", str(store),
                               "-t", "sm90", "--kind", "hang", "--kind", "gemm", "-q"],
                              cwd=with_a_hanging_key(toy_repo), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 120
    while not list((store / "objects").glob("*/*.cubin")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list((store / "objects").glob("*/*.cubin")), "no key finished"
    time.sleep(1)
    survey.send_signal(signal.SIGINT)
    _, err = survey.communicate(timeout=60)
    assert survey.returncode == 130, err
    assert "regsurvey: interrupted" in err
    ray.init(address=c.address, log_to_driver=False, logging_level="ERROR")
    try:
        held = cpus_held()
    finally:
        ray.shutdown()
    assert held == 0  # every actor killed, the hung one too
    assert list((store / "results").glob("*/*.json"))  # the finished keys' results stayed


SEEING_KEYS = '''
import os
from pathlib import Path

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[2])


@matrix.kind(axes=["width"])
def sees(width):
    files = sorted(str(p) for p in Path(".").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    print("files:", " ".join(files))
    print("variables:", " ".join(sorted(n for n in os.environ if n.startswith(("REGSURVEY_", "TRITON_", "CI_")))))
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
'''


def test_the_cluster_gets_the_tracked_files_and_no_secret(toy_repo: Path, cluster: tuple[Any, list[Path]],
                                                          tmp_path: Path) -> None:
    """Every node got every untracked file of the working tree (a ``.env``, a key) and every REGSURVEY_
    variable (the GitLab token among them). Now: the tracked files (with their edits), the untracked ones
    --ray-include names, Triton's settings and the variables of regsurvey's a worker reads."""
    c, _ = cluster
    (toy_repo / "keys" / "sees.py").write_text(SEEING_KEYS)
    commit_all(toy_repo, "a kind body that says what it sees")
    (toy_repo / ".env").write_text("REGSURVEY_GITLAB_TOKEN=glpat-secret\n")
    (toy_repo / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (toy_repo / "notes").mkdir()
    (toy_repo / "notes" / "tuned.json").write_text("{}\n")
    secrets = {"REGSURVEY_GITLAB_TOKEN": "glpat-secret", "CI_JOB_TOKEN": "job-secret", "TRITON_API_TOKEN": "t",
               "REGSURVEY_RESULTS_KEY": "hmac-secret"}
    sent = {"TRITON_REGSURVEY_SETTING": "1", "REGSURVEY_MATERIALIZE": "meta"}
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "--ray", c.address, "--ray-include", "notes/*",
                          "--kind", "sees", "--store", str(tmp_path / "store"), "--format", "json", "-q"],
                         cwd=toy_repo, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "REGSURVEY_RAY": "", **secrets, **sent})
    assert out.returncode == 0, out.stderr
    assert ("regsurvey: warning: --ray: 2 untracked files not sent to the cluster (.env, id_rsa): git add them, "
            "or name them with --ray-include") in out.stderr
    [row] = json.loads(out.stdout)["rows"]
    said = dict(line.removeprefix("stdout: ").split(": ", 1) for line in row["messages"])
    assert said["files"].split() == ["keys/sees.py", "keys/toy.py", "notes/tuned.json", "toykernels/__init__.py",
                                     "toykernels/library.py", "toykernels/ops.py"]
    seen = set(said["variables"].split())
    assert set(sent) <= seen and not set(secrets) & seen, seen


def test_a_tracked_symbolic_link_out_of_the_checkout_is_said_in_one_line(toy_repo: Path,
                                                                         cluster: tuple[Any, list[Path]],
                                                                         tmp_path: Path) -> None:
    """Every --ray survey failed with "Failed to deserialize exception": the node's safe extraction refused
    the link, and the cause was only in Ray's log."""
    c, node_dirs = cluster
    (toy_repo / "data").symlink_to("/etc")
    commit_all(toy_repo, "a link to a directory of this machine")
    out = regsurvey(toy_repo, "run", "--commit", "HEAD", "--ray", c.address, "--store", str(tmp_path / "store"), "-q")
    assert (out.returncode, out.stderr) == (2, "regsurvey: error: --ray: data is a symbolic link to /etc, outside the "
                                               "checkout: a Ray node would not have it (make it point inside the "
                                               "checkout, or stop tracking it)\n")
    assert not left_on(node_dirs)
