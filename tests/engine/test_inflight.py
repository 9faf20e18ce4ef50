"""No build compiled twice: a kernel (a Triton hash) in flight in one worker, or in another survey on the
same store, is awaited and its result reused, not compiled again.

Real surveys of the toy project under a keys file whose keys mostly launch one kernel (``scale``'s row
count only sizes the grid, so every width is the same build): whatever the order the workers take the
keys in, each distinct Triton hash has exactly one row that was compiled (``reused`` false).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ..conftest import commit_all

SHARED_KEYS = '''"""Twelve keys, three builds: every width of scale launches one kernel; gemm has a tile per width."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], small=[2, 64])


@matrix.kind(axes=["width"])
def scale(width):
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5, stop=True)


@matrix.kind(axes=["small"])
def gemm(small):
    ops.gemm(rs.tensor((small, 512), "bf16"), rs.tensor((512, 256), "bf16"))
'''


@pytest.fixture
def shared_repo(toy_repo: Path) -> Path:
    (toy_repo / "keys" / "toy.py").write_text(SHARED_KEYS)
    commit_all(toy_repo, "many keys, few builds")
    return toy_repo


def run(repo: Path, store: Path, triton_cache: Path, *args: str) -> subprocess.Popen[str]:
    """``regsurvey run --format json`` in the background, with a Triton cache of its own (cold: each
    compile takes the toolchain's real time, so that the workers' keys overlap)."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(triton_cache)}
    return subprocess.Popen([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--store", str(store),
                             *args], cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def rows_of(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    rows: list[dict[str, Any]] = json.loads(out)["rows"]
    assert rows and all(r["status"] == "ok" for r in rows), rows
    return rows


def compiles(rows: list[dict[str, Any]]) -> Counter[str]:
    """How many times each Triton hash was compiled (its rows that were not reused)."""
    return Counter(r["triton_hash"] for r in rows if not r["reused"])


def test_two_workers_compile_each_build_once(shared_repo: Path, tmp_path: Path) -> None:
    rows = rows_of(run(shared_repo, tmp_path / "store", tmp_path / "triton", "-j", "2", "-t", "gfx950"))
    hashes = {r["triton_hash"] for r in rows}
    assert len(rows) == 12 and len(hashes) == 3  # scale's one kernel, gemm's two tiles
    assert compiles(rows) == Counter(dict.fromkeys(hashes, 1))
    scale = [r for r in rows if r["kind"] == "scale"]
    assert sum(not r["reused"] for r in scale) == 1
    # A reused row is the compiled one's: the same object, figures and compile time.
    built = next(r for r in scale if not r["reused"])
    same = ("object", "resources", "compile_s", "triton_hash")
    assert all([r[f] for f in same] == [built[f] for f in same] for r in scale)
    assert built["resources"]["vgpr"] > 0 and built["compile_s"] > 0


def test_two_surveys_on_one_store_compile_each_build_once(shared_repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    procs = [run(shared_repo, store, tmp_path / f"triton{i}", "--commit", "HEAD", "-j", "1") for i in range(2)]
    one, two = (rows_of(p) for p in procs)
    assert [r["resources"] for r in one] == [r["resources"] for r in two]
    hashes = {r["triton_hash"] for r in one}
    assert len(hashes) == 3
    assert compiles(one + two) == Counter(dict.fromkeys(hashes, 1))  # between them, once each
    assert not list(store.rglob("*.tmp"))


BROKEN_KEYS = '''"""Eight keys of one kernel that fails to compile (the row count only sizes the grid)."""

import triton
import triton.language as tl

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[1, 2, 3, 4, 5, 6, 7, 8])


@triton.jit
def never_builds(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK < 0, "BLOCK must be negative")
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@matrix.kind(axes=["width"])
def broken(width):
    never_builds[(width,)](rs.tensor((width, 64), "fp32"), BLOCK=64)
