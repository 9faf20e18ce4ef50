"""regsurvey before and after a change of its own code, side by side on the demo suite: the same rows?
the same speed?

Surveys this repository's demo suite (``keys/`` and ``decode_layer/``, copied to a temporary directory)
with two checkouts of regsurvey in turn (``--old``, e.g. a ``git worktree`` of the commit before a
restructure, and this one), interleaved ``--repeat`` times (the order of the two flips every run):

1. a cold survey (empty store, cold Triton cache, no worker server: ``REGSURVEY_SERVER=off``) at ``-j N``,
   and a warm re-run of it (the stored survey reused);
2. with ``--diff``: ``regsurvey diff HEAD~1 HEAD`` of a two-commit repository of the demo suite, both of
   whose surveys are already stored (each version its own store, both surveyed before the first diff,
   not measured). The repository is the one ``regsurvey demo`` builds (``regsurvey/revisions/demo.py``):
   the suite, then MLA decode attention with one 16-head block per program. Its wall time is loading,
   comparing and rendering (``--diff-format``, default the table). It takes every key of
   ``--diff-targets`` (default ``--targets``), whatever ``--key`` says: neither version reuses a stored
   survey of some keys only. A diff that compiled anything (its own empty Triton cache filled) stops the
   run;
3. with ``--server-jobs N``: a cold survey at ``-j N`` (empty store holding only the key costs of that
   version's cold survey of the same run, as a store in daily use does; cold Triton cache) whose workers
   a warm ``regsurvey server`` of that version forks. Each version gets its own server, started before
   and stopped after its survey, in a socket directory of its own (``REGSURVEY_SERVER_DIR``) so that the
   two never meet; the survey runs with ``REGSURVEY_SERVER=use`` and its ``workers_from_server`` is
   printed (0 would mean it measured no server);
4. the rows of the two versions' cold surveys compared row by row: status, kernel, Triton hash, object
   sha256, every figure and the lint's findings. Every difference is printed, grouped: a lint side that
   one version did not lint (``null``) while the other linted and found nothing (``[]``) is counted apart
   (4faced4 lints only NVIDIA builds with a stack frame, issue #11 lints every one), from a finding that
   differs and from a figure or identity that differs.

Prints, per measurement, the median wall time of each version and the ratio new / old, then a verdict line
per measurement: within ``--tolerance`` (default 3%) when new / old is at most 1 + tolerance (faster
counts as within; said so when by more than the tolerance). A benchmark, not a test: its exit status is
0 whatever it measured. Stopped by SIGTERM or Ctrl-C (a ``timeout``), it prints what it measured so far,
stops the servers it started, and exits 1.

    git worktree add /tmp/regsurvey-old <commit>
    python benchmarks/before_after.py --old /tmp/regsurvey-old [--targets gfx942,gfx950,sm90] [--jobs 2]
                                      [--key GLOB] [--repeat 2] [--diff] [--server-jobs 16]

Issue #11's speed criterion (cold ``-j 1``, warm re-run, ``diff``, ``-j 16`` with a server, each within
3% of 4faced4, the commit before the change), on the 16-core device machine (Triton 3.6): the step
``speed11`` of ``benchmarks/device_run.sh`` makes the old worktree from the repository's history and
runs, in one command under the device's 10-minute limit (sm90 alone keeps it there: the whole demo on
gfx950 and sm90 is about 110 s of compiling at ``-j 1`` on the device, so three runs of both versions
would not fit)::

    bash benchmarks/device_run.sh speed11        # device tool: carry [".whl"] (and ".git" if it lacks it)
    # = python3 benchmarks/before_after.py --old /tmp/old-rs --targets sm90 --jobs 1 --repeat 3 \\
    #       --diff --server-jobs 16               (under `timeout 520`; the output also in $OUT/speed11.txt)
    # SPEED11_TARGETS, SPEED11_REPEAT, SPEED11_SERVER_JOBS, SPEED11_TIMEOUT change those figures

On a 2-core machine, a quick proof that it works (about 8 minutes)::

    python benchmarks/before_after.py --old /tmp/old-rs --targets gfx950,sm90 --key 'mla_decode/*' \\
        --jobs 1 --repeat 1 --diff --diff-targets sm90 --server-jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# The second commit of `regsurvey demo` (regsurvey/revisions/demo.py's DEMO_CHANGE), built here again so
# that the benchmark imports neither version of regsurvey.
DEMO_CHANGE_PATH = "decode_layer/attention.py"
DEMO_CHANGE_PATTERN = r"^(?P<indent>[ \t]*)block_h = .*$"
DEMO_CHANGE_REPLACEMENT = r"\g<indent>block_h = 16  # one 16-head block per program: half the q and accumulator tiles"
DEMO_CHANGE_MESSAGE = "mla_decode: one 16-head block per program (was up to 32 heads)"

CALL_TIMEOUT_S = 1800.0  # one regsurvey command; a hung one stops the run instead of the whole budget


class Stopped(Exception):
    """SIGTERM arrived (a `timeout` around the run): print what was measured, clean up."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Stopped()


