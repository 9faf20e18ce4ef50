"""How fast regsurvey surveys, against the toolchain's own compile time (issue targets in docs/speed.md).

Prints, in one run on the demo suite (this repository's keys/ and decode_layer/):

1. the sum of raw ``triton.compile`` times for every demo launch in a bare loop (one process, cold
   Triton cache): the floor;
2. a cold survey at ``-j 1`` (cold Triton cache, empty store) and its ratio to that floor;
3. a warm re-run of the same commit (the stored survey is reused);
4. a survey of a commit that changed one kind (how many launches compiled, and whether only that kind's);
5. ``regsurvey diff`` of two commits that were both surveyed (if the diff command is installed);
6. the peak memory (RSS) of the largest survey worker (as the workers report it);
7. cold surveys at ``-j 2, 4, 8, 16`` up to the usable cores, each against the bound
   max(longest key, sum of compile times / N) from its own compile times (compiles side by side run
   slower: that is the machine), and against the stricter bound from step 1's bare loop; the largest
   again with a running ``regsurvey server`` forking the workers (what every survey after the first
   gets, since the first starts the server).

Surveys start their own forkserver (``REGSURVEY_WORKER_START=forkserver``: a first survey, no server
running) unless a step says it uses the benchmark's own server (step 4's second commit, step 7's last
line).

Each survey also prints where its time went (the ``timing`` block of the survey JSON) and the seconds
outside it (interpreter start, imports, worktree, saving).

    python benchmarks/survey_speed.py [--targets gfx950,sm90] [--jobs 1,2,4] [--key GLOB] [--repeat N]
    python benchmarks/survey_speed.py --scaling-only --jobs 16,8 [--server-jobs 16,8] [--repeat N]
    python benchmarks/survey_speed.py --scaling-only --project tests/realworld/flag_gems --jobs 16

A benchmark, not a test: it asserts nothing and prints figures measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def regsurvey(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, dict | None, str]:
    """Run the CLI; (wall seconds, parsed JSON output or None, stderr)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"regsurvey {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout) if "--format" in args and "json" in args else None
    return wall, data, out.stderr


def bare_loop(targets: list[str], cache: Path, key_glob: str | None) -> tuple[float, int]:
    """Sum of triton.compile seconds over every demo launch, cold cache, in this process's child."""
    code = f"""
import fnmatch, json, os, sys, time
os.environ["TRITON_CACHE_DIR"] = {str(cache)!r}
sys.path.insert(0, {str(ROOT)!r})
from pathlib import Path
from regsurvey.compile import toolchain
from regsurvey.keys.session import CaptureSession
from regsurvey.keys.keyfiles import expand_keys, load_kinds
from regsurvey.model.targets import get_target
import triton
from triton.compiler import ASTSource
kinds = {{k.name: k for k in load_kinds(Path({str(ROOT)!r}), Path({str(ROOT / 'keys')!r}))}}
total, n = 0.0, 0
for key in expand_keys(list(kinds.values()), {targets!r}):
    if {key_glob!r} and not fnmatch.fnmatchcase(key.id, {key_glob!r}):
        continue
    session = CaptureSession(get_target(key.target))
    with toolchain.capturing(session):
        kinds[key.kind].body(**key.axes_dict)
    for launch in session.launches:
        src = ASTSource(launch.jit_function, launch.signature, launch.constexprs, launch.attrs)
        t = time.perf_counter()
        triton.compile(src, target=toolchain.gpu_target(session.target), options=dict(launch.options))
        total += time.perf_counter() - t
        n += 1
print(json.dumps([total, n]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    total, n = json.loads(out.stdout.strip().splitlines()[-1])
    return total, n


def key_seconds(data: dict) -> dict[str, float]:
    """Compile seconds per (key, target) in a cold survey: launches it compiled, not those it reused
    from an identical kernel compiled earlier in the same survey (those cost no compile)."""
    per: dict[str, float] = {}
    for r in data["rows"]:
        cost = 0.0 if r["reused"] else r["compile_s"]
        per[f"{r['target']}:{r['key']}"] = per.get(f"{r['target']}:{r['key']}", 0.0) + cost
    return per


def breakdown(data: dict) -> str:
    """One line: where the survey's time went (``timing`` of the survey JSON), in seconds."""
    t = data.get("timing") or {}
    names = ("wall_s", "list_s", "worker_ready_max_s", "compile_s", "hash_s", "capture_s", "analyze_s", "store_s",
             "lint_s", "idle_s", "tail_s")
    return "   ".join(f"{n[:-2]} {t[n]:.1f}" for n in names if n in t)


