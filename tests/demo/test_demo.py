"""`regsurvey demo`: the throwaway repository, its kernel change, and the report."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.model.words import count
from regsurvey.revisions.demo import DEMO_CHANGE, DEMO_HISTORY, DemoError, build_demo_repo, suite_root

from ..readings import amd_second_reading, spills_by_line, stored_text


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def test_the_demo_repository_changes_one_line_of_attention(tmp_path: Path) -> None:
    base, head = build_demo_repo(tmp_path / "demo")
    # The suite, the 19 commits of DEMO_HISTORY (for `history` and `bisect`), then the change.
    history = [step if isinstance(step, str) else step.message for step in DEMO_HISTORY]
    assert git(tmp_path / "demo", "log", "--format=%s").splitlines() == [
        DEMO_CHANGE.message, *reversed(history), "decode layer: the demo suite"]
    assert git(tmp_path / "demo", "rev-parse", "HEAD~1").strip() == base
    # The tuning tried and taken back: HEAD~1's kernels are the suite's.
    assert git(tmp_path / "demo", "diff", "HEAD~20", "HEAD~1", "--stat", "--", "decode_layer", "keys") == ""
    diff = git(tmp_path / "demo", "diff", "-U0", base, head)
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 2 and changed[0][1:].strip().startswith("block_h = ")
    assert changed[1][1:].strip() == "block_h = 16  # one 16-head block per program: half the q and accumulator tiles"
    assert (tmp_path / "demo" / "keys" / "decode_layer.py").read_text() == \
        (suite_root() / "keys" / "decode_layer.py").read_text()


def test_a_missing_suite_is_one_clear_message(tmp_path: Path) -> None:
    with pytest.raises(DemoError, match=r"the demo suite is not next to the installed regsurvey package .* lacks "
                                        r"decode_layer/__init__.py, keys/decode_layer.py"):
        build_demo_repo(tmp_path / "demo", source=tmp_path)


# The split kernel's score GEMM (``s = tl.dot(q_nope, tl.trans(kv))``), where the 32-head block spilled
# most: a line of the demo suite the test chose; the spills on it are read from each build.
SCORE_LINE = ("attention.py", 110)
KEEP = "the demo repository: "


def split_readings(repo: Path, rev: str) -> dict[str, tuple[dict[str, int], tuple[int, int]]]:
    """stop value -> (the second reading, the spill stores and reloads on ``SCORE_LINE``) of the split
    kernel's tp4 w8 e4m3 builds at ``rev`` of a kept demo repository (its store holds each commit's
    survey of the demo's selection)."""
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    store = repo / ".regsurvey"
    (path,) = (store / "surveys" / sha / "partial").glob("*/gfx950.json")
    return {row["key"].rsplit("/", 1)[1]: (amd_second_reading(store, row),
                                           spills_by_line(stored_text(store, row, "amdgcn")).get(SCORE_LINE, (0, 0)))
            for row in json.loads(path.read_text())["rows"]
            if row["key"].startswith("mla_decode/tp4/w8/e4m3/") and row["kernel"] == "mla_decode_split_kernel"}


def test_demo_command(tmp_path: Path) -> None:
    # The tp4 w8 keys on gfx950 only: four keys, a few seconds. Kept, to read its builds a second time.
    out = subprocess.run([sys.executable, "-m", "regsurvey", "demo", "-q", "--key", "mla_decode/tp4/w8/*",
                          "--target", "gfx950", "--keep", "-o", str(tmp_path / "demo.html")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=900)
    lines = out.stdout.splitlines()
    kept = Path(lines[0].removeprefix(KEEP).split(" (try ")[0]) if lines and lines[0].startswith(KEEP) else None
    try:
        assert out.returncode == 0 and kept, out.stderr
        before, after = (split_readings(kept, rev) for rev in ("HEAD~1", "HEAD"))
    finally:
        if kept:
            shutil.rmtree(kept.parent, ignore_errors=True)
    # 32 heads in two 16-head blocks instead of one: half the accumulator per program. The builds'
    # second readings: fewer VGPR spills, no SGPR spills, fewer spills on the score GEMM's line. The
    # sentences' shape: on each commit the two builds (stop or not) spill VGPRs alike and on that line
    # alike, and SGPRs not (told per stop value).
    assert set(before) == set(after) == {"nostop", "stop"}
    for side in (before, after):
        assert side["nostop"][0]["vgpr_spill"] == side["stop"][0]["vgpr_spill"]
        assert side["nostop"][0]["scratch_bytes"] == side["stop"][0]["scratch_bytes"]
        assert side["nostop"][1] == side["stop"][1]
    (was, (st0, ld0)), (now, (st1, ld1)) = before["nostop"], after["nostop"]
    assert 0 < now["vgpr_spill"] < was["vgpr_spill"] and now["scratch_bytes"] < was["scratch_bytes"]
    assert st1 + ld1 < st0 + ld0
    sgpr = {stop: before[stop][0]["sgpr_spill"] for stop in before}
    assert sgpr["nostop"] != sgpr["stop"] and min(sgpr.values()) > 0, sgpr
    assert {after[stop][0]["sgpr_spill"] for stop in after} == {0}
    summary = [line for line in lines if line.startswith("- ")]
    # Spill instructions inside loops are told on a line of their own, first (each build's count is the
    # survey's loop_spill_ops, read a second way by tests/objects/test_loop_spills.py).
    loops = [line for line in summary if "spill instructions in loops" in line]
    assert all("(mla_decode_split_kernel) tp4 w8 e4m3 on gfx950" in line for line in loops), loops
    summary = [line for line in summary if line not in loops]
    assert summary[:2] == [
        "- lowers VGPR spills of mla_decode (mla_decode_split_kernel) tp4 w8 e4m3 on gfx950 "
        f"({was['vgpr_spill']} → {now['vgpr_spill']}; scratch {was['scratch_bytes']} → {now['scratch_bytes']} B); "
        "built with BLOCK_H 32 → 16",
        "- removes SGPR spills from mla_decode (mla_decode_split_kernel) tp4 w8 e4m3 on gfx950: "
        f"nostop {sgpr['nostop']} → 0, stop {sgpr['stop']} → 0; built with BLOCK_H 32 → 16",
    ]
    # Where (issue #13): under each, the source lines whose spills changed, the same in both builds.
    fewer = (f"fewer spills at decode_layer/attention.py:{SCORE_LINE[1]} ({st0} to {count(st1, 'store')}, {ld0} to "
             f"{count(ld1, 'reload')})")
    where = lines[lines.index(summary[0]) + 1:lines.index(summary[1])]
    assert f"    where: {fewer}" in where
    assert all(w.startswith("    where: ") and " builds)" not in w for w in where)
    assert "- every key builds on both commits" in lines
    # A constexpr changed (BLOCK_H): the kernel's TTIR is another.
    assert [line for line in summary if "Triton IR" in line][0].startswith(
        "- 4 builds: the kernel's Triton IR changed (TTIR differs: VGPR spills ")
    assert lines[-1] == f"wrote {tmp_path / 'demo.html'} (open it in a browser)"
    page = (tmp_path / "demo.html").read_text()
    assert "mla_decode: one 16-head block per program" in page
    assert fewer in page


@pytest.mark.slow
def test_the_default_demo(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "regsurvey", "demo", "-q"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "reports" / "demo.html").is_file()
    assert "48 keys (96 builds) compared on gfx950, sm90" in out.stdout