'''


def test_a_build_that_failed_in_one_worker_fails_the_others_without_compiling(toy_repo: Path, tmp_path: Path) -> None:
    """The worker that compiled it recorded the failure; those that waited for it take it: one compile."""
    (toy_repo / "keys" / "toy.py").write_text(BROKEN_KEYS)
    commit_all(toy_repo, "a kernel that never builds")
    proc = run(toy_repo, tmp_path / "store", tmp_path / "triton", "-j", "2", "-t", "gfx950")
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    rows = json.loads(out)["rows"]
    assert len(rows) == 8 and all(r["status"] == "error" for r in rows)
    errors = {r["error"] for r in rows}
    assert len(errors) == 1 and "BLOCK must be negative" in errors.pop()
    assert sum(1 for r in rows if r["compile_s"]) == 1  # the rows that took it have no compile time of their own
    hashes = {r["triton_hash"] for r in rows}  # one build, in both workers: the row that compiled it too
    assert len(hashes) == 1 and None not in hashes
    # Taken from the record, the failure is of the moment until the survey compiles it itself: it did here,
    # so every row is the kernel's own failure (issue 31), and the stored survey is reused.
    assert not any(r["transient"] for r in rows)


def test_a_key_timed_out_waiting_for_a_build_lock_says_who_held_it(toy_repo: Path, tmp_path: Path) -> None:
    """Issue 31: a build lock another process held ended as "timed out after 20 s (--timeout)", as if the
    compile had been slow. Now the row says it waited for the lock, and which process held it."""
    from regsurvey.store.inflight import InFlight

    first = run(toy_repo, tmp_path / "store", tmp_path / "triton", "-t", "gfx950", "--key", "gemm/w8")
    (built,) = rows_of(first)
    objects = tmp_path / "other" / "objects"
    lock = InFlight(objects).take(built["triton_hash"])  # held here, by this process, as another survey would
    assert lock is not None and not lock.waited
    try:
        waiting = run(toy_repo, tmp_path / "other", tmp_path / "triton", "-t", "gfx950", "--key", "gemm/w8",
                      "--timeout", "15")
        out, err = waiting.communicate(timeout=900)
    finally:
        lock.release()
    assert waiting.returncode == 0, err
    (row,) = json.loads(out)["rows"]
    assert (row["status"], row["transient"]) == ("error", True)
    assert row["error"] == (f"timed out after 15 s (--timeout) while waiting for the build lock of one of its "
                            f"kernels, held by process {os.getpid()} (compiling that kernel for another key, or "
                            "another survey on this store)")


MANY_LAUNCHES_KEYS = '''"""One key of six builds (a tile sweep, as an autotuned launcher's configs), one target."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[64])


@matrix.kind(axes=["width"])
def sweep(width):
    for block_n in (16, 32, 64, 128, 256, 512):
        ops.gemm(rs.tensor((width, 512), "bf16"), rs.tensor((512, 1024), "bf16"), block_n=block_n)
'''


def shared_key_survey(repo: Path, tmp_path: Path, keys: str, launches: int) -> dict[str, Any]:
    """A survey at -j 2 of ``keys``, one key of ``launches`` builds: every launch built, each compiled once."""
    (repo / "keys" / "toy.py").write_text(keys)
    commit_all(repo, f"one key, {launches} builds")
    proc = run(repo, tmp_path / "store", tmp_path / "triton", "-j", "2", "--timeout", "300")
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    survey: dict[str, Any] = json.loads(out)
    rows = survey["rows"]
    assert [r["launch"] for r in rows] == list(range(launches)) and all(r["status"] == "ok" for r in rows)
    assert compiles(rows) == Counter(dict.fromkeys((r["triton_hash"] for r in rows), 1))
    return survey


def test_an_idle_worker_shares_the_launches_of_a_key_in_flight(toy_repo: Path, tmp_path: Path) -> None:
    """One key of six builds at -j 2: the second worker has no key of its own, so it helps with that one.
    Each build is compiled once, by one of the two, and the key's rows are those of one worker that
    compiled them all (none reused); the survey says how many launches the helper compiled."""
    survey = shared_key_survey(toy_repo, tmp_path, MANY_LAUNCHES_KEYS, launches=6)
    rows = survey["rows"]
    assert len({r["triton_hash"] for r in rows}) == 6 and not any(r["reused"] for r in rows)
    assert survey["timing"]["keys_shared"] == 1 and 1 <= survey["timing"]["launches_shared"] <= 5
    # The kind body ran once: the helper compiled the launches the first worker captured (issue 37, item 1).
    assert survey["timing"]["kind_bodies"] == 1 and survey["timing"]["copies_replayed"] == 1
    # The same rows as one worker alone: the same kernels, figures and objects.
    alone = json.loads(subprocess.run(
        [sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--store", str(tmp_path / "alone"),
         "-j", "1"],
        cwd=toy_repo, env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton")}, capture_output=True,
        text=True, timeout=900, check=True).stdout)
    same = ("launch", "kernel", "triton_hash", "resources", "object", "build", "status")
    assert [[r[f] for f in same] for r in alone["rows"]] == [[r[f] for f in same] for r in rows]
    assert "keys_shared" not in alone["timing"]


LOCAL_KERNEL_KEYS = MANY_LAUNCHES_KEYS.replace('''def sweep(width):
''', '''def sweep(width):
    import triton
    import triton.language as tl

    @triton.jit
    def fill(X, N, BLOCK: tl.constexpr):  # defined here: no other process can import it by name
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(X + offs, 1.0, mask=offs < N)

    rs.launch(fill, rs.tensor((4096,), "fp32"), 4096, grid=(1,), BLOCK=256)
''')


def test_a_helper_runs_the_kind_body_where_a_launch_cannot_travel(toy_repo: Path, tmp_path: Path) -> None:
    """A key launching a kernel defined inside its kind body: its launches cannot be made again by name in
    another worker, so the helper runs the body itself, as before issue 37; the rows are those of one worker."""
    survey = shared_key_survey(toy_repo, tmp_path, LOCAL_KERNEL_KEYS, launches=7)
    assert survey["timing"]["keys_shared"] == 1
    assert survey["timing"]["kind_bodies"] == 2 and "copies_replayed" not in survey["timing"]
