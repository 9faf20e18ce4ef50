"""`regsurvey run` end to end on throwaway repositories: results, commits, and failures as results."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.model.results import SCHEMA_VERSION, Row

from ..conftest import PTXAS_VARIABLES, commit_all, git, write_stand_in_ptxas
from .runner import unwrapped

BROKEN_KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def bad_arange(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # BLOCK = 3 is not a power of two: a compile error
    tl.store(out_ptr + offs, offs)
'''

BAD_KEYS = '''
import time

import regsurvey as rs
from toykernels import broken

matrix = rs.Matrix(targets=["sm90"], n=[3])


@matrix.kind(axes=["n"])
def wont_compile(n):
    out = rs.tensor((16,), "int32")
    broken.bad_arange[(1,)](out, BLOCK=n)


@matrix.kind(axes=["n"])
def raises(n):
    x = rs.tensor((4, 4), "bf16")
    return x.shape[7]  # IndexError in the kind body


@matrix.kind(axes=["n"])
def hangs(n):
    time.sleep(600)


@matrix.kind(axes=["n"])
def launches_nothing(n):
    pass


@matrix.kind(axes=["n"])
def dies(n):
    import os
    os._exit(3)  # the worker process goes: this key is an error row, a new worker takes the rest
'''


def regsurvey(*args: str, cwd: Path, check: bool = False) -> subprocess.CompletedProcess:
    """Run the CLI as a user would (a fresh interpreter)."""
    return subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=cwd, capture_output=True,
                          text=True, check=check, timeout=900)


def survey_json(repo: Path, *args: str) -> dict:
    out = regsurvey("run", "--format", "json", "-q", *args, cwd=repo)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def worktrees(repo: Path) -> list[str]:
    return [line for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def start_commit_survey(repo: Path, kind: str, group: bool) -> subprocess.Popen:
    """``regsurvey run --commit HEAD --kind KIND`` started in ``repo`` (in a process group of its own
    with ``group``), returned once it has begun its temporary worktree (git lists it from the start of
    ``git worktree add``); what the survey printed if it ended first."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "regsurvey", "run", "-q", "--commit", "HEAD", "--kind", kind],
                            cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=group,
                            # as from a terminal, even where the test runner ignores SIGINT
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while len(worktrees(repo)) < 2:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"the survey never began its worktree (exit {proc.returncode}): {out}{err}")
        time.sleep(0.02)
    return proc


def interrupt_and_check_the_worktree_is_gone(repo: Path, proc: subprocess.Popen, signame: str, group: bool) -> None:
    """Send ``signame`` to the survey (to its whole process group with ``group``, as a terminal's
    Ctrl-C does); it must end with one line, having removed its worktree and git's entry for it."""
    import signal

    if group:
        os.killpg(proc.pid, getattr(signal, signame))
    else:
        proc.send_signal(getattr(signal, signame))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert len(worktrees(repo)) == 1, err
    admin = repo / ".git" / "worktrees"
    assert not admin.exists() or not list(admin.iterdir())
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "regsurvey: interrupted", err


