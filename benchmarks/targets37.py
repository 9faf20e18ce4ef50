"""Issue 37's speed targets, measured side by side with the regsurvey before it (``--old``), on one project.

For each regsurvey tree (``--old`` first, then this one), each step in turn (old, new, next step):

* **I, the import floor**: a fresh interpreter imports torch and Triton, then loads the project's keys files
  under the first target's stand-in device, as a worker does (the best of two runs; once per project);
* **1. first survey, no server**: cold Triton cache, empty store, ``REGSURVEY_SERVER=off``: the wall time and
  B, the per-launch bound from its own rows, max(longest build's compile seconds, compile seconds / jobs);
  target: wall <= 1.25 x (I + B);
* **2. with a warm server**: the tree's ``regsurvey server`` started first, cold Triton cache, empty store;
  target: wall <= 1.15 x B (its own rows' B);
* **3. a second survey, key costs known**: cold Triton cache, a fresh store holding the first survey's
  ``costs.json``, no server; target: never slower than step 1;
* **4. incremental**: step 2's store and the warm server, one kernel's file touched (a comment appended to the
  file ``--touch`` names, in the project or in an installed library); target: wall <= 1.5 s + the compile
  seconds of the builds compiled / jobs.

Also printed: kind bodies run and capture seconds summed (issue 37 item 1: helpers replay the first copy's
launches), keys not run (item 2), lint seconds (item 3).

    python benchmarks/targets37.py --old .old-rs [--project tests/realworld/flag_gems] [--touch FILE]
        [--targets gfx950,sm90] [--jobs 16]

A benchmark, not a test: it prints figures measured side by side in one run and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from key_reuse import copy_project, git  # benchmarks/, beside this script

ROOT = Path(__file__).resolve().parents[1]
TIMELINES: list[Path] = []  # where each survey's timeline goes (--timelines), if anywhere

IMPORT_FLOOR = r'''
import sys, time
from pathlib import Path
t = time.perf_counter()
import torch, triton
from regsurvey.compile import toolchain
from regsurvey.keys.keyfiles import load_kinds
from regsurvey.model.targets import get_target
root = Path(sys.argv[1])
with toolchain.device_as(get_target(sys.argv[2])):
    load_kinds(root, root / "keys")
print(time.perf_counter() - t)
'''


def _env(tree: Path, cache: Path, server: bool) -> dict[str, str]:
    path = [str(tree)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != ROOT]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TRITON_CACHE_DIR": str(cache),
            "REGSURVEY_SERVER": "use" if server else "off", "REGSURVEY_WORKER_START": "server" if server else
            "forkserver"}


def _survey(tree: Path, repo: Path, store: Path, cache: Path, targets: str, jobs: int,
            server: bool) -> tuple[dict, float]:
    env = _env(tree, cache, server)
    if TIMELINES:
        env["REGSURVEY_TIMELINE"] = str(TIMELINES[0] / f"{store.name}-{int(time.time() * 1000)}.json")
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "-t", targets, "-j",
                          str(jobs), "--store", str(store)], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - began
    if out.returncode != 0:
        sys.exit(f"survey failed ({tree}): {out.stderr[-2000:]}")
    return json.loads(out.stdout), wall


def _server(tree: Path, action: str) -> None:
    subprocess.run([sys.executable, "-m", "regsurvey", "server", action], env=_env(tree, Path("/tmp"), True),
                   capture_output=True, timeout=300)


def bound(data: dict, jobs: int) -> tuple[float, float]:
    """B of a survey's rows, and the compile seconds of the builds it compiled."""
    seconds = [r.get("compile_s") or 0.0 for r in data["rows"] if r["status"] == "ok" and not r["reused"]]
    total = sum(seconds)
    return max(max(seconds, default=0.0), total / jobs), total


def _facts(data: dict) -> str:
    t = data["timing"]
    return (f"bodies {int(t.get('kind_bodies', 0)) or '?'}, capture {t.get('capture_s', 0.0):.1f} s, "
            f"lint {t.get('lint_s', 0.0):.1f} s, analysis {t.get('analyze_s', 0.0):.1f} s, keys not run "
            f"{int(t.get('keys_unchanged', 0))}, shared {int(t.get('keys_shared', 0))} "
            f"(replayed {int(t.get('copies_replayed', 0))}), idle {t.get('idle_s', 0.0):.0f} slot-s")


def import_floor(repo: Path, target: str) -> float:
    times = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", IMPORT_FLOOR, str(repo), target], cwd=repo,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(ROOT),
                                                                              os.environ.get("PYTHONPATH", "")])},
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            sys.exit(f"import floor failed: {out.stderr[-2000:]}")
        times.append(float(out.stdout.split()[-1]))
    return min(times)


