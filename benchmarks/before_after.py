"""regsurvey before and after a change of its own code, side by side on the demo suite: the same rows?
the same speed?

Surveys this repository's demo suite (``keys/`` and ``decode_layer/``, copied to a temporary directory)
with two checkouts of regsurvey in turn (``--old``, e.g. a ``git worktree`` of the commit before a
restructure, and this one), interleaved ``--repeat`` times:

1. a cold survey (empty store, cold Triton cache, no worker server) at ``-j N``, and a warm re-run of it
   (the stored survey reused);
2. the rows of the two versions compared row by row: status, kernel, Triton hash, object sha256, every
   figure and the lint's findings. Every difference is printed; a lint side that one version did not lint
   (``null``) is told apart from a finding that differs.

Prints the median wall times and their ratio (new / old). A benchmark, not a test: it asserts nothing.

    git worktree add /tmp/regsurvey-old <commit>
    python benchmarks/before_after.py --old /tmp/regsurvey-old [--targets gfx942,gfx950,sm90] [--jobs 2]
                                      [--key GLOB] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def survey(code: Path, project: Path, store: Path, cache: Path, targets: str, jobs: int,
           keys: list[str]) -> tuple[float, dict[str, Any]]:
    """One ``regsurvey run`` of ``project`` with the regsurvey at ``code``: (wall seconds, survey JSON)."""
    env = {**os.environ, "PYTHONPATH": str(code), "TRITON_CACHE_DIR": str(cache), "REGSURVEY_SERVER": "off"}
    cmd = [sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--target", targets,
           "-j", str(jobs), "--store", str(store)] + [a for k in keys for a in ("--key", k)]
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"survey with {code} failed:\n{out.stderr[-3000:]}")
    return wall, json.loads(out.stdout)


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Every difference between two surveys' rows, one line each."""
    def by_id(data: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {(r["key"], r["target"], r["launch"], r["config"]): r for r in data["rows"]}

    before, after = by_id(old), by_id(new)
    lines = [f"{ref}: only in the old survey" for ref in before.keys() - after.keys()]
    lines += [f"{ref}: only in the new survey" for ref in after.keys() - before.keys()]
    for ref in sorted(before.keys() & after.keys(), key=str):
        a, b = before[ref], after[ref]
        for field in ("status", "kernel", "triton_hash", "error"):
            if a.get(field) != b.get(field):
                lines.append(f"{ref}: {field} {a.get(field)!r} -> {b.get(field)!r}")
        if (a.get("object") or {}).get("sha256") != (b.get("object") or {}).get("sha256"):
            lines.append(f"{ref}: object sha256 differs")
        for name in sorted(set(a["resources"]) | set(b["resources"])):
            if a["resources"].get(name) != b["resources"].get(name):
                lines.append(f"{ref}: {name} {a['resources'].get(name)} -> {b['resources'].get(name)}")
        if a.get("lint") != b.get("lint"):
            if a.get("lint") is None or b.get("lint") is None:
                lines.append(f"{ref}: linted {a.get('lint') is not None} -> {b.get('lint') is not None} "
                             f"(findings after: {len(b.get('lint') or [])})")
            else:
                lines.append(f"{ref}: lint findings {len(a['lint'])} -> {len(b['lint'])}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of regsurvey before the change")
    parser.add_argument("--targets", default="gfx942,gfx950,sm90")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--key", action="append", default=[], help="only keys matching (glob); repeatable")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    versions = {"old": args.old.resolve(), "new": ROOT}
    walls: dict[str, dict[str, list[float]]] = {v: {"cold": [], "warm": []} for v in versions}
    surveys: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="regsurvey-before-after-") as tmp:
        project = Path(tmp) / "demo"
        for part in ("keys", "decode_layer"):
            shutil.copytree(ROOT / part, project / part, ignore=shutil.ignore_patterns("__pycache__"))
        for i in range(args.repeat):
            for name, code in (versions.items() if i % 2 == 0 else reversed(list(versions.items()))):
                run = Path(tmp) / f"{name}-{i}"
                cold, data = survey(code, project, run / "store", run / "triton", args.targets, args.jobs, args.key)
                warm, _ = survey(code, project, run / "store", run / "triton", args.targets, args.jobs, args.key)
                walls[name]["cold"].append(cold)
                walls[name]["warm"].append(warm)
                surveys.setdefault(name, data)
                print(f"run {i + 1} {name}: cold {cold:.1f} s, warm {warm:.2f} s, {len(data['rows'])} rows", flush=True)
    print(f"\n{args.targets}, -j {args.jobs}, {args.repeat} runs each (interleaved), median wall seconds:")
    for phase in ("cold", "warm"):
        old, new = (statistics.median(walls[v][phase]) for v in ("old", "new"))
        print(f"  {phase}: old {old:.2f} s, new {new:.2f} s, new/old {new / old:.3f}")
    lines = differences(surveys["old"], surveys["new"])
    print(f"\nrows compared: {len(surveys['new']['rows'])}; differences: {len(lines)}")
    for line in lines:
        print("  " + line)


if __name__ == "__main__":
    main()