def version_env(code: Path, cache: Path, **extra: str) -> dict[str, str]:
    """The environment of one regsurvey command of the checkout at ``code``: ``code`` first on PYTHONPATH,
    and of what PYTHONPATH held, what is no checkout of regsurvey (wheels installed aside, on the device)."""
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and not (Path(p) / "regsurvey" / "__init__.py").is_file()]
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), *kept]), "TRITON_CACHE_DIR": str(cache),
            "REGSURVEY_SERVER": "off", **extra}


def cli(code: Path, args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """One ``python -m regsurvey ARGS`` of the checkout at ``code``: (wall seconds, stdout)."""
    start = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=cwd, env=env, capture_output=True,
                             text=True, check=False, timeout=CALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"regsurvey {' '.join(args)} with {code} ran past {CALL_TIMEOUT_S:g} s") from None
    wall = time.perf_counter() - start
    if out.returncode != 0:
        raise SystemExit(f"regsurvey {' '.join(args)} with {code} failed:\n{out.stderr[-3000:]}")
    return wall, out.stdout


def survey(code: Path, project: Path, store: Path, cache: Path, targets: str, jobs: int,
           keys: list[str], env: dict[str, str] | None = None) -> tuple[float, dict[str, Any]]:
    """One ``regsurvey run`` of ``project`` with the regsurvey at ``code``: (wall seconds, survey JSON).
    ``env``: the environment (default: ``version_env``, no server)."""
    args = ["run", "-q", "--format", "json", "--target", targets, "-j", str(jobs), "--store", str(store)]
    wall, stdout = cli(code, args + [a for k in keys for a in ("--key", k)], project,
                       env or version_env(code, cache))
    return wall, json.loads(stdout)


def build_demo_repo(dest: Path) -> None:
    """The two-commit repository ``regsurvey demo`` makes (regsurvey/revisions/demo.py): the demo suite,
    then its kernel change."""
    shutil.copytree(ROOT / "decode_layer", dest / "decode_layer", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "keys").mkdir()
    shutil.copy2(ROOT / "keys" / "decode_layer.py", dest / "keys" / "decode_layer.py")
    (dest / ".gitignore").write_text("__pycache__/\n.regsurvey/\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "regsurvey demo", "GIT_AUTHOR_EMAIL": "demo@regsurvey",
           "GIT_COMMITTER_NAME": "regsurvey demo", "GIT_COMMITTER_EMAIL": "demo@regsurvey",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(dest), "-c", "commit.gpgsign=false", *args], env=env, check=True,
                       capture_output=True, timeout=60)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "decode layer: the demo suite")
    path = dest / DEMO_CHANGE_PATH
    text, count = re.subn(DEMO_CHANGE_PATTERN, DEMO_CHANGE_REPLACEMENT, path.read_text(), flags=re.MULTILINE)
    if count != 1:
        raise SystemExit(f"the demo's change no longer applies: {DEMO_CHANGE_PATH} has {count} matching lines")
    path.write_text(text)
    git("commit", "-q", "-am", DEMO_CHANGE_MESSAGE)


