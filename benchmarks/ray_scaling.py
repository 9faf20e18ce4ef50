"""Surveys through Ray against the local pool on one machine, side by side: the same checkout, cold Triton
caches and fresh stores each time (every build compiled), N CPUs in all.

    python benchmarks/ray_scaling.py [--project DIR] [--targets gfx950,sm90] [--cpus 16] [--nodes 4]
    python benchmarks/ray_scaling.py --synthetic 100,500,1000,2000 [--cpus 16] [--nodes 4]

For each checkout it prints the wall time of (1) the local pool at ``-j N``, (2) a Ray cluster of one node
of N CPUs, (3) a Ray cluster of ``--nodes`` nodes of N/nodes CPUs each (simulated: every node a set of
Ray processes on this machine, with a temporary directory of its own, as in tests/engine/test_ray.py),
with the ratios Ray one node / local and Ray many nodes / Ray one node (the ideal split of the same
CPUs: 1.0), and the per-build overhead the Ray survey measured itself. Cluster start-up is not counted;
the actors' imports are (as the local workers' are).

``--hosts``: the Ray clusters are hosts on a network rather than processes sharing this machine's files
(tests/engine/hosts.py: each node a network namespace with an address of its own and a /tmp, a home and
so a Triton cache of its own; the survey runs on a head host with no CPU for actors, through the CLI).
Needs root. The surveys of the two kinds of cluster are also compared build for build (figures, Triton
hashes, findings, the objects' machine code) with the local pool's.

``--project DIR``: a project with keys/ (e.g. tests/realworld/flag_gems; default: the demo).
``--synthetic B1,B2,...``: instead, generated checkouts of B builds each (the toy project's row-scaling
kernel, one distinct build per key: a constexpr salt), to see how wall time grows with builds; the
figures extrapolate to larger surveys (printed: seconds per build per CPU and the overhead).

A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))  # tests.engine.hosts, for --hosts

LOCAL: list[Any] = []  # the last local survey and its store

SYNTHETIC_KEYS = '''"""{builds} builds: one key per salt value and target, each a distinct kernel."""

import triton
import triton.language as tl

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950", "sm90"], salt=list(range({per_target})))


@triton.jit
def scaled(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, SALT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x * factor + SALT).to(out_ptr.dtype.element_ty), mask=mask)


@matrix.kind(axes=["salt"])
def scale(salt):
    x = rs.tensor((4096,), "bf16")
    scaled[(4,)](x, rs.tensor((4096,), "bf16"), 4096, 0.5, BLOCK=1024, SALT=salt)
'''


def synthetic_repo(work: Path, builds: int) -> Path:
    from isolation_cost import project_repo

    project = work / f"synthetic-{builds}-src"
    (project / "keys").mkdir(parents=True)
    (project / "keys" / "synthetic.py").write_text(SYNTHETIC_KEYS.format(builds=builds, per_target=builds // 2))
    repo = project_repo(project, work / f"synthetic-{builds}")
    return repo


def survey(repo: Path, work: Path, label: str, cpus: int, targets: tuple[str, ...] | None,
           address: str | None) -> tuple[float, int, dict[str, float]]:
    from regsurvey.engine.survey import survey_checkout
    from regsurvey.model.options import SurveyOptions
    from regsurvey.repo.checkout import working_tree

    run = work / label
    options = SurveyOptions(jobs=cpus, targets=targets, reuse_results=True, ray_address=address,
                            triton_cache_dir=str(run / "triton"))
    result = survey_checkout(working_tree(repo), run / "store" / "objects", options)
    if address is None:
        LOCAL[:] = [result, run / "store"]  # for the comparison of --hosts surveys with it
    ok = sum(r.ok for r in result.rows)
    return result.timing["wall_s"], ok, dict(result.timing)


def cluster(nodes: int, cpus: int, work: Path):  # type: ignore[no-untyped-def]
    from ray.cluster_utils import Cluster

    def node(i: int) -> dict:
        directory = work / f"node{i}"
        directory.mkdir(parents=True, exist_ok=True)
        return {"num_cpus": cpus // nodes, "env_vars": {"TMPDIR": str(directory)}}

    c = Cluster(initialize_head=True, head_node_args=node(0))
    for i in range(1, nodes):
        c.add_node(**node(i))
    c.wait_for_nodes()
    return c


def on_hosts(repo: Path, work: Path, label: str, nodes: int, cpus: int,
             targets: tuple[str, ...] | None) -> tuple[float, int, dict[str, float], dict[str, Any]]:
    """A survey of ``repo`` on ``nodes`` hosts of ``cpus`` / ``nodes`` CPUs (tests/engine/hosts.py), run
    through the CLI on the head host: its wall, builds, timing and the survey JSON."""
    from tests.engine.hosts import Hosts

    run = work / label
    (run / "logs").mkdir(parents=True)
    hosts = Hosts(run / "logs")
    try:
        hosts.start_head()
        for i in range(1, nodes + 1):
            hosts.add_node(i, cpus // nodes)
        hosts.wait_for_nodes(nodes + 1)
        chosen = [a for t in targets or () for a in ("--target", t)]
        out = subprocess.run(hosts.command(0, [sys.executable, "-m", "regsurvey", "run", "--ray", hosts.address,
                                               "--store", str(run / "store"), "--format", "json", "-q", *chosen]),
                             cwd=repo, capture_output=True, text=True, timeout=3600)
    finally:
        hosts.close()
    if out.returncode != 0:
        raise SystemExit(f"the survey on {nodes} host(s) failed: {out.stderr.strip()[-2000:]}")
    result = json.loads(out.stdout)
    return result["timing"]["wall_s"], sum(r["status"] == "ok" for r in result["rows"]), result["timing"], result


def differences(survey_json: dict[str, Any], store: Path, local: Any, local_store: Path) -> int:
    """Builds of ``survey_json`` that differ from the local survey's: figures, Triton hash, findings, status,
    or the object's machine code (its .text sections; the debug sections record the checkout's path)."""
    import io

    from elftools.elf.elffile import ELFFile

    from regsurvey.store.objectstore import ObjectStore

    def code(objects: ObjectStore, path: str, sha: str) -> dict[str, bytes]:
        elf = ELFFile(io.BytesIO(objects.get(path, sha)))
        return {s.name: s.data() for s in elf.iter_sections() if s.name.startswith(".text")}

    here, there = ObjectStore(local_store / "objects"), ObjectStore(store / "objects")
    rows = {(r.key, r.target, r.launch): r for r in local.rows}
    bad = 0
    for row in survey_json["rows"]:
        mine = rows.get((row["key"], row["target"], row["launch"]))
        same = (mine is not None and row["status"] == mine.status.value and row["triton_hash"] == mine.triton_hash
                and row["resources"] == mine.to_dict()["resources"] and row["lint"] == mine.to_dict()["lint"])
        if same and row["object"] and mine is not None and mine.object is not None:
            same = (code(there, row["object"]["path"], row["object"]["sha256"])
                    == code(here, mine.object.path, mine.object.sha256))
        bad += not same
    return bad


def compare(repo: Path, work: Path, name: str, cpus: int, nodes: int, targets: tuple[str, ...] | None,
            hosts: bool = False) -> None:
    import ray

    local, ok, _ = survey(repo, work, f"{name}-local", cpus, targets, None)
    walls = {"local": local}
    overhead, driver, calls = {}, {}, {}
    shared: dict[int, tuple[int, int]] = {}
    for n in sorted({1, nodes}):
        if hosts:
            wall, ok_ray, timing, result = on_hosts(repo, work, f"{name}-hosts{n}", n, cpus, targets)
            print(f"   {n} host(s): {differences(result, work / f'{name}-hosts{n}' / 'store', LOCAL[0], LOCAL[1])}"
                  f" of {len(result['rows'])} builds differ from the local pool's", flush=True)
        else:
            c = cluster(n, cpus, work / f"{name}-cluster{n}")
            try:
                wall, ok_ray, timing = survey(repo, work, f"{name}-ray{n}", cpus, targets, c.address)
            finally:
                ray.shutdown()
                c.shutdown()
        walls[f"ray{n}"] = wall
        overhead[n] = timing.get("ray_overhead_per_build_ms", float("nan"))
        driver[n] = timing.get("ray_driver_cpu_per_build_ms", float("nan"))
        calls[n] = int(timing.get("ray_calls", 0))
        shared[n] = (int(timing.get("keys_shared", 0)), int(timing.get("launches_shared", 0)))
        if ok_ray != ok:
            print(f"   (Ray on {n} node(s) built {ok_ray} builds, the local pool {ok})")
    many = (f" | Ray {nodes} nodes of {cpus // nodes} CPUs {walls[f'ray{nodes}']:6.1f} s "
            f"({walls[f'ray{nodes}'] / walls['ray1']:.2f}x one node, {walls[f'ray{nodes}'] / local:.2f}x local)"
            if nodes > 1 else "")
    print(f"{name}: {ok} builds on {cpus} CPUs: local pool {local:6.1f} s | Ray 1 node {walls['ray1']:6.1f} s "
          f"({walls['ray1'] / local:.2f}x local){many} | overhead per build measured by Ray: "
          f"{overhead[1]:.1f} ms (1 node), {overhead[nodes]:.1f} ms ({nodes} nodes); keys shared on Ray: "
          f"{shared}; the driver loop's CPU per build: {driver[1]:.1f} ms (1 node), {driver[nodes]:.1f} ms "
          f"({nodes} nodes); Ray calls: {calls[1]}, {calls[nodes]}")
    print("   seconds per build per CPU: " + ", ".join(
        f"{label} {wall * cpus / max(1, ok):.2f}" for label, wall in walls.items()), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=None)
    parser.add_argument("--targets", default="gfx950,sm90")
    parser.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--synthetic", default=None, help="comma-separated build counts")
    parser.add_argument("--hosts", action="store_true", help="nodes as hosts on a network (needs root)")
    args = parser.parse_args()
    os.environ.setdefault("REGSURVEY_SERVER", "off")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import triton
    from isolation_cost import project_repo

    work = Path(tempfile.mkdtemp(prefix="rs-ray-", dir="/tmp"))
    try:
        print(f"machine: {os.cpu_count()} cores, {args.cpus} used; Triton {triton.__version__}", flush=True)
        if args.synthetic:
            for builds in (int(b) for b in args.synthetic.split(",")):
                compare(synthetic_repo(work, builds), work, f"synthetic-{builds}", args.cpus, args.nodes, None,
                        args.hosts)
        else:
            project = (args.project or ROOT).resolve()
            repo = project_repo(project, work)
            compare(repo, work, project.name if args.project else "demo", args.cpus, args.nodes,
                    tuple(args.targets.split(",")), args.hosts)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