def scaling_run(work: Path, targets: str, n: int, costs: Path | None, key_args: list[str],
                served: dict[str, str] | None = None, repeat: int = 1, floor: float | None = None) -> None:
    """A cold survey at -j n against the bound from its own compile seconds: max(its longest key, their
    sum / n). ``costs``: the key costs of an earlier survey, copied into the fresh store (a store in daily
    use); None: an empty store, a first survey (costs estimated with no history). ``served``: the
    environment of a running ``regsurvey server`` to fork the workers (else the survey starts its own
    forkserver)."""
    for i in range(repeat):
        label = f"{n}{'s' if served else ''}{'k' if costs else 'f'}-{i}"
        _scaling_once(work, targets, n, costs, key_args, served, label, floor)


def _scaling_once(work: Path, targets: str, n: int, costs: Path | None, key_args: list[str],
                  served: dict[str, str] | None, label: str, floor: float | None) -> None:
    store = work / f"store-j{label}"
    store.mkdir()
    if costs is not None:
        shutil.copy(costs, store / "costs.json")
    timeline = Path(os.environ.get("SPEED_TIMELINES", work)) / f"timeline-j{label}.json"
    env = dict(served or os.environ, TRITON_CACHE_DIR=str(work / f"cache-j{label}"), REGSURVEY_TIMELINE=str(timeline))
    busy = machine_cpu_seconds()
    wall, data, _ = regsurvey(["run", "--commit", "HEAD", "-q", "-j", str(n), "--target", targets, "--store",
                               str(store), "--format", "json", *key_args], ROOT, env)
    busy = machine_cpu_seconds() - busy
    assert data is not None
    seconds = key_seconds(data)
    bound = max(max(seconds.values()), sum(seconds.values()) / n)
    how = ("server " if served else "") + ("costs known" if costs else "first")
    print(f"   {how:>18} -j {n:2d}: {wall:7.1f} s   compile seconds {sum(seconds.values()):6.1f}   longest key "
          f"{max(seconds.values()):4.1f} s   bound {bound:6.1f} s   ratio {wall / bound:.2f}")
    # Workers share the launches of a key at the survey's tail: the bound per launch, below the per-key one
    # for keys of many launches (an autotuned launcher's configs).
    launch = max((r["compile_s"] for r in data["rows"] if not r["reused"] and r["compile_s"]), default=0.0)
    by_launch = max(launch, sum(seconds.values()) / n)
    if by_launch < bound:
        print(f"          longest launch {launch:.1f} s: bound by launches {by_launch:.1f} s, "
              f"ratio {wall / by_launch:.2f}"
              f"   (keys shared {data['timing'].get('keys_shared', 0):.0f}, launches shared "
              f"{data['timing'].get('launches_shared', 0):.0f})")
    if floor:  # the stricter bound: the one-process bare loop's compile seconds, uncontended
        strict = max(max(seconds.values()), floor / n)
        print(f"          against the bare loop's {floor:.1f} s / {n}: bound {strict:.1f} s, ratio {wall / strict:.2f}")
    print(f"          {breakdown(data)}   outside the survey {wall - data['timing']['wall_s']:.1f}")
    if timeline.is_file():
        print(f"          {timeline_summary(json.loads(timeline.read_text()))}")
    cores = len(os.sched_getaffinity(0))
    share = 100 * busy / (cores * wall)
    print(f"          the machine's CPU busy {busy:.1f} s of {cores} x {wall:.1f} s ({share:.0f} %); "
          f"beyond the compile seconds {busy - sum(seconds.values()):.1f} s")


