"""Issue 35's proof on real code: ``regsurvey upgrade`` from another environment's Triton (3.6.0) to this one's
(3.9.0) on the demo suite and on the corpus libraries that import under both, then the tables of
tests/realworld/RESULTS.md's section "Triton 3.6.0 -> 3.9.0 upgrade (issue 35)".

    python benchmarks/upgrade_proof.py run                      # every upgrade of PLAN (skips those done)
    python benchmarks/upgrade_proof.py run demo:gfx942,sm90 conch   # some: LIB or LIB:TARGETS
    python benchmarks/upgrade_proof.py summary                  # the tables, from OUT's JSON files
    python benchmarks/upgrade_proof.py stages                   # what differs at each build's first stage

Each upgrade writes ``OUT/<lib>-<targets>.json`` (the comparison JSON), ``.md`` (the same comparison in
Markdown, from a second ``upgrade``: the demo's two stored surveys are reused, a working tree's keys are listed
again under each toolchain and every build is reused) and ``.wall.json`` (the first one's wall time),
with one store per library (``OUT/store-<lib>``) and a Triton cache of its own (``OUT/triton-cache-<lib>``:
empty at the first run, so that both toolchains compile every build and their compile times compare).
Every survey runs under ``nice -n 15`` with ``--jobs`` workers (default 2) and ``REGSURVEY_SERVER=off``.

The demo is this repository at HEAD (``-C`` the root). A corpus library is its ``tests/realworld/<lib>``
project copied outside any git repository (``OUT/projects/<lib>``), as the corpus test surveys it, REV the
working tree. The library must import under FROM's interpreter: the corpus libraries live in this
environment's site-packages, which another toolchain's workers do not see (they append this environment's
directories only for regsurvey's own dependencies, and only those FROM lacks). ``--link-libraries`` makes
them importable there: a directory ``OUT/libs-from/site-packages`` of symlinks to the libraries' packages (and
dist-info, and their pure dependencies einops, tqdm, sqlalchemy) in this environment's site-packages, named
by one ``.pth`` file in FROM's site-packages (``zz-regsurvey-proof-libs.pth``), so they come after FROM's
own packages on its path.

A benchmark's companion, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "realworld"
FROM = "/tmp/venv36/bin/python"
OUT = Path("/tmp/proof")
ALL = ("gfx942", "gfx950", "sm90", "sm100")

# (library, targets), in the order run: the demo, then the corpus libraries that import under both Tritons.
PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("demo", ("gfx942", "sm90")),
    ("conch", ALL),
    ("liger_kernel", ALL),
    ("demo", ("gfx950", "sm100")),
    ("fla", ALL),
    ("gemlite", ALL),
    ("flag_gems", ALL),
    ("torchao", ("gfx950", "sm90", "sm100")),  # its keys name no gfx942 (tests/realworld/torchao/keys)
)
# project directory -> the package its keys import, and what else of this environment it needs under FROM
MODULES = {"conch": ("conch", "conch_cuda_ext"), "liger_kernel": ("liger_kernel",), "fla": ("fla", "einops"),
           "gemlite": ("gemlite", "tqdm"), "flag_gems": ("flag_gems", "sqlalchemy"), "torchao": ("torchao",)}
PTH = "zz-regsurvey-proof-libs.pth"


def name(library: str, targets: tuple[str, ...]) -> str:
    """The files' stem: ``conch-gfx942+gfx950+sm90+sm100``."""
    return f"{library}-{'+'.join(targets)}"


