"""How many times a first survey compiles each kernel (issue #15: no build compiled twice).

Surveys a commit of this repository's demo suite with an empty store and a cold Triton cache of its own,
then prints the rows, the rows compiled (``reused`` false), the distinct Triton hashes, the hashes compiled
more than once, and the survey's wall, compile and ``wait_s`` seconds. ``--pair`` runs two surveys at once on
one store and counts their compiles together.

    python benchmarks/compile_once.py [-j 2] [--kind GLOB] [-t TARGET] [--commit HEAD] [--pair] [-C REPO]

The regsurvey that surveys is the one beside this script (its repository is the working directory), so a
copy of the script in an export of an older regsurvey measures that one on ``-C REPO``.

A benchmark, not a test: it asserts nothing and prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", default="2")
    parser.add_argument("--kind", action="append", default=[])
    parser.add_argument("-t", "--target", action="append", default=[])
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--pair", action="store_true", help="two surveys at once on one store")
    parser.add_argument("-C", "--repo", default=str(ROOT), help="the repository surveyed (default: this one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="compile-once-") as tmp:
        store = Path(tmp) / "store"
        extra = [f"--kind={k}" for k in args.kind] + [f"--target={t}" for t in args.target]
        procs = []
        for i in range(2 if args.pair else 1):
            env = {**os.environ, "TRITON_CACHE_DIR": str(Path(tmp) / f"triton{i}"), "REGSURVEY_SERVER": "off"}
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--commit", args.commit,
                 "-j", args.jobs, "--store", str(store), "-C", args.repo, *extra],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        rows = []
        for proc in procs:
            out, err = proc.communicate()
            if proc.returncode != 0:
                sys.exit(f"regsurvey run failed:\n{err}")
            survey = json.loads(out)
            rows.extend(survey["rows"])
            timing = survey["timing"]
            print(f"survey: wall {timing['wall_s']:.1f} s, compile {timing.get('compile_s', 0):.1f} s, "
                  f"waited for builds elsewhere {timing.get('wait_s', 0):.2f} s")
    built = Counter(r["triton_hash"] for r in rows if r.get("triton_hash") and not r["reused"] and r["status"] == "ok")
    hashes = {r["triton_hash"] for r in rows if r.get("triton_hash")}
    twice = {h: n for h, n in built.items() if n > 1}
    print(f"rows {len(rows)}, compiled {sum(built.values())}, distinct Triton hashes {len(hashes)}, "
          f"compiled more than once {len(twice)} ({sum(twice.values())} compiles)")


if __name__ == "__main__":
    main()