def timeline_summary(data: dict) -> str:
    """Where the compile slots' time went, from the survey's timeline (``REGSURVEY_TIMELINE``; seconds since
    the keys were listed): each worker's keys from dispatch to compiled, the gaps between a compile and the
    worker's next key, the wait for the last compile, and the survey's last steps after it."""
    per: dict[str, list[tuple[float, str]]] = {}
    marks: dict[str, float] = {}
    for t, event, who, _ in data["events"]:
        if who:
            per.setdefault(who, []).append((t, event))
        else:
            marks[event] = t
    compiled_at = [t for events in per.values() for t, e in events if e == "compiled"]
    if not compiled_at or "end" not in marks:
        return "timeline: empty"
    last = max(compiled_at)
    busy = first = gaps = tail = 0.0
    longest_gap = 0.0
    for events in per.values():
        sent = [t for t, e in events if e == "sent"]
        done = [t for t, e in events if e == "compiled"]
        if not sent:
            continue
        first += sent[0]
        busy += sum(d - s for s, d in zip(sent, done))
        between = [s - d for d, s in zip(done, sent[1:])]
        gaps += sum(between)
        longest_gap = max([longest_gap, *between])
        if done:
            tail += last - done[-1]
    after = {m: marks[m] - last for m in ("keys done", "workers closed", "lint done", "end") if m in marks}
    return (f"timeline: slots busy {busy:.1f} s, before their first key {first:.1f} s, between keys {gaps:.1f} s "
            f"(longest {longest_gap:.2f} s), waiting for the last compile {tail:.1f} s; after it: "
            + ", ".join(f"{m} +{v:.2f}" for m, v in after.items()))


def machine_cpu_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot (/proc/stat: all but idle and iowait), the
    survey's every process counted (workers, finishing processes, nvdisasm, the survey itself); 0 where
    there is no /proc."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def start_server(work: Path) -> dict[str, str]:
    """A `regsurvey server` of this benchmark's own (socket directory in ``work``); its environment."""
    env = dict(os.environ, REGSURVEY_SERVER_DIR=str(work / "srv"), REGSURVEY_WORKER_START="server")
    subprocess.run([sys.executable, "-m", "regsurvey", "server", "start"], env=env, check=True, capture_output=True)
    return env


def stop_server(env: dict[str, str] | None) -> None:
    if env is not None:
        subprocess.run([sys.executable, "-m", "regsurvey", "server", "stop"], env=env, capture_output=True)