def prepare_diff(code: Path, repo: Path, store: Path, cache: Path, targets: str, jobs: int) -> None:
    """Both commits of the demo repository surveyed with the regsurvey at ``code`` into ``store`` (not
    measured; ``cache``: a Triton cache that may be warm, shared by the versions: it only saves compiling).
    Every key: a survey of some keys (``--key``) is never reused from the store, by either version."""
    for rev in ("HEAD~1", "HEAD"):
        cli(code, ["run", "--commit", rev, "-q", "--target", targets, "-j", str(jobs), "--store", str(store)],
            repo, version_env(code, cache))


def diff_once(code: Path, repo: Path, store: Path, cache: Path, targets: str, fmt: str) -> float:
    """``regsurvey diff HEAD~1 HEAD`` of two stored surveys: wall seconds. ``cache`` must not exist: a diff
    that compiled (did not reuse the stored surveys) is an error of the benchmark."""
    wall, _ = cli(code, ["diff", "HEAD~1", "HEAD", "-q", "--target", targets, "--store", str(store),
                         "--format", fmt], repo, version_env(code, cache))
    if cache.exists() and any(cache.iterdir()):
        raise SystemExit(f"the diff with {code} compiled (its Triton cache {cache} filled): the stored surveys "
                         "were not reused, so its time is not a diff's")
    return wall


def start_server(code: Path, srv_dir: Path, cache: Path) -> dict[str, str]:
    """A warm `regsurvey server` of the checkout at ``code``, sockets in ``srv_dir``; the environment of a
    survey that uses it (never one that starts another). Started outside either checkout: ``python -m``
    puts its working directory first on the path, before PYTHONPATH."""
    env = version_env(code, cache, REGSURVEY_SERVER="use", REGSURVEY_SERVER_DIR=str(srv_dir),
                      REGSURVEY_WORKER_START="server")
    out = subprocess.run([sys.executable, "-m", "regsurvey", "server", "start"], cwd=srv_dir.parent, env=env,
                         capture_output=True, text=True, check=False, timeout=120)
    if out.returncode != 0:
        log = re.search(r"log: ([^)\s]+)", out.stderr)
        tail = Path(log.group(1)).read_text()[-3000:] if log and Path(log.group(1)).is_file() else ""
        raise SystemExit(f"regsurvey server start with {code} failed:\n{out.stderr[-3000:]}\n{tail}")
    return env


def stop_server(env: dict[str, str]) -> None:
    where = Path(env["REGSURVEY_SERVER_DIR"]).parent
    subprocess.run([sys.executable, "-m", "regsurvey", "server", "stop"], cwd=where, env=env, capture_output=True,
                   check=False, timeout=120)


def lint_null_vs_empty(a: Any, b: Any) -> bool:
    """One side not linted (``null``), the other linted with no finding (``[]``)."""
    return (a is None and b == []) or (a == [] and b is None)


