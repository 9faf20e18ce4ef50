"""Keys not run again (issue 37, item 2): a project's surveys with the key records and without them
(``REGSURVEY_KEY_REUSE=off``: the commit before), side by side in one run, and every build compared.

For the project (the demo by default, or a corpus library's directory: ``--project tests/realworld/flag_gems``),
copied into a git repository of its own, on the targets given, at ``-j``:

1. a first survey, cold (empty store and Triton cache), without records and with them: wall and capture
   seconds (what noting a kind body's reads costs);
2. the same tree again (store warm): with records (no kind body runs) and without (every body runs);
3. one kernel's source changed (a comment appended to the first file of the project defining a
   ``@triton.jit`` function; a project without one, a corpus library's keys: a new file no key reads): the
   keys run again, the builds compiled and the wall time, with records and without;
4. a ``--force`` survey of that tree, and every build of step 3's survey with records against it: status,
   Triton hash, object and figures, build for build.

With ``--server`` each survey after the first of a mode uses a warm ``regsurvey server`` (started first).

    python benchmarks/key_reuse.py [--project DIR] [--targets gfx950,sm90] [--jobs 16] [--server]

A benchmark, not a test: it prints figures and asserts nothing.
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

ROOT = Path(__file__).resolve().parents[1]


def git(repo: Path, *args: str) -> None:
    """Run git in ``repo`` (an author of its own: the benchmark's commits)."""
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
                        "GIT_COMMITTER_EMAIL": "b@b"})


def copy_project(project: Path, into: Path) -> Path:
    """``project`` (the demo: its keys and kernels) copied into a git repository of its own under ``into``."""
    repo = into / "project"
    if project == ROOT:
        shutil.copytree(ROOT / "keys", repo / "keys")
        shutil.copytree(ROOT / "decode_layer", repo / "decode_layer")
    else:
        shutil.copytree(project, repo, ignore=shutil.ignore_patterns("__pycache__", ".regsurvey"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "project")
    return repo


def _survey(repo: Path, store: Path, cache: Path, targets: str, jobs: int, reuse: bool, *extra: str,
            server: bool = False) -> tuple[dict, float]:
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache), "REGSURVEY_SERVER": "use" if server else "off"}
    if not reuse:
        env["REGSURVEY_KEY_REUSE"] = "off"
    began = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "-t", targets,
                          "-j", str(jobs), "--store", str(store), *extra], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=3600)
    wall = time.monotonic() - began
    if out.returncode != 0:
        sys.exit(f"survey failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout), wall


def _line(name: str, data: dict, wall: float) -> str:
    t = data["timing"]
    compiled = sum(1 for r in data["rows"] if r["status"] == "ok" and not r["reused"])
    return (f"  {name:<34} {wall:7.2f} s   capture {t.get('capture_s', 0.0):6.2f} s   keys not run "
            f"{int(t.get('keys_unchanged', 0)):4d}   launches compiled {compiled:4d} of {len(data['rows'])}")


def _changed_kernel_file(repo: Path) -> Path:
    """A file of the project that defines a ``@triton.jit`` kernel (the first, in path order); a project whose
    kernels are all a library's (a corpus library's keys): a new file no key reads (the tree changed, its
    keys' inputs did not)."""
    for path in sorted(repo.rglob("*.py")):
        if ".regsurvey" not in path.parts and re.search(r"^@triton\.jit", path.read_text(), re.M):
            return path
    (repo / "NOTES.md").write_text("a change no key reads\n")
    return repo / "NOTES.md"


def _builds(data: dict) -> dict:
    return {(r["key"], r["target"], r["launch"]): (r["status"], r["triton_hash"], (r["object"] or {}).get("sha256"),
                                                   json.dumps(r["resources"], sort_keys=True)) for r in data["rows"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=ROOT)
    parser.add_argument("--targets", default="gfx950,sm90")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--server", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="regsurvey-key-reuse-") as scratch:
        work = Path(scratch)
        print(f"key reuse: {args.project.name if args.project != ROOT else 'demo'}, {args.targets}, -j {args.jobs}"
              f"{', warm server' if args.server else ''}; Python {sys.version.split()[0]}")
        if args.server:
            subprocess.run([sys.executable, "-m", "regsurvey", "server", "start"], check=True, capture_output=True)
        results = {}
        for reuse in (False, True):
            mode = "with records" if reuse else "without records"
            repo = copy_project(args.project.resolve(), work / mode.replace(" ", "-"))
            store, cache = work / f"{mode}-store", work / f"{mode}-cache"
            print(f"{mode}:")
            first = _survey(repo, store, cache, args.targets, args.jobs, reuse)
            print(_line("1. first survey (cold)", *first))
            again = _survey(repo, store, cache, args.targets, args.jobs, reuse, server=args.server)
            print(_line("2. the same tree again", *again))
            changed = _changed_kernel_file(repo)
            changed.write_text(changed.read_text() + "\n# touched\n")
            step3 = _survey(repo, store, cache, args.targets, args.jobs, reuse, server=args.server)
            print(_line(f"3. {changed.relative_to(repo)} touched", *step3))
            results[reuse] = (repo, store, cache, step3[0])
        repo, store, cache, with_records = results[True]
        forced, wall = _survey(repo, store, cache, args.targets, args.jobs, True, "--force")
        print(_line("4. --force of step 3's tree", forced, wall))
        a, b = _builds(with_records), _builds(forced)
        same = sum(1 for k in a if a[k] == b.get(k))
        print(f"  builds of step 3 (with records) equal to --force's: {same} of {len(a)} "
              f"({len(set(a) ^ set(b))} builds on one side only)")
        for k in sorted(k for k in a if a[k] != b.get(k))[:10]:
            print("   differs:", k, a[k][:3], (b.get(k) or ())[:3])
        if args.server:
            subprocess.run([sys.executable, "-m", "regsurvey", "server", "stop"], capture_output=True)


if __name__ == "__main__":
    main()