def _touched_file(repo: Path, touch: str | None) -> Path:
    """The file step 4 changes: ``touch`` (a path in the project, or a module's file: ``flag_gems.ops.rms_norm``),
    else the project's first file defining a ``@triton.jit`` kernel."""
    if touch:
        if (repo / touch).is_file():
            return repo / touch
        import importlib.util

        spec = importlib.util.find_spec(touch)
        if spec is None or spec.origin is None:
            sys.exit(f"--touch {touch}: no such file or module")
        return Path(spec.origin)
    for path in sorted(repo.rglob("*.py")):
        if re.search(r"^@triton\.jit", path.read_text(), re.M):
            return path
    sys.exit("no kernel file in the project: name one with --touch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of regsurvey before the change")
    parser.add_argument("--project", type=Path, default=ROOT)
    parser.add_argument("--touch", default=None)
    parser.add_argument("--targets", default="gfx950,sm90")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--new-only", action="store_true", help="this tree alone (--old is still required)")
    parser.add_argument("--steps", default="1,2,3,4", help="the steps to run (3 needs 1, 4 needs 2)")
    parser.add_argument("--timelines", type=Path, default=None,
                        help="write each survey's timeline (REGSURVEY_TIMELINE) into this directory")
    args = parser.parse_args()
    trees = {"new": ROOT} if args.new_only else {"old": args.old.resolve(), "new": ROOT}
    steps = {int(s) for s in args.steps.split(",")}
    if args.timelines:
        args.timelines.mkdir(parents=True, exist_ok=True)
        TIMELINES.append(args.timelines)
    name = args.project.name if args.project.resolve() != ROOT else "demo"
    with tempfile.TemporaryDirectory(prefix="regsurvey-targets37-") as scratch:
        work = Path(scratch)
        repos = {side: copy_project(args.project.resolve(), work / side) for side in trees}
        floor = import_floor(repos["new"], args.targets.split(",")[0])
        print(f"{name}, {args.targets}, -j {args.jobs}; I (import floor) {floor:.1f} s")
        first: dict[str, tuple[dict, float]] = {}
        for side, tree in trees.items() if 1 in steps else ():
            data, wall = _survey(tree, repos[side], work / f"{side}-s1", work / f"{side}-c1", args.targets,
                                 args.jobs, server=False)
            b, _ = bound(data, args.jobs)
            first[side] = data, wall
            print(f"  1. first survey, no server   {side}: {wall:6.1f} s   B {b:5.1f} s   {wall / b:.2f}x B   "
                  f"{wall / (floor + b):.2f}x (I + B) [target 1.25]   {_facts(data)}")
        for side, tree in trees.items() if 2 in steps else ():
            _server(tree, "start")
            data, wall = _survey(tree, repos[side], work / f"{side}-s2", work / f"{side}-c2", args.targets,
                                 args.jobs, server=True)
            b, _ = bound(data, args.jobs)
            print(f"  2. warm server               {side}: {wall:6.1f} s   B {b:5.1f} s   {wall / b:.2f}x B "
                  f"[target 1.15]   {_facts(data)}")
            _server(tree, "stop")
        for side, tree in trees.items() if 3 in steps else ():
            store = work / f"{side}-s3"
            store.mkdir()
            shutil.copy(work / f"{side}-s1" / "costs.json", store / "costs.json")
            data, wall = _survey(tree, repos[side], store, work / f"{side}-c3", args.targets, args.jobs, server=False)
            b, _ = bound(data, args.jobs)
            print(f"  3. second, key costs known   {side}: {wall:6.1f} s   B {b:5.1f} s   {wall / b:.2f}x B   "
                  f"{wall / first[side][1]:.2f}x the first [target <= 1]   {_facts(data)}")
        for side, tree in trees.items() if 4 in steps else ():
            touched = _touched_file(repos[side], args.touch)
            kept = touched.read_text()
            _server(tree, "start")
            try:
                touched.write_text(kept + "\n# touched by benchmarks/targets37.py\n")
                if not touched.is_relative_to(repos[side]):  # an installed library's file: the project's commit
                    (repos[side] / "NOTES.md").write_text("a commit of its own: not the stored survey\n")
                    git(repos[side], "add", "-A")
                    git(repos[side], "commit", "-qm", "notes")
                data, wall = _survey(tree, repos[side], work / f"{side}-s2", work / f"{side}-c2", args.targets,
                                     args.jobs, server=True)
            finally:
                touched.write_text(kept)
                _server(tree, "stop")
            _, compiled = bound(data, args.jobs)
            allowed = 1.5 + compiled / args.jobs
            print(f"  4. incremental, {touched.name} touched   {side}: {wall:6.2f} s   target {allowed:.2f} s "
                  f"({wall / allowed:.2f}x)   {_facts(data)}")


if __name__ == "__main__":
    main()