def scaling_only(work: Path, targets: str, jobs: list[int], key_args: list[str], repeat: int = 1,
                 server_jobs: list[int] | None = None) -> None:
    """Step 7 alone: at each -j, first surveys (empty store: key costs estimated with no history), then
    surveys whose store knows the key costs (from a first cold survey at the largest -j); the same two
    again with a running server at ``server_jobs`` (default: the largest -j)."""
    first = work / "store-costs"
    env = dict(os.environ, TRITON_CACHE_DIR=str(work / "cache-costs"))
    wall, _, _ = regsurvey(["run", "--commit", "HEAD", "-q", "-j", str(max(jobs)), "--target", targets,
                            "--store", str(first), *key_args], ROOT, env)
    print(f"7. scaling (cold Triton caches and fresh stores; key costs, where known, from a first cold survey "
          f"at -j {max(jobs)}: {wall:.1f} s)")
    for n in jobs:
        scaling_run(work, targets, n, None, key_args, repeat=repeat)
        scaling_run(work, targets, n, first / "costs.json", key_args, repeat=repeat)
    served = start_server(work)
    try:
        for n in server_jobs or [max(jobs)]:
            scaling_run(work, targets, n, None, key_args, served, repeat=repeat)
            scaling_run(work, targets, n, first / "costs.json", key_args, served, repeat=repeat)
    finally:
        stop_server(served)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="gfx950,sm90")
    parser.add_argument("--jobs", default=None, help="comma-separated worker counts for the scaling runs")
    parser.add_argument("--key", default=None, help="only keys matching this glob (a quicker benchmark)")
    parser.add_argument("--project", type=Path, default=None,
                        help="with --scaling-only: survey this project (a directory with keys/, e.g. "
                             "tests/realworld/flag_gems) instead of the demo")
    parser.add_argument("--scaling-only", action="store_true",
                        help="only step 7, each run against the bound from its own compile times")
    parser.add_argument("--repeat", type=int, default=1, help="run each scaling survey this many times")
    parser.add_argument("--server-jobs", default=None,
                        help="with --scaling-only: the worker counts to run again with a running server "
                             "(default: the largest of --jobs)")
    args = parser.parse_args()
    targets = args.targets.split(",")
    cores = len(os.sched_getaffinity(0))
    jobs = [int(j) for j in args.jobs.split(",")] if args.jobs else [j for j in (1, 2, 4, 8, 16) if j <= cores]
    key_args = ["--key", args.key] if args.key else []
    if args.project is not None and not args.scaling_only:
        parser.error("--project needs --scaling-only (steps 1 to 6 edit the demo)")
    work = Path(tempfile.mkdtemp(prefix="rs-bench-", dir="/tmp"))  # short: a server socket lives in it
    if args.project is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from isolation_cost import project_repo

        key_args += ["-C", str(project_repo(args.project.resolve(), work))]
    os.environ["REGSURVEY_WORKER_START"] = "forkserver"  # not a server the user may run; step 4 and 7 add one
    served = None
    try:
        import triton

        print(f"machine: {cores} usable cores; Python {sys.version.split()[0]}; Triton {triton.__version__}")
        suite = f"project {args.project}" if args.project else "demo decode layer"
        print(f"suite: {suite}, targets {', '.join(targets)}" + (f", keys {args.key}" if args.key else ""))
        if args.scaling_only:
            scaling_only(work, args.targets, jobs, key_args, args.repeat,
                         [int(j) for j in args.server_jobs.split(",")] if args.server_jobs else None)
            return 0

        # 1. the floor
        floor, launches = bare_loop(targets, work / "bare-cache", args.key)
        print(f"1. bare triton.compile loop (cold cache): {floor:7.1f} s for {launches} launches")

        # 2. cold survey at -j 1
        env = dict(os.environ, TRITON_CACHE_DIR=str(work / "cold-cache"))
        store = work / "store"
        cold, cold_data, _ = regsurvey(["run", "--commit", "HEAD", "-q", "--format", "json", "-j", "1", "--target",
                                   args.targets, "--store", str(store), *key_args], ROOT, env)
        assert cold_data is not None
        keys = len({(r["key"], r["target"]) for r in cold_data["rows"]})
        own = sum(key_seconds(cold_data).values())
        # The floor again, after the survey: one machine's compile speed drifts over minutes.
        floor2, _ = bare_loop(targets, work / "bare-cache-2", args.key)
        mean = (floor + floor2) / 2
        print(f"2. cold survey -j 1: {cold:7.1f} s for {keys} keys: {cold / mean:.2f}x the bare loop (run before "
              f"{floor:.1f} s and after {floor2:.1f} s, mean {mean:.1f} s); its own compile seconds {own:.1f}, "
              f"{cold / own:.2f}x")
        print(f"          {breakdown(cold_data)}")

        # 3. warm re-run of the same commit
        warm, _, _ = regsurvey(["run", "--commit", "HEAD", "-q", "--target", args.targets, "--store", str(store),
                                *key_args, "--format", "json"], ROOT, env)
        print(f"3. warm re-run of the same commit: {warm:5.2f} s end to end")

        # 4. a commit that changes one kind (the router's tile table)
        clone = work / "clone"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        router = clone / "decode_layer" / "router.py"
        text = router.read_text()
        amd, nvidia = "8: (64, 128, 4, 2),\n            16:", "8: (64, 128, 4, 3),\n               16:"
        changed = text.replace(amd, amd.replace("128", "64", 1)).replace(nvidia, nvidia.replace("128", "64", 1))
        assert changed != text, "the router's tile table moved: update the benchmark's edit"
        router.write_text(changed)
        git = ["git", "-C", str(clone), "-c", "user.email=bench@regsurvey", "-c", "user.name=bench"]
        subprocess.run([*git, "commit", "-qam", "router: narrower tile at 8 rows"], check=True)
        base, _, _ = regsurvey(["run", "--commit", "HEAD~1", "-q", "--target", args.targets, "--store",
                                str(store), "-C", str(clone), *key_args], ROOT, env)
        inc, data, _ = regsurvey(["run", "--commit", "HEAD", "-q", "--format", "json", "--target", args.targets,
                                  "--store", str(store), "-C", str(clone), *key_args], ROOT, env)
        assert data is not None
        compiled = [r for r in data["rows"] if not r["reused"]]
        kinds = sorted({r["kind"] for r in compiled})
        print(f"4. commit changing one kind: {inc:5.2f} s, {len(compiled)} of {len(data['rows'])} launches "
              f"compiled, kinds compiled: {', '.join(kinds) or 'none'} (base commit from store: {base:.2f} s)")

        # 4b. the same with a running `regsurvey server`: another one-kind commit
        served = start_server(work)
        router.write_text(changed.replace("8: (64, 64, 4, 2)", "8: (64, 32, 4, 2)", 1)
                          .replace("8: (64, 64, 4, 3)", "8: (64, 32, 4, 3)", 1))
        subprocess.run([*git, "commit", "-qam", "router: narrower still"], check=True)
        inc_s, data_s, _ = regsurvey(["run", "--commit", "HEAD", "-q", "--format", "json", "--target", args.targets,
                                      "--store", str(store), "-C", str(clone), *key_args], ROOT, dict(served, **{
                                          "TRITON_CACHE_DIR": env["TRITON_CACHE_DIR"]}))
        assert data_s is not None
        compiled_s = [r for r in data_s["rows"] if not r["reused"]]
        print(f"   with a running server: {inc_s:5.2f} s, {len(compiled_s)} launches compiled "
              f"({', '.join(sorted({r['kind'] for r in compiled_s})) or 'none'}), workers from the server: "
              f"{data_s['timing'].get('workers_from_server', 0):.0f}")

        # 5. diff of two stored surveys
        try:
            dwall, _, _ = regsurvey(["diff", "HEAD~1", "HEAD", "-q", "--target", args.targets, "--store", str(store),
                                     "--format", "json", "-C", str(clone)], ROOT, env)
            print(f"5. diff of two stored surveys: {dwall:5.2f} s")
        except SystemExit as exc:
            print(f"5. diff of two stored surveys: not measured ({str(exc).splitlines()[0]})")

        # 6. peak memory: workers fork from a forkserver, so they are not this process's descendants to
        # the system; each reports its own peak
        peak_mb = max(d.get("timing", {}).get("worker_peak_rss_mb", 0.0) for d in (cold_data, data))
        cli_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"6. peak memory of a survey worker: {peak_mb:.0f} MB (largest other process: {cli_mb:.0f} MB, "
              "the bare loop or a survey's main process)")

        # 7. scaling: each run against the bound from its own compile seconds (compiles run slower
        # side by side, which is the machine, not regsurvey)
        print("7. scaling (cold caches, key costs known from the cold survey of 2.)")
        for n in jobs:
            if n > 1:
                scaling_run(work, args.targets, n, store / "costs.json", key_args, repeat=args.repeat, floor=mean)
        if max(jobs) > 1:
            scaling_run(work, args.targets, max(jobs), store / "costs.json", key_args, served, repeat=args.repeat,
                        floor=mean)
    finally:
        stop_server(served)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
