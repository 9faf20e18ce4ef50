"""What per-target isolation costs (issue #10, item 1): cold surveys side by side, with every target
imported fresh in workers of its own (the default) and with one import shared by every target
(``REGSURVEY_SHARED_IMPORT=1``, the behaviour before isolation; wrong for launchers that cache the
device, used here only as the baseline).

Each run is a cold survey: an empty store and an empty Triton cache of its own. The two settings
alternate (A B A B ...) so that a machine's drift hits both alike. Figures, not assertions.

    python benchmarks/isolation_cost.py                                  # the demo suite, gfx942,gfx950,sm90
    python benchmarks/isolation_cost.py --project tests/realworld/liger --jobs 2 --repeat 2
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def project_repo(project: Path, work: Path) -> Path:
    """A one-commit git repository holding ``project`` (the demo: decode_layer/ and keys/)."""
    repo = work / "repo"
    if project == ROOT:
        repo.mkdir()
        for name in ("decode_layer", "keys"):
            shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copytree(project, repo, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "bench"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    return repo


def _cold_survey(repo: Path, work: Path, targets: str, jobs: int, shared: bool, extra: list[str]) -> dict:
    run_dir = Path(tempfile.mkdtemp(dir=work))
    env = dict(os.environ, TRITON_CACHE_DIR=str(run_dir / "triton"), REGSURVEY_SERVER="off")
    env["REGSURVEY_SHARED_IMPORT"] = "1" if shared else "0"
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--force",
                          "--target", targets, "-j", str(jobs), "--store", str(run_dir / "store"), *extra],
                         cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"survey failed: {out.stderr.strip()}")
    data = json.loads(out.stdout)
    shutil.rmtree(run_dir, ignore_errors=True)
    rows = data["rows"]
    errors: dict[str, int] = {}
    for r in rows:
        if r["status"] != "ok":
            line = (r.get("error") or "").strip().splitlines()
            why = f"{r['target']}: {line[0][:160] if line else r['status']}"
            errors[why] = errors.get(why, 0) + 1
    return {"errors": errors, "wall": wall, "compile": sum(r["compile_s"] for r in rows if not r.get("reused")),
            "rows": len(rows), "failed": sum(r["status"] == "error" for r in rows),
            "workers": data["timing"].get("workers_started", 0.0), "timing": data["timing"],
            "figures": {(r["key"], r["target"], r["launch"], r.get("config")): r.get("resources") for r in rows}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=ROOT, help="a project with keys/ (default: the demo)")
    parser.add_argument("--targets", default="gfx942,gfx950,sm90")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2, help="pairs of runs")
    parser.add_argument("--key", action="append", default=[], help="only keys matching this glob")
    args = parser.parse_args()
    extra = [a for k in args.key for a in ("--key", k)]
    import triton

    with tempfile.TemporaryDirectory(prefix="regsurvey-isolation-") as tmp:
        work = Path(tmp)
        repo = project_repo(args.project.resolve(), work)
        print(f"machine: {os.cpu_count()} cores; Triton {triton.__version__}; project {args.project}; "
              f"targets {args.targets}; -j {args.jobs}")
        runs: dict[bool, list[dict]] = {False: [], True: []}
        for i in range(args.repeat):
            for shared in (False, True) if i % 2 == 0 else (True, False):
                r = _cold_survey(repo, work, args.targets, args.jobs, shared, extra)
                runs[shared].append(r)
                print(f"  {'one import for all targets' if shared else 'an import per target     '}: "
                      f"{r['wall']:7.1f} s wall, {r['compile']:7.1f} s compiling, {r['rows']} rows "
                      f"({r['failed']} failed), {r['workers']:.0f} workers started")
                for why, count in sorted(r["errors"].items(), key=lambda e: -e[1])[:6]:
                    print(f"      {count} x {why}")
        iso = sum(r["wall"] for r in runs[False]) / len(runs[False])
        shared_wall = sum(r["wall"] for r in runs[True]) / len(runs[True])
        print(f"isolation: {iso:.1f} s against {shared_wall:.1f} s: {iso / shared_wall:.3f}x "
              f"({(iso / shared_wall - 1) * 100:+.1f}%; target: at most +5%)")
        same = runs[False][0]["figures"] == runs[True][0]["figures"]
        print("figures: " + ("equal in both settings" if same else
                             "DIFFER between the settings (the project caches the device: isolation matters)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
