"""How close the register pressure's peak comes to what the compiler allocated, on every build of a
stored survey (issue #13's proof on real code): prints, per target, the builds, how many are
register-limited (they spill, or their VGPR count is at the file's limit), and the distribution of
allocated - peak over those; and any build whose peak exceeds the allocation (there must be none).

    python benchmarks/pressure_check.py REPO [--commit REV] [--store DIR] [-j N]
    python benchmarks/pressure_check.py --survey SURVEY.json --store DIR [-j N]

REPO: a repository with a stored survey of REV (default HEAD), e.g. the demo's (`regsurvey demo --keep`).
SURVEY.json: what `regsurvey run --format json --store DIR` printed (a project outside git, such as a
real-world corpus library's).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from regsurvey.kept_pressure import pressure_of
from regsurvey.model.results import Survey
from regsurvey.repo.checkout import resolve_commit
from regsurvey.store.store import Store

ALLOCATED = {"vgpr": "vgpr", "agpr": "agpr", "sgpr": "sgpr", "gpr": "regs"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("repo", type=Path, nargs="?")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--survey", type=Path)
    parser.add_argument("--store", type=Path)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    store = Store(args.store or args.repo / ".regsurvey")
    if args.survey is not None:
        survey = Survey.from_json(args.survey.read_text())
        commit = survey.commit or "working tree"
        targets = list(survey.targets)
    else:
        commit = resolve_commit(args.repo, args.commit)
        targets = sorted(p.stem for p in (store.root / "surveys" / commit).glob("*.json") if p.name != "index.json")
        loaded = store.load(commit, targets)
        if loaded is None:
            print(f"no stored survey of {commit[:12]} in {store.root}", file=sys.stderr)
            return 2
        survey = loaded
    rows = {r.object.sha256: r for r in survey.rows if r.ok and r.object is not None}
    started = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        pressures = dict(zip(rows, pool.map(lambda r: pressure_of(r, store.objects), rows.values())))
    seconds = time.perf_counter() - started
    print(f"{len(rows)} distinct objects of {commit[:12]} ({', '.join(targets)}): pressure in {seconds:.1f} s")
    gaps: dict[tuple[str, str], list[int]] = collections.defaultdict(list)
    over = []
    for sha, row in rows.items():
        p = pressures[sha]
        res = row.resources
        limited = bool(res.get("vgpr_spill") or res.get("sgpr_spill") or res.get("spill_store_bytes")
                       or res.get("vgpr", 0) >= 256 or res.get("regs", 0) >= 255)
        for c in p.classes:
            name = ALLOCATED.get(c)
            if name is None or name not in res:
                continue
            peak = p.peaks[c].live[c] if c in p.peaks else 0
            if peak > res[name]:
                over.append(f"{row.row_id} ({row.target}): {c} peak {peak} > allocated {res[name]}")
            if limited:
                gaps[(row.target, c)].append(res[name] - peak)
    for (target, c), values in sorted(gaps.items()):
        counts = collections.Counter(values)
        spread = ", ".join(f"{gap}: {n}" for gap, n in sorted(counts.items()))
        print(f"  {target} {c}: {len(values)} register-limited builds; allocated - peak -> builds: {spread}")
    for line in over:
        print(f"  OVER: {line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