def classified_differences(old: dict[str, Any], new: dict[str, Any]) -> dict[str, list[str]]:
    """Every difference between two surveys' rows, one line each, grouped: ``rows`` (a row only in one),
    ``identity`` (status, kernel, Triton hash, error, object sha256), ``figures`` (resources),
    ``lint null vs []`` (one version did not lint, the other found nothing), ``lint`` (findings differ,
    or one version did not lint where the other found something)."""
    def by_id(data: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
        return {(r["key"], r["target"], r["launch"], r["config"]): r for r in data["rows"]}

    before, after = by_id(old), by_id(new)
    groups: dict[str, list[str]] = {"rows": [], "identity": [], "figures": [], "lint null vs []": [], "lint": []}
    groups["rows"] += [f"{ref}: only in the old survey" for ref in sorted(before.keys() - after.keys(), key=str)]
    groups["rows"] += [f"{ref}: only in the new survey" for ref in sorted(after.keys() - before.keys(), key=str)]
    for ref in sorted(before.keys() & after.keys(), key=str):
        a, b = before[ref], after[ref]
        for field in ("status", "kernel", "triton_hash", "error"):
            if a.get(field) != b.get(field):
                groups["identity"].append(f"{ref}: {field} {a.get(field)!r} -> {b.get(field)!r}")
        if (a.get("object") or {}).get("sha256") != (b.get("object") or {}).get("sha256"):
            groups["identity"].append(f"{ref}: object sha256 differs")
        ra, rb = a.get("resources") or {}, b.get("resources") or {}
        for name in sorted(set(ra) | set(rb)):
            if ra.get(name) != rb.get(name):
                groups["figures"].append(f"{ref}: {name} {ra.get(name)} -> {rb.get(name)}")
        la, lb = a.get("lint"), b.get("lint")
        if la != lb:
            if la is None or lb is None:
                line = f"{ref}: linted {la is not None} -> {lb is not None} (findings after: {len(lb or [])})"
                groups["lint null vs []" if lint_null_vs_empty(la, lb) else "lint"].append(line)
            else:
                groups["lint"].append(f"{ref}: lint findings {len(la)} -> {len(lb)}")
    return groups


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Every difference between two surveys' rows, one line each."""
    return [line for lines in classified_differences(old, new).values() for line in lines]


def verdict(old: float, new: float, tolerance: float) -> str:
    ratio = new / old
    pct = f"{tolerance * 100:g}%"
    if ratio > 1 + tolerance:
        return f"NOT within {pct} (new {100 * (ratio - 1):.1f}% slower)"
    if ratio < 1 - tolerance:
        return f"within {pct} (new {100 * (1 - ratio):.1f}% faster)"
    return f"within {pct}"


def report(args: argparse.Namespace, walls: dict[str, dict[str, list[float]]], labels: dict[str, str],
           surveys: dict[str, dict[str, Any]], runs: int) -> None:
    """The medians, their ratios and verdicts, and the rows compared."""
    print(f"\n{args.targets}, -j {args.jobs}, {runs} runs each (interleaved), median wall seconds:")
    done = [p for p in labels if all(walls[v][p] for v in ("old", "new"))]
    for phase in done:
        old, new = (statistics.median(walls[v][phase]) for v in ("old", "new"))
        print(f"  {labels[phase]}: old {old:.2f} s, new {new:.2f} s, new/old {new / old:.3f}")
    if "old" in surveys and "new" in surveys:
        groups = classified_differences(surveys["old"], surveys["new"])
        lines = [line for group in groups.values() for line in group]
        print(f"\nrows compared: {len(surveys['new']['rows'])}; differences: {len(lines)}")
        print("  " + "; ".join(f"{name}: {len(group)}" for name, group in groups.items()) +
              "   (lint null vs []: one version did not lint a build, the other linted it and found nothing)")
        for name, group in groups.items():
            for line in group:
                print(f"  [{name}] {line}")
    print(f"\nverdicts (new/old of the medians; within {args.tolerance * 100:g}%: at most "
          f"{1 + args.tolerance:.2f}):")
    for phase in done:
        old, new = (statistics.median(walls[v][phase]) for v in ("old", "new"))
        print(f"  {labels[phase]}: new/old {new / old:.3f}: {verdict(old, new, args.tolerance)}")
    for phase in labels:
        if phase not in done:
            print(f"  {labels[phase]}: not measured")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout of regsurvey before the change")
    parser.add_argument("--targets", default="gfx942,gfx950,sm90")
    parser.add_argument("--jobs", type=int, default=2, help="workers of the cold survey and its warm re-run")
    parser.add_argument("--key", action="append", default=[], help="only keys matching (glob); repeatable")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--diff", action="store_true",
                        help="also time `regsurvey diff HEAD~1 HEAD` of the demo's two commits, both stored")
    parser.add_argument("--diff-format", default="table", choices=("table", "json", "markdown"),
                        help="the diff's output format (default: table)")
    parser.add_argument("--diff-targets", default=None,
                        help="the diff's targets (default: --targets); it takes every key, whatever --key says")
    parser.add_argument("--server-jobs", type=int, default=None, metavar="N",
                        help="also time a cold survey at -j N whose workers a warm `regsurvey server` forks")
    parser.add_argument("--tolerance", type=float, default=0.03,
                        help="a measurement is within it when new/old <= 1 + tolerance (default 0.03)")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _on_sigterm)
    versions = {"old": args.old.resolve(), "new": ROOT}
    diff_targets = args.diff_targets or args.targets
    labels = {"cold": "cold", "warm": "warm"}
    if args.diff:
        labels["diff"] = f"diff ({diff_targets}, every key)"
    if args.server_jobs:
        labels["server"] = f"server -j {args.server_jobs} cold"
    walls: dict[str, dict[str, list[float]]] = {v: {p: [] for p in labels} for v in versions}
    surveys: dict[str, dict[str, Any]] = {}
    servers: dict[str, dict[str, str]] = {}
    runs = 0
    # Short: the servers' sockets live in it (a Unix socket's path has a limit of about 100 characters).
    tmp = tempfile.mkdtemp(prefix="rs-ba-", dir="/tmp")
    try:
        import triton

        print(f"machine: {len(os.sched_getaffinity(0))} usable cores; Python {sys.version.split()[0]}; "
              f"Triton {triton.__version__}; old {versions['old']}, new {ROOT}", flush=True)
    except ImportError:
        pass
    try:
        project = Path(tmp) / "demo"
        for part in ("keys", "decode_layer"):
            shutil.copytree(ROOT / part, project / part, ignore=shutil.ignore_patterns("__pycache__"))
        repo = Path(tmp) / "demo-repo"
        if args.diff:
            build_demo_repo(repo)
        for i in range(args.repeat):
            order = list(versions.items()) if i % 2 == 0 else list(reversed(versions.items()))
            for name, code in order:
                run = Path(tmp) / f"{name}-{i}"
                cold, data = survey(code, project, run / "store", run / "triton", args.targets, args.jobs, args.key)
                warm, _ = survey(code, project, run / "store", run / "triton", args.targets, args.jobs, args.key)
                walls[name]["cold"].append(cold)
                walls[name]["warm"].append(warm)
                surveys.setdefault(name, data)
                print(f"run {i + 1} {name}: cold {cold:.1f} s, warm {warm:.2f} s, {len(data['rows'])} rows", flush=True)
            if args.diff:
                if i == 0:  # both versions' stores first (not measured), sharing one Triton cache
                    for name, code in order:
                        prepare_diff(code, repo, Path(tmp) / f"diff-{name}" / "store", Path(tmp) / "diff-triton",
                                     diff_targets, len(os.sched_getaffinity(0)))
                for name, code in order:
                    wall = diff_once(code, repo, Path(tmp) / f"diff-{name}" / "store",
                                     Path(tmp) / f"diff-{name}" / f"triton-{i}", diff_targets, args.diff_format)
                    walls[name]["diff"].append(wall)
                    print(f"run {i + 1} {name}: diff {wall:.2f} s", flush=True)
            if args.server_jobs:
                for name, code in order:
                    run = Path(tmp) / f"{name}-{i}"
                    srv = Path(tmp) / f"srv-{name}"
                    store = run / "store-server"
                    store.mkdir()
                    if (run / "store" / "costs.json").exists():  # key costs known, as in a store in daily use
                        shutil.copy(run / "store" / "costs.json", store / "costs.json")
                    servers[name] = start_server(code, srv, run / "triton-server-own")
                    try:
                        env = dict(servers[name], TRITON_CACHE_DIR=str(run / "triton-server"))
                        wall, data = survey(code, project, store, run / "triton-server", args.targets,
                                            args.server_jobs, args.key, env)
                    finally:
                        stop_server(servers.pop(name))
                    walls[name]["server"].append(wall)
                    forked = (data.get("timing") or {}).get("workers_from_server", 0)
                    print(f"run {i + 1} {name}: server -j {args.server_jobs} cold {wall:.1f} s, {len(data['rows'])} "
                          f"rows, workers from the server {forked:.0f}"
                          + ("" if forked else "  (NONE: this run measured no server)"), flush=True)
            runs = i + 1
    except (Stopped, KeyboardInterrupt):
        print(f"\nstopped during run {runs + 1}: what was measured so far", flush=True)
        report(args, walls, labels, surveys, runs)
        return 1
    finally:
        for env in servers.values():
            stop_server(env)
        shutil.rmtree(tmp, ignore_errors=True)
    report(args, walls, labels, surveys, runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