def link_libraries(python: str, out: Path, libraries: list[str]) -> None:
    """Make ``libraries`` importable by ``python``: symlinks in ``out/libs-from/site-packages`` to this environment's
    packages and their dist-info, and a .pth in ``python``'s site-packages naming that directory."""
    site = Path(sysconfig.get_paths()["purelib"])
    # named site-packages: regsurvey names a source file below a site-packages directory by its path there
    # (liger_kernel/ops/rms_norm.py), as it names this environment's copy: the same line on both sides
    links = out / "libs-from" / "site-packages"
    links.mkdir(parents=True, exist_ok=True)
    for library in libraries:
        for module in MODULES[library]:
            for path in [site / module, *site.glob(f"{module}-*.dist-info"), *site.glob(f"{module}_*.dist-info")]:
                if path.exists() and not (links / path.name).exists():
                    (links / path.name).symlink_to(path)
    # the distributions' own names where they differ from the package's
    for dist in ("conch_triton_kernels", "liger_kernel", "fla_core", "flag_gems", "gemlite", "torchao"):
        for path in site.glob(f"{dist}-*.dist-info"):
            if not (links / path.name).exists():
                (links / path.name).symlink_to(path)
    theirs = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    (Path(theirs) / PTH).write_text(f"{links}\n")
    print(f"linked {sorted(p.name for p in links.iterdir())} into {links}, named by {Path(theirs) / PTH}",
          file=sys.stderr)


def importable(python: str, module: str) -> bool:
    """Whether ``python`` finds ``module`` (without importing it: some need the survey's stand-in GPU)."""
    return subprocess.run([python, "-c", f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) "
                           "is None)"], capture_output=True).returncode == 0


