"""`regsurvey demo`: the throwaway repository, its kernel change, and the report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.revisions.demo import DEMO_CHANGE, DEMO_HISTORY, DemoError, build_demo_repo, suite_root


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


def test_demo_command(tmp_path: Path) -> None:
    # The tp4 w8 keys on gfx950 only: four keys, a few seconds.
    out = subprocess.run([sys.executable, "-m", "regsurvey", "demo", "-q", "--key", "mla_decode/tp4/w8/*",
                          "--target", "gfx950", "-o", str(tmp_path / "demo.html")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # 32 heads in two 16-head blocks instead of one: half the accumulator per program.
    summary = [line for line in lines if line.startswith("- ")]
    assert summary[:2] == [
        "- lowers VGPR spills of mla_decode (mla_decode_split_kernel) tp4 w8 e4m3 on gfx950 "
        "(56 -> 16; scratch 228 -> 60 B); built with BLOCK_H 32 -> 16",
        "- removes SGPR spills from mla_decode (mla_decode_split_kernel) tp4 w8 e4m3 on gfx950: "
        "nostop 19 -> 0, stop 18 -> 0; built with BLOCK_H 32 -> 16",
    ]
    # Where (issue #13): under each, the source lines whose spills changed, the same in both builds.
    where = lines[1:lines.index(summary[1])]
    assert "    where: fewer spills at decode_layer/attention.py:110 (14 to 1 stores, 14 to 2 reloads)" in where
    assert all(w.startswith("    where: ") and " builds)" not in w for w in where)
    assert "- every key builds on both commits" in lines
    assert lines[-1] == f"wrote {tmp_path / 'demo.html'} (open it in a browser)"
    page = (tmp_path / "demo.html").read_text()
    assert "mla_decode: one 16-head block per program" in page
    assert "fewer spills at decode_layer/attention.py:110 (14 to 1 stores, 14 to 2 reloads)" in page


@pytest.mark.slow
def test_the_default_demo(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "regsurvey", "demo", "-q"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=1800)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "reports" / "demo.html").is_file()
    assert "48 keys (96 builds) compared on gfx950, sm90" in out.stdout