def test_failures_are_results_and_other_keys_still_survey(toy_repo: Path) -> None:
    (toy_repo / "toykernels" / "broken.py").write_text(BROKEN_KERNELS)
    (toy_repo / "keys" / "zz_bad.py").write_text(BAD_KEYS)
    out = regsurvey("run", "--format", "json", "-q", "--target", "sm90", "--timeout", "12", "-j", "2",
                    "--kind", "wont_compile", "--kind", "raises", "--kind", "hangs",
                    "--kind", "launches_nothing", "--kind", "dies", "--kind", "scale", cwd=toy_repo)
    assert out.returncode == 0, out.stderr
    rows = {r["key"]: r for r in json.loads(out.stdout)["rows"]}
    assert rows["wont_compile/n3"]["status"] == "error"
    assert rows["wont_compile/n3"]["kernel"] == "bad_arange"
    # The cause, as the table shows it: Triton's message after the location line.
    assert Row.from_dict(rows["wont_compile/n3"]).error_line == "arange's range must be a power of 2"
    assert rows["raises/n3"]["status"] == "error"
    line = BAD_KEYS.splitlines().index("    return x.shape[7]  # IndexError in the kind body") + 1
    first, *traceback = rows["raises/n3"]["error"].splitlines()
    assert first == f"kind body raised at keys/zz_bad.py:{line}: IndexError: tuple index out of range"
    # Then Python's traceback, from the kind body down, its paths relative to the checkout.
    assert traceback == ["Traceback (most recent call last):", f'  File "keys/zz_bad.py", line {line}, in raises',
                         "    return x.shape[7]  # IndexError in the kind body",
                         *traceback[3:-1], "IndexError: tuple index out of range"], traceback
    assert rows["hangs/n3"]["status"] == "error" and "timed out after 12 s" in rows["hangs/n3"]["error"]
    assert rows["launches_nothing/n3"]["status"] == "error"
    assert "launched no kernel" in rows["launches_nothing/n3"]["error"]
    assert rows["dies/n3"]["error"] == "worker process died while surveying the key (exit code 3)"
    assert all(rows[k]["status"] == "ok" for k in rows if k.startswith("scale/")), rows
    # --strict turns failures into exit status 1.
    strict = regsurvey("run", "-q", "--strict", "--target", "sm90", "--kind", "launches_nothing", cwd=toy_repo)
    assert strict.returncode == 1
    # The table ends with where the time went: all four from the results the first survey stored, and none
    # of their kind bodies run again (nothing they read changed).
    table = regsurvey("run", "-q", "-j", "1", "--target", "sm90", "--kind", "scale", cwd=toy_repo)
    lines = table.stdout.strip().splitlines()
    summary = next(i for i, line in enumerate(lines) if line.startswith("4 keys on sm90: 4 builds (4 ok, 0 failed);"))
    tail = unwrapped(lines[summary:])  # (a line past the table's width wraps: 80 columns under pytest's readline)
    assert re.fullmatch(r"made \S+ on 1 worker in [\d.]+ s: 0 launches compiled in 0\.0 s of compile time, "
                        r"4 reused, 0 failed, 4 keys not run \(nothing they read changed\); regsurvey's own work "
                        r"[\d.]+ s.*", tail[1]), tail[1]
    assert tail[2:4] == ["spills: none", "failures: none"] and tail[4].startswith("lowest occupancy: sm90 ")


def test_commit_survey_uses_a_temporary_worktree_and_ignores_edits(toy_repo: Path) -> None:
    ops = toy_repo / "toykernels" / "ops.py"
    # Second commit: a bigger GEMM tile.
    ops.write_text(ops.read_text().replace("block_n: int = 64", "block_n: int = 128"))
    head = commit_all(toy_repo, "bigger tile")
    # Uncommitted edit that breaks the kernels module: HEAD~1 must not see it.
    ops.write_text("raise RuntimeError('uncommitted edit')\n")
    before = git(toy_repo, "status", "--porcelain")
    data = survey_json(toy_repo, "--commit", "HEAD~1", "--kind", "gemm", "--target", "sm90")
    assert data["commit"] == git(toy_repo, "rev-parse", "HEAD~1") != head
    assert all(r["status"] == "ok" for r in data["rows"]) and len(data["rows"]) == 2
    assert git(toy_repo, "status", "--porcelain") == before
    assert len(worktrees(toy_repo)) == 1  # only the main one
    assert ops.read_text() == "raise RuntimeError('uncommitted edit')\n"
    # The working tree survey sees the edit: the keys file fails to import (one line, then the frames).
    out = regsurvey("run", "-q", "--kind", "gemm", cwd=toy_repo)
    assert out.returncode == 2
    assert out.stderr.splitlines()[0] == ("regsurvey: error: keys file keys/toy.py:3 raised RuntimeError: uncommitted "
                                          "edit (in toykernels/ops.py:1, <module>)"), out.stderr