def upgrade(library: str, targets: tuple[str, ...], args: argparse.Namespace, fmt: str) -> tuple[int, float]:
    """One ``regsurvey upgrade`` of ``library`` for ``targets`` in format ``fmt``: exit status, wall seconds."""
    out: Path = args.out
    if library == "demo":
        project, rev = ROOT, ["HEAD"]
    else:
        project, rev = out / "projects" / library, []
        shutil.copytree(CORPUS / library, project, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", ".regsurvey"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REGSURVEY_SERVER": "off",
           "TRITON_CACHE_DIR": str(out / f"triton-cache-{library}")}
    stem = out / name(library, targets)
    written = f"{stem}.{'md' if fmt == 'markdown' else fmt}"
    command = ["nice", "-n", "15", sys.executable, "-m", "regsurvey", "upgrade", "--from", args.from_,
               "--to", "current", "-C", str(project), *rev, "-t", ",".join(targets), "-j", str(args.jobs),
               "--store", str(out / f"store-{library}"), "--format", fmt, "-o", written]
    print("+", " ".join(command), file=sys.stderr)
    start = time.monotonic()
    with open(f"{stem}.{fmt}.log", "w") as log:
        done = subprocess.run(command, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    return done.returncode, time.monotonic() - start


def run(args: argparse.Namespace) -> int:
    """The upgrades asked for (all of PLAN by default), each in JSON then Markdown."""
    plan = list(PLAN)
    if args.which:
        plan = []
        for spec in args.which:
            library, _, targets = spec.partition(":")
            plan.append((library, tuple(targets.split(",")) if targets else dict(
                (lib, t) for lib, t in PLAN if lib == library).get(library, ALL)))
    args.out.mkdir(parents=True, exist_ok=True)
    missing = [lib for lib, _ in plan if lib != "demo" and not importable(args.from_, MODULES[lib][0])]
    if missing and args.link_libraries:
        link_libraries(args.from_, args.out, sorted(set(missing)))
    elif missing:
        print(f"{args.from_} does not find {sorted(set(missing))}: --link-libraries makes them importable there",
              file=sys.stderr)
        return 2
    status = 0
    for library, targets in plan:
        stem = args.out / name(library, targets)
        rc = 0
        if Path(f"{stem}.json").exists() and not args.again:
            print(f"{stem}.json exists (--again surveys it again)", file=sys.stderr)
        else:
            rc, wall = upgrade(library, targets, args, "json")
            Path(f"{stem}.wall.json").write_text(json.dumps({"rc": rc, "wall_s": round(wall, 1)}))
            print(f"{name(library, targets)}: exit {rc}, {wall:.0f} s", file=sys.stderr)
        if rc == 0 and (args.again or not Path(f"{stem}.md").exists()):
            rc_md, wall_md = upgrade(library, targets, args, "markdown")
            print(f"{name(library, targets)}.md: exit {rc_md}, {wall_md:.0f} s (a second upgrade: builds reused)",
                  file=sys.stderr)
        status = status or rc
    return status


# --- the tables ---------------------------------------------------------------------------------------------

SPILLS = {"amd": ("vgpr_spill", "sgpr_spill", "scratch_bytes"), "nvidia": ("spill_store_bytes", "stack_bytes")}
REGISTERS = {"amd": ("vgpr", "agpr", "sgpr"), "nvidia": ("regs",)}
OCCUPANCY = {"amd": "occupancy", "nvidia": "occupancy_warps"}
STAGES = ("ttir", "ttgir", "llir", "amdgcn", "ptx", "object", "locations", "identical", None)
MAIN_MARKS = ("worse", "mixed", "better", "unchanged")


def vendor(target: str) -> str:
    return "amd" if target.startswith("gfx") else "nvidia"


def figure(row: dict[str, Any], figure_name: str) -> tuple[Any, Any]:
    """A figure's before and after on a row (None where absent)."""
    for f in row.get("figures") or ():
        if f["name"] == figure_name:
            return f["before"], f["after"]
    return None, None


def build(row: dict[str, Any]) -> str:
    """A build's name in the tables: its row id, with the kernel where a key launches several."""
    return row["row_id"] + (f" ({row['kernel']})" if "#" in row["row_id"] else "")


def moved(rows: list[dict[str, Any]], figure_name: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """The builds whose ``figure_name`` went 0 -> n, n -> 0, up, down (each 'build before->after')."""
    gained, lost, up, down = [], [], [], []
    for row in rows:
        before, after = figure(row, figure_name)
        if before is None or after is None or before == after:
            continue
        text = f"{build(row)} {before}->{after}"
        if before == 0:
            gained.append(text)
        elif after == 0:
            lost.append(text)
        elif after > before:
            up.append(text)
        else:
            down.append(text)
    return gained, lost, up, down


def moved_most(compile_time: dict[str, Any]) -> str:
    """The stage whose seconds moved most between the sides: ``amdgcn 55.98->0.90``."""
    stages_s = compile_time.get("stages") or {}
    before, after = stages_s.get("before") or {}, stages_s.get("after") or {}
    stages = set(before) | set(after)
    if not stages:
        return "stages not measured"
    stage = max(stages, key=lambda s: abs((after.get(s) or 0) - (before.get(s) or 0)))
    return f"{stage} {before.get(stage) or 0:.2f}->{after.get(stage) or 0:.2f}"


def listed(items: list[str], limit: int = 6) -> str:
    return ", ".join(items[:limit]) + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


def spilling(side: dict[str, Any] | None, target: str) -> bool:
    """Whether a build (one side of a row) spills: AMD VGPRs or SGPRs, NVIDIA spill stores."""
    res = (side or {}).get("resources") or {}
    return any((res.get(f) or 0) > 0 for f in SPILLS[vendor(target)][:2 if vendor(target) == "amd" else 1])


def summary(args: argparse.Namespace) -> int:
    """Per comparison file in OUT and target: builds, marks, spills, registers, occupancy, compile time,
    first differing stage; Markdown on stdout (two tables, then each target's details)."""
    files = sorted(args.out.glob("*-*.json"), key=lambda p: p.name)
    files = [p for p in files if not p.name.endswith(".wall.json")]
    table = ["| library | target | builds | worse / mixed / better / unchanged | other marks | spilling builds "
             "(3.6 -> 3.9) | spills more / fewer | registers up / down | occupancy down / up | occupancy 0 "
             "(3.6 -> 3.9) | compile s (3.6 -> 3.9) | upgrade wall |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    stage_table = ["| library | target | " + " | ".join(str(s or "unknown") for s in STAGES) + " |",
                   "| --- | --- | " + " | ".join("---" for _ in STAGES) + " |"]
    details: list[str] = []
    for path in files:
        comparison = json.loads(path.read_text())
        if comparison.get("report") != "comparison":
            continue
        library = path.stem.split("-")[0]
        wall_file = path.with_name(path.stem + ".wall.json")
        wall = json.loads(wall_file.read_text())["wall_s"] if wall_file.exists() else None
        by_target: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in comparison["rows"]:
            by_target[row["target"]].append(row)
        for i, (target, rows) in enumerate(sorted(by_target.items(), key=lambda t: ALL.index(t[0]))):
            v = vendor(target)
            marks = Counter(r["mark"] for r in rows)
            stages = Counter(r.get("first_difference") for r in rows)
            compile_before = sum((r.get("before") or {}).get("compile_s") or 0 for r in rows)
            compile_after = sum((r.get("after") or {}).get("compile_s") or 0 for r in rows)
            more = fewer = 0
            for r in rows:
                deltas = [figure(r, f) for f in SPILLS[v]]
                deltas = [(b, a) for b, a in deltas if b is not None and a is not None]
                more += any(a > b for b, a in deltas)
                fewer += any(a < b for b, a in deltas) and not any(a > b for b, a in deltas)
            regs = [figure(r, REGISTERS[v][0]) for r in rows]
            occ = [figure(r, OCCUPANCY[v]) for r in rows]
            zero = (sum(((r.get("before") or {}).get("resources") or {}).get(OCCUPANCY[v]) == 0 for r in rows),
                    sum(((r.get("after") or {}).get("resources") or {}).get(OCCUPANCY[v]) == 0 for r in rows))
            others = ", ".join(f"{m} {n}" for m, n in marks.items() if m not in MAIN_MARKS)
            table.append(
                f"| {library} | {target} | {len(rows)} | {marks['worse']} / {marks['mixed']} / {marks['better']} / "
                f"{marks['unchanged']} | {others or '-'} | "
                f"{sum(spilling(r.get('before'), target) for r in rows)} -> "
                f"{sum(spilling(r.get('after'), target) for r in rows)} | {more} / {fewer} | "
                f"{sum(b is not None and a is not None and a > b for b, a in regs)} / "
                f"{sum(b is not None and a is not None and a < b for b, a in regs)} | "
                f"{sum(b is not None and a is not None and a < b for b, a in occ)} / "
                f"{sum(b is not None and a is not None and a > b for b, a in occ)} | {zero[0]} -> {zero[1]} | "
                f"{compile_before:.0f} -> {compile_after:.0f} | "
                f"{f'{wall:.0f} s' if wall is not None and i == 0 else ''} |")
            stage_table.append(f"| {library} | {target} | " + " | ".join(str(stages.get(s, 0)) for s in STAGES) + " |")
            details.append(f"\n#### {library} {target}\n")
            for r in rows:
                for side in ("before", "after"):
                    s = r.get(side) or {}
                    if s.get("status", "ok") != "ok":
                        details.append(f"- {side} {build(r)}: {s.get('status')}: {str(s.get('error'))[:300]}")
            for f in SPILLS[v]:
                gained, lost, up, down = moved(rows, f)
                if gained or lost or up or down:
                    details.append(f"- {f}: gained {len(gained)} [{listed(gained)}]; lost {len(lost)} "
                                   f"[{listed(lost)}]; raised {len(up)} [{listed(up)}]; lowered {len(down)} "
                                   f"[{listed(down)}]")
            for f in (*REGISTERS[v], OCCUPANCY[v], "lds_bytes" if v == "amd" else "shared_bytes"):
                gained, lost, up, down = moved(rows, f)
                up, down = gained + up, lost + down
                if up or down:
                    details.append(f"- {f}: up in {len(up)} [{listed(up, 4)}]; down in {len(down)} [{listed(down, 4)}]")
            notable = [r for r in rows if (r.get("compile_time") or {}).get("notable")]
            slowest = sorted((r for r in rows if (r.get("compile_time") or {}).get("ratio")),
                             key=lambda r: r["compile_time"]["ratio"])
            if notable:
                details.append("- compile time moved notably (2x and 1 s): " + listed(
                    [f"{build(r)} {r['compile_time']['before']:.2f}->{r['compile_time']['after']:.2f} s "
                     f"({moved_most(r['compile_time'])})" for r in notable], 8))
            if slowest:
                lo, hi = slowest[0], slowest[-1]
                details.append(f"- compile ratio 3.9/3.6 from {lo['compile_time']['ratio']:.2f} ({build(lo)}) to "
                               f"{hi['compile_time']['ratio']:.2f} ({build(hi)}); pathological: "
                               f"{sum(bool(r['compile_time'].get('pathological')) for r in slowest)}")
    print("\n".join(table))
    print()
    print("First differing stage, builds per stage:\n")
    print("\n".join(stage_table))
    print("\n".join(details))
    return 0


def first_stage_now(row: dict[str, Any], objects: Path) -> str | None:
    """The first stage that differs between a row's two builds, as regsurvey's normalization answers it now (the
    JSON's ``first_difference`` is the answer of the ``upgrade`` that wrote it)."""
    from regsurvey.first_stage import first_difference
    from regsurvey.model.results import Row
    from regsurvey.store.objectstore import ObjectStore

    before, after = row.get("before"), row.get("after")
    if not (before and after):
        return None
    stage = first_difference(Row.from_dict(before), Row.from_dict(after), ObjectStore(objects))
    return None if stage is None else stage.value


def order_only(before: str, after: str) -> bool:
    """True when two normalized texts hold the same lines in another order (value numbers set aside)."""
    def lines(text: str) -> list[str]:
        return sorted(re.sub(r"%v\d+", "%v", line) for line in text.splitlines())

    return lines(before) == lines(after)


def stages(args: argparse.Namespace) -> int:
    """Every build's first differing stage as regsurvey answers it now, beside the answer the upgrade wrote,
    per library (Markdown tables on stdout); of the builds placed at TTIR or TTGIR, how many differ there only
    in the order of their lines."""
    from regsurvey.diff.stages import NORMALIZERS
    from regsurvey.model.stages import Stage
    from regsurvey.store.objectstore import ObjectStore

    now: Counter[tuple[str, str | None]] = Counter()
    then: Counter[tuple[str, str | None]] = Counter()
    reordered: Counter[tuple[str, str]] = Counter()
    for path in sorted(args.out.glob("*-*.json")):
        if path.name.endswith(".wall.json"):
            continue
        library = path.stem.split("-")[0]
        objects = args.out / f"store-{library}" / "objects"
        store = ObjectStore(objects)
        for r in json.loads(path.read_text())["rows"]:
            stage = first_stage_now(r, objects)
            now[(library, stage)] += 1
            then[(library, r.get("first_difference"))] += 1
            if stage in ("ttir", "ttgir"):
                texts = [NORMALIZERS[Stage(stage)](store.text(r[side]["object"]["path"], stage) or "")
                         for side in ("before", "after")]
                reordered[(library, stage)] += order_only(*texts)
    libraries = sorted({lib for lib, _ in now})
    print("| library | " + " | ".join(str(s or "unknown") for s in STAGES) + " | of TTIR/TTGIR: order only |")
    print("| --- | " + " | ".join("---" for _ in STAGES) + " | --- |")
    for library in [*libraries, "all"]:
        def n(counter: Counter[tuple[str, Any]], key: Any, lib: str = library) -> int:
            return sum(v for (x, k), v in counter.items() if k == key and lib in (x, "all"))
        cells = [f"{n(now, s)}" + (f" ({n(then, s)})" if n(then, s) != n(now, s) else "") for s in STAGES]
        print(f"| {library} | " + " | ".join(cells) + f" | {n(reordered, 'ttir')} / {n(reordered, 'ttgir')} |")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=("run", "summary", "stages"))
    parser.add_argument("which", nargs="*", help="LIB or LIB:TARGETS (run; default: every one of PLAN)")
    parser.add_argument("--from", dest="from_", default=FROM, help=f"the Triton upgraded from (default {FROM})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where files, stores and caches go (default {OUT})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--again", action="store_true", help="survey again where OUT has the JSON already")
    parser.add_argument("--link-libraries", action="store_true",
                        help="make the corpus libraries importable by FROM (symlinks and a .pth, see above)")
    args = parser.parse_args()
    return {"run": run, "summary": summary, "stages": stages}[args.step](args)


if __name__ == "__main__":
    sys.exit(main())