def test_stored_survey_per_commit_and_target(toy_repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    data = survey_json(toy_repo, "--commit", "HEAD", "--store", str(store))
    sha = git(toy_repo, "rev-parse", "HEAD")
    # A survey of some kinds only is kept apart: it never stands in for the whole commit.
    partial = survey_json(toy_repo, "--commit", "HEAD", "--kind", "scale", "--store", str(store))
    assert {r["kind"] for r in partial["rows"]} == {"scale"}
    (kept,) = (store / "surveys" / sha / "partial").glob("*/sm90.json")  # under the selection's own folder
    assert json.loads(kept.read_text())["rows"]
    for target in ("gfx950", "sm90"):
        stored = json.loads((store / "surveys" / sha / f"{target}.json").read_text())
        assert stored["schema_version"] == SCHEMA_VERSION and stored["targets"] == [target]
        assert {r["key"] for r in stored["rows"]} == {r["key"] for r in data["rows"] if r["target"] == target}
        for row in stored["rows"]:
            assert (store / row["object"]["path"]).is_file()


def test_a_target_the_triton_in_use_cannot_build_for_is_one_line(toy_repo: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: Triton made to run a ptxas older than sm103 (CUDA 12.0's, a stand-in) cannot build for it, as its
    probe finds, and says so before anything compiles. Triton 3.9 writes the PTX version that ptxas reads, which
    LLVM cannot write sm_103a in (LLVM ends the probe's process); 3.6 hands ptxas the PTX, which it refuses."""
    import triton

    ptxas = write_stand_in_ptxas(tmp_path / "ptxas", "12.0", refuses=("sm_103a",))
    for variable in PTXAS_VARIABLES:
        monkeypatch.setenv(variable, str(ptxas))
    out = regsurvey("run", "-q", "--target", "sm103", "--store", str(tmp_path / "store"), cwd=toy_repo)
    assert (out.returncode, out.stdout) == (2, ""), out.stderr
    assert out.stderr in [f"regsurvey: error: target sm103: Triton {triton.__version__} cannot build for it (its CUDA "
                          f"12.0 ptxas {ptxas} {why}); Triton 3.6 or newer can, with the compilers it ships\n"
                          for why in ("reads PTX 8.0, too old for sm_103a", "does not know sm_103a")], out.stderr
    assert list((tmp_path / "store").rglob("*.cubin")) == []


@pytest.mark.parametrize(("args", "message"), [
    (("--target", "gfx999"), "unknown target 'gfx999'; known targets: gfx942, gfx950, gfx1100, gfx1151, gfx1201, "
                             "gfx1250, sm90, sm100, sm103, sm120"),
    (("--commit", "no-such-rev"), "unknown revision 'no-such-rev' in {repo}"),
])
def test_bad_input_is_one_line(toy_repo: Path, args: tuple[str, ...], message: str) -> None:
    out = regsurvey("run", "-q", *args, cwd=toy_repo)
    assert out.returncode == 2
    assert out.stdout == "" and out.stderr == f"regsurvey: error: {message.format(repo=toy_repo)}\n"


def test_checkout_without_keys_is_an_error(tmp_path: Path) -> None:
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README").write_text("no keys here\n")
    commit_all(repo, "no keys")
    out = regsurvey("run", "-q", "--commit", "HEAD", cwd=repo)
    assert out.returncode == 2 and "no keys/ directory" in out.stderr
    assert len(worktrees(repo)) == 1


def test_keys_file_that_raises_names_file_and_line(toy_repo: Path) -> None:
    (toy_repo / "keys" / "broken.py").write_text("import regsurvey as rs\n\nx = 1 / 0\n")
    out = regsurvey("run", "-q", cwd=toy_repo)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "regsurvey: error: keys file keys/broken.py:3 raised ZeroDivisionError: division by zero")


def test_a_keys_file_that_does_not_parse_names_its_line(toy_repo: Path) -> None:
    # Issue #12, defect 10: the compiler's file and line, not importlib's frame.
    (toy_repo / "keys" / "broken.py").write_text("import regsurvey as rs\n\nx = (\n")
    out = regsurvey("run", "-q", cwd=toy_repo)
    assert (out.returncode, out.stderr) == (2, "regsurvey: error: keys file keys/broken.py:3 raised SyntaxError: "
                                               "'(' was never closed\n")
    (toy_repo / "keys" / "broken.py").write_text("import regsurvey as rs\nfrom toykernels import syntax\n")
    (toy_repo / "toykernels" / "syntax.py").write_text("def f(:\n    pass\n")
    out = regsurvey("run", "-q", cwd=toy_repo)
    assert (out.returncode, out.stderr) == (2, "regsurvey: error: keys file keys/broken.py raised SyntaxError: "
                                               "invalid syntax (in toykernels/syntax.py:1)\n")


@pytest.mark.parametrize(("signame", "group", "wait"), [
    ("SIGINT", False, 3.0), ("SIGTERM", False, 3.0),
    # A terminal's Ctrl-C reaches the whole process group: forkserver and workers too, while they
    # compile (3 s in) or while they are still starting (at once).
    ("SIGINT", True, 3.0), ("SIGINT", True, 0.0),
])
def test_interrupted_commit_survey_removes_its_worktree(toy_repo: Path, signame: str, group: bool,
                                                        wait: float) -> None:
    import time

    (toy_repo / "keys" / "zz_slow.py").write_text(
        "import time\nimport regsurvey as rs\nm = rs.Matrix(targets=['sm90'], n=[1])\n\n"
        "@m.kind(axes=['n'])\ndef slow(n):\n    time.sleep(600)\n")
    commit_all(toy_repo, "slow kind")
    proc = start_commit_survey(toy_repo, "slow", group)
    time.sleep(wait)  # let the worker start on the slow key
    interrupt_and_check_the_worktree_is_gone(toy_repo, proc, signame, group)
    if group:  # nothing of the survey is left running: not the forkserver, not a worker
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("processes of the interrupted survey are still running")


@pytest.mark.parametrize(("signame", "group"), [("SIGINT", False), ("SIGTERM", False), ("SIGINT", True)])
def test_interrupt_while_git_checks_the_commit_out_leaves_no_worktree(toy_repo: Path, signame: str,
                                                                      group: bool) -> None:
    """Killed in the middle of its checkout, ``git worktree add`` leaves an entry locked as
    "initializing" that prune keeps: git must be let finish, then the worktree removed. A smudge
    filter that sleeps holds git in its checkout while the signal arrives."""
    import time

    git(toy_repo, "config", "filter.slow.smudge", "sleep 3; cat")
    git(toy_repo, "config", "filter.slow.clean", "cat")
    (toy_repo / ".gitattributes").write_text("*.slow filter=slow\n")
    (toy_repo / "held.slow").write_text("checked out through a filter that sleeps\n")
    commit_all(toy_repo, "a file that checks out slowly")
    proc = start_commit_survey(toy_repo, "scale", group)
    time.sleep(0.5)  # git is in its checkout, in the filter's sleep
    assert proc.poll() is None
    interrupt_and_check_the_worktree_is_gone(toy_repo, proc, signame, group)


def test_workers_forked_or_spawned_give_the_same_rows_and_timing(toy_repo: Path, tmp_path: Path) -> None:
    """Workers fork from a forkserver that imported torch and Triton and finish keys in a process of
    their own; spawned ones finishing on a thread must agree exactly."""
    surveys = {}
    for method, finish in (("forkserver", "process"), ("spawn", "thread")):
        out = subprocess.run(
            [sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "-j", "2", "--target", "gfx950,sm90",
             "--kind", "scale", "--store", str(tmp_path / method)],
            cwd=toy_repo, capture_output=True, text=True, timeout=900,
            env={**os.environ, "REGSURVEY_WORKER_START": method, "REGSURVEY_FINISH": finish,
                 "TRITON_CACHE_DIR": str(tmp_path / f"tc-{method}")})
        assert out.returncode == 0, out.stderr
        surveys[method] = json.loads(out.stdout)
    strip = ("compile_s", "stage_s", "reused")  # which of two workers compiles a shared kernel first is a race
    rows = {m: [{k: v for k, v in r.items() if k not in strip} for r in s["rows"]] for m, s in surveys.items()}
    assert rows["forkserver"] == rows["spawn"] and len(rows["spawn"]) == 8
    for survey in surveys.values():
        timing = survey["timing"]
        assert timing["jobs"] == 2 and timing["wall_s"] >= timing["list_s"] > 0
        # The compile seconds the rows report (hashing included) are the ones the timing block sums,
        # within rounding: its compile seconds no more, with its hash seconds no less. (Hashing a
        # launch another worker has meanwhile finished, then reused, counts in hash_s only; in a
        # spawned worker the first hash also hashes Triton's sources, a third of a second.)
        compiled = sum(r["compile_s"] for r in survey["rows"] if not r["reused"])
        slack = 0.05 + 0.01 * compiled
        assert timing["compile_s"] <= compiled + slack
        assert timing["compile_s"] + timing["hash_s"] >= compiled - slack
        assert timing["compile_s"] > 0 and timing["analyze_s"] > 0 and timing["store_s"] > 0
        assert 200 < timing["worker_peak_rss_mb"] < 4000  # torch and Triton imported, a few kernels compiled
    # Forked workers came with torch and Triton imported; spawned ones imported them.
    # (Workers survey one target each: two targets at -j 2 start two or more.)
    # A worker started late (for a target whose keys then ran out) can be closed before it says
    # anything, and so before it is counted as preloaded: at least the two that surveyed were.
    forked = surveys["forkserver"]["timing"]
    assert 2 <= forked["workers_preloaded"] <= forked["workers_started"]
    assert surveys["spawn"]["timing"]["workers_preloaded"] == 0


def test_untracked_files_make_the_tree_modified(toy_repo: Path) -> None:
    """An untracked keys file is surveyed: the working tree is not HEAD's stored survey."""
    head = survey_json(toy_repo, "--kind", "scale", "--target", "sm90")
    assert head["dirty"] is False and head["commit"] == git(toy_repo, "rev-parse", "HEAD")
    # Bytecode caches an import writes, and a report written to reports/, are not inputs.
    (toy_repo / "toykernels" / "__pycache__").mkdir()
    (toy_repo / "toykernels" / "__pycache__" / "ops.cpython-311.pyc").write_bytes(b"\0")
    report = regsurvey("diff", "HEAD", "--format", "html", cwd=toy_repo)
    assert report.returncode == 0, report.stderr
    assert survey_json(toy_repo, "--kind", "scale", "--target", "sm90")["dirty"] is False
    (toy_repo / "keys" / "extra.py").write_text(
        "import regsurvey as rs\nfrom toykernels import ops\n\n"
        "matrix = rs.Matrix(targets=['sm90'], width=[4])\n\n\n"
        "@matrix.kind(axes=['width'])\ndef extra(width):\n"
        "    ops.scale(rs.tensor((width, 4096), 'bf16'), 0.5, stop=False)\n")
    data = survey_json(toy_repo, "--target", "sm90")
    assert data["dirty"] is True and data["commit"] is None
    assert [r["status"] for r in data["rows"] if r["kind"] == "extra"] == ["ok"]


# A launcher in the style of real libraries: the arch is read once at import (from Triton's active
# driver, which fails with no device), the device's properties are cached on first use, and both
# choose compile options.
ARCH_CACHING_LIBRARY = '''
import functools

import torch
import triton
from triton.runtime import driver

from toykernels.ops import scale_rows

ARCH = driver.active.get_current_target().arch  # at import, as libraries do


@functools.lru_cache
def properties():
    return torch.cuda.get_device_properties(0)


def scale(x):
    out = torch.empty_like(x)
    stages = 2 if ARCH in ("gfx950", 90) else 1
    warps = 8 if properties().multi_processor_count == 256 else 4  # MI355X's 256 CUs
    scale_rows[(x.shape[0],)](x, out, x.shape[1], x.stride(0), 0.5, BLOCK=1024, STOP=False,
                              num_stages=stages, num_warps=warps)
'''

ARCH_CACHING_KEYS = '''
import regsurvey as rs
from toykernels import archlib

matrix = rs.Matrix(targets=["gfx942", "gfx950", "sm90"], width=[2])


@matrix.kind(axes=["width"])
def cached_arch(width):
    archlib.scale(rs.tensor((width, 1024), "bf16"))
'''


def test_every_target_sees_a_fresh_import_made_for_it(toy_repo: Path) -> None:
    """One worker surveys all three targets: each must see the project imported for itself."""
    (toy_repo / "toykernels" / "archlib.py").write_text(ARCH_CACHING_LIBRARY)
    (toy_repo / "keys" / "arch.py").write_text(ARCH_CACHING_KEYS)
    for jobs in ("1", "2"):
        data = survey_json(toy_repo, "--kind", "cached_arch", "-j", jobs, "--force")
        got = {r["target"]: (r["status"], r["num_stages"], r["num_warps"]) for r in data["rows"]}
        assert got == {"gfx942": ("ok", 1, 4), "gfx950": ("ok", 2, 8), "sm90": ("ok", 2, 4)}, data["rows"]
        # One import per target at -j 1 (the listing worker, sm90, serves its own target's keys).
        assert data["timing"]["workers_started"] >= 3


def test_a_library_raising_at_import_names_the_keys_file_then_the_library(toy_repo: Path) -> None:
    (toy_repo / "toykernels" / "needsgpu.py").write_text(
        "import torch\n\nif torch.cuda.get_device_properties(0).major < 10:\n"
        "    raise RuntimeError('needs Blackwell')\n")
    (toy_repo / "keys" / "zz_lib.py").write_text("import regsurvey as rs\nimport toykernels.needsgpu\n")
    out = regsurvey("run", "-q", "--target", "sm90", cwd=toy_repo)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "regsurvey: error: keys file keys/zz_lib.py:2 raised RuntimeError: needs Blackwell "
        "(in toykernels/needsgpu.py:4, <module>)\n"
        "  keys/zz_lib.py:2 in <module>: import toykernels.needsgpu\n"
        "  toykernels/needsgpu.py:4 in <module>: raise RuntimeError('needs Blackwell')")
    # Imported with sm100 as the device, the same library loads.
    on_sm100 = regsurvey("run", "-q", "--target", "sm100", "--kind", "scale", cwd=toy_repo)
    assert on_sm100.returncode == 0 and "error" not in on_sm100.stderr, on_sm100.stderr


ARCH_CHECK_LIBRARY = '''"""Checks the device when imported, two calls deep."""

import torch


def _require_blackwell(feature):
    if torch.cuda.get_device_properties(0).major < 10:
        raise RuntimeError(f"{feature} needs Blackwell")


def configure():
    _require_blackwell("the tcgen05 GEMM")


configure()
'''


def test_a_keys_file_whose_library_raises_deeper_shows_the_frames_between(toy_repo: Path) -> None:
    """Issue #30, item 8: not only the innermost frame. The first line says where and why; the frames
    follow from the keys file's line down to the raising line; ``--format json`` gives Python's whole
    traceback."""
    (toy_repo / "toykernels" / "archcheck.py").write_text(ARCH_CHECK_LIBRARY)
    (toy_repo / "keys" / "zz_arch.py").write_text("import regsurvey as rs\nimport toykernels.archcheck\n")
    message = ("keys file keys/zz_arch.py:2 raised RuntimeError: the tcgen05 GEMM needs Blackwell "
               "(in toykernels/archcheck.py:8, _require_blackwell)\n"
               "  keys/zz_arch.py:2 in <module>: import toykernels.archcheck\n"
               "  toykernels/archcheck.py:15 in <module>: configure()\n"
               "  toykernels/archcheck.py:12 in configure: _require_blackwell(\"the tcgen05 GEMM\")\n"
               "  toykernels/archcheck.py:8 in _require_blackwell: raise RuntimeError(f\"{feature} needs Blackwell\")")
    out = regsurvey("run", "-q", "--target", "sm90", cwd=toy_repo)
    assert (out.returncode, out.stdout, out.stderr) == (2, "", f"regsurvey: error: {message}\n")
    out = regsurvey("run", "-q", "--target", "sm90", "--format", "json", cwd=toy_repo)
    assert (out.returncode, out.stderr) == (2, f"regsurvey: error: {message}\n")
    data = json.loads(out.stdout)
    assert data["error"] == message
    lines = data["traceback"].splitlines()
    assert lines[0] == "Traceback (most recent call last):" and lines[-1] == (
        "RuntimeError: the tcgen05 GEMM needs Blackwell")
    frames = [line.strip() for line in lines if line.startswith('  File "')]
    assert frames[0] == 'File "keys/zz_arch.py", line 2, in <module>'
    assert frames[-3:] == ['File "toykernels/archcheck.py", line 15, in <module>',
                           'File "toykernels/archcheck.py", line 12, in configure',
                           'File "toykernels/archcheck.py", line 8, in _require_blackwell']


CHATTY_KEYS = '''
import regsurvey as rs
from toykernels import ops

print("keys file imported")  # libraries print when imported (FlagGems: "[Note] ..."), kind bodies too

matrix = rs.Matrix(targets=["sm90"], width=[2])


@matrix.kind(axes=["width"])
def chatty(width):
    print("surveying", width, flush=True)
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)
'''


def test_what_the_project_prints_stays_off_the_json(toy_repo: Path) -> None:
    (toy_repo / "keys" / "zz_chatty.py").write_text(CHATTY_KEYS)
    out = regsurvey("run", "--format", "json", "-q", "--kind", "chatty", cwd=toy_repo)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    assert [r["status"] for r in rows] == ["ok"]
    # Printed while the kind body runs: kept with the key; printed at import: on stderr.
    assert any("surveying 2" in m for m in rows[0]["messages"]) and "surveying 2" not in out.stderr


ONCE_LIBRARY = '''
"""A launcher that names the tuned config file it loads once per process (a logger.info inside an
lru_cache'd loader, as vLLM's get_moe_configs and info_once do), warns once per process through a
set-guarded logger without a handler, and logs a line of its own for every launch."""

import functools
import logging
import os

from toykernels import ops

logger = logging.getLogger(__name__)
logger.propagate = False  # no handler anywhere: its warnings go through logging.lastResort to stderr
_warned = set()


@functools.lru_cache(maxsize=None)
def block_for(n_cols):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", f"N={n_cols},device=toy.json")
    logger.info("Using configuration from %s", path)
    return 64


def warn_once(text):
    if text not in _warned:
        _warned.add(text)
        logger.warning(text)


def scale(x):
    block_for(x.shape[1])
    warn_once("fused epilogue disabled on this device")
    logger.warning("scale: no tuned block for %d rows", x.shape[0])
    ops.scale(x, 0.5)
'''

ONCE_KEYS = '''
import regsurvey as rs
from toykernels import oncelib

matrix = rs.Matrix(targets=["sm90"], width=[2, 4, 8, 16])


@matrix.kind(axes=["width"])
def once(width):
    oncelib.scale(rs.tensor((width, 4096), "bf16"))
'''


def test_what_a_library_says_once_per_process_is_the_surveys_not_a_keys(toy_repo: Path, tmp_path: Path) -> None:
    """vLLM logs the config file its MoE launcher loads once per process: only the first key of each
    worker said it, which one depending on scheduling. Surveyed with one worker and with two (in a
    temporary worktree: --commit), the rows are the same, each with its own line only, and the survey
    holds the config line once, the file named relative to the checkout."""
    (toy_repo / "toykernels" / "oncelib.py").write_text(ONCE_LIBRARY)
    (toy_repo / "keys" / "zz_once.py").write_text(ONCE_KEYS)
    commit_all(toy_repo, "a launcher that says things once per process")
    surveys = [survey_json(toy_repo, "--commit", "HEAD", "--kind", "once", "-j", jobs, "--store", str(tmp_path / jobs))
               for jobs in ("1", "2")]
    for data in surveys:
        # Each key keeps what it says every time, once (not again as lastResort's stderr line).
        assert {r["key"]: r["messages"] for r in data["rows"]} == {
            f"once/width{w}": [f"WARNING toykernels.oncelib: scale: no tuned block for {w} rows"]
            for w in (2, 4, 8, 16)}, data["rows"]
        assert data["said_once"] == [
            {"kind": "once", "target": "sm90", "text": "INFO toykernels.oncelib: Using configuration from "
                                                       "toykernels/configs/N=4096,device=toy.json"},
            {"kind": "once", "target": "sm90", "text": "WARNING toykernels.oncelib: fused epilogue disabled "
                                                       "on this device"}]
    # The table says them under the keys' tables, from the stored survey.
    table = regsurvey("run", "-q", "--commit", "HEAD", "--kind", "once", "--store", str(tmp_path / "1"),
                      "--columns", "200", cwd=toy_repo)  # wide enough for each line whole
    assert ("said once per process (by whichever key of the kind ran first in a worker):\n"
            "  once on sm90: INFO toykernels.oncelib: Using configuration from "
            "toykernels/configs/N=4096,device=toy.json\n") in table.stdout, table.stdout


def test_a_relative_store_with_a_commit_keeps_its_objects(toy_repo: Path) -> None:
    # Issue #12, defect 0: the workers of a --commit survey run in a temporary worktree; a relative
    # --store must be the user's directory, not one inside the worktree that is deleted afterwards.
    data = survey_json(toy_repo, "--commit", "HEAD", "--target", "gfx950", "--store", "st")
    built = [r for r in data["rows"] if r["status"] == "ok"]
    assert built and all((toy_repo / "st" / r["object"]["path"]).is_file() for r in built)
    linted = regsurvey("lint", "-q", "--commit", "HEAD", "--target", "gfx950", "--store", "st", cwd=toy_repo)
    assert linted.returncode == 0, linted.stderr


def test_a_keys_file_that_ends_its_process_is_one_line(toy_repo: Path) -> None:
    # Issue #12, defect 5: os._exit at import ends the worker before it answers; no traceback.
    (toy_repo / "keys" / "exits.py").write_text("import os\n\nos._exit(3)\n")
    out = regsurvey("run", "-q", "--target", "sm90", cwd=toy_repo)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("regsurvey: error: the worker process ended while importing the keys files (exit code 3): "
                          "a keys file, or what it imports, ends its process\n")


def test_a_damaged_cost_table_only_loses_the_order(toy_repo: Path, tmp_path: Path) -> None:
    # Issue #12, defect 6: costs.json is valid JSON but not a map of seconds: the survey runs as if new.
    store = tmp_path / "store"
    store.mkdir()
    (store / "costs.json").write_text('{"sm90:scale/w2/stop": "slow", "x": true, "y": [1]}')
    data = survey_json(toy_repo, "--target", "sm90", "--kind", "scale", "--store", str(store))
    assert data["rows"] and all(r["status"] == "ok" for r in data["rows"])
    (store / "costs.json").write_text("[1, 2]")
    assert survey_json(toy_repo, "--target", "sm90", "--kind", "scale", "--store", str(store))["rows"]
