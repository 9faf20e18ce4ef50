"""`regsurvey diff`, `stack` and `rebuild-check` end to end on a toy repository whose second commit
widens the GEMM tile (64 -> 256 columns): more registers and shared memory, less occupancy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.results import Survey

from ..conftest import TOY

# Fixed dates: a clone that adds a commit shares the first two commits' shas, so their stored surveys
# are reused by the stack test.
GIT_ENV = {"GIT_AUTHOR_NAME": "tests", "GIT_AUTHOR_EMAIL": "tests@regsurvey", "GIT_COMMITTER_NAME": "tests",
           "GIT_COMMITTER_EMAIL": "tests@regsurvey", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00"}


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                         env={**os.environ, **GIT_ENV})
    return out.stdout.strip()


def edit_ops(repo: Path, old: str, new: str) -> None:
    ops = repo / "toykernels" / "ops.py"
    text = ops.read_text()
    assert old in text
    ops.write_text(text.replace(old, new))


def regsurvey(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The toy repository with a second commit widening the GEMM tile, diffed once as JSON."""
    root = tmp_path_factory.mktemp("diff")
    repo = root / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "toy project")
    edit_ops(repo, "block_n: int = 64", "block_n: int = 256")
    git(repo, "commit", "-q", "-am", "gemm: 256-column tiles")
    store = root / "store"
    # From another directory, with -C: the repository is found from the option.
    out = regsurvey("diff", "HEAD~1", "HEAD", "-C", str(repo), "--store", str(store), "--format", "json", "-q",
                    cwd=root)
    assert out.returncode == 0, out.stderr
    return {"root": root, "repo": repo, "store": store, "data": json.loads(out.stdout),
            "shas": [git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")]}


def stored(store: Path, sha: str) -> Survey:
    parts = [Survey.from_json((store / "surveys" / sha / f"{t}.json").read_text()) for t in ("gfx950", "sm90")]
    return parts[0].merge(parts[1])


def test_the_wider_tile_is_worse_with_the_real_figures(history: dict[str, Any]) -> None:
    data = history["data"]
    assert data["schema_version"] == 1 and data["report"] == "comparison"
    assert data["base"]["commit"] == history["shas"][0] and data["head"]["commit"] == history["shas"][1]
    assert {m: n for m, n in data["counts"].items() if n} == {"worse": 4, "unchanged": 8}
    rows = {(r["key"], r["target"]): r for r in data["rows"]}
    assert {k for k, r in rows.items() if r["mark"] == "worse"} == {
        ("gemm/w2", "gfx950"), ("gemm/w8", "gfx950"), ("gemm/w2", "sm90"), ("gemm/w8", "sm90")}

    def changes(key: str, target: str) -> dict[str, tuple[int, int, int]]:
        return {f["name"]: (f["before"], f["after"], f["delta"]) for f in rows[(key, target)]["figures"]
                if f["delta"]}

    # Compiled by the installed Triton 3.9 (LLVM for gfx950, ptxas 13.4 for sm90).
    # No AGPRs: the unified count is the VGPR count and moves with it (the summary does not repeat it).
    assert changes("gemm/w2", "gfx950") == {"occupancy": (7, 2, -5), "vgpr": (38, 68, 30), "sgpr": (38, 40, 2),
                                            "lds_bytes": (20960, 71648, 50688), "vgpr_total": (38, 68, 30)}
    assert changes("gemm/w8", "sm90") == {"occupancy_blocks": (10, 3, -7), "occupancy_warps": (40, 12, -28),
                                          "regs": (48, 123, 75), "shared_bytes": (20480, 69632, 49152)}
    # The figures are the stored surveys' own: each commit was surveyed once and stored.
    for side, sha in zip(("before", "after"), history["shas"]):
        survey = stored(history["store"], sha)
        for r in survey.rows:
            assert rows[(r.key, r.target)][side]["resources"] == r.resources
    # The commit widened the tile: each line says the builds were made with it.
    WIDER = "; built with BLOCK_N 64 -> 256"
    assert [s["text"] for s in data["summary"]] == [
        "lowers occupancy of gemm on gfx950 (7 -> 2 waves/SIMD)" + WIDER,
        "lowers occupancy of gemm on sm90 (40 -> 12 warps/SM; 10 -> 3 blocks/SM)" + WIDER,
        "raises VGPRs of gemm on gfx950 (38 -> 68)" + WIDER,
        "raises SGPRs of gemm on gfx950 (38 -> 40)" + WIDER,
        "raises registers of gemm on sm90 (48 -> 123)" + WIDER,
        "raises LDS of gemm on gfx950 (20960 -> 71648 B)" + WIDER,
        "raises shared memory of gemm on sm90 (20480 -> 69632 B)" + WIDER,
        "every key builds on both commits",
        "8 of 12 builds unchanged",
    ]


def test_every_format_from_the_stored_surveys(history: dict[str, Any]) -> None:
    repo, store = history["repo"], history["store"]
    common = ("HEAD~1", "HEAD", "--store", str(store), "-q")
    table = regsurvey("diff", *common, cwd=repo)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == f"HEAD~1 ({history['shas'][0][:10]}) → HEAD ({history['shas'][1][:10]})"
    assert lines.index("worse (2 of 4, AMD)") < lines.index("worse (2 of 4, NVIDIA)")
    assert any(line.split()[:3] == ["gemm/w2", "gfx950", "matmul"] and "38 → 68 (+30)" in line for line in lines)
    assert "unchanged: 8 builds" in lines
    total = " ".join(lines[next(i for i, line in enumerate(lines) if line.startswith("TOTAL")):])  # wraps
    assert total.startswith("TOTAL 12 keys (12 builds) compared on gfx950, sm90: 4 worse, 8 unchanged; "
                            "spill totals VGPR spills 0 → 0, SGPR spills 0 → 0, scratch 0 → 0 B")
    assert total.endswith("stack 0 → 0 B; builds that spill 0 → 0")
    markdown = regsurvey("diff", *common, "--format", "markdown", cwd=repo)
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.startswith(f"### Registers: `HEAD~1` ({history['shas'][0][:10]}) → `HEAD` "
                                      f"({history['shas'][1][:10]})\n")
    assert ("| **worse** | `gemm/w8` | sm90 | `matmul` | warps 40 → 12 (-28), blocks 10 → 3 (-7), "
            "regs 48 → 123 (+75), smem 20480 → 69632 (+49152); built with BLOCK_N 64 → 256; warps/SM 40 → 12 |"
            ) in markdown.stdout
    html = regsurvey("diff", *common, "--format", "html", cwd=repo)
    assert html.returncode == 0, html.stderr
    path = repo / "reports" / "HEAD_1..HEAD.html"
    assert html.stdout.strip() == f"wrote {path}"
    page = path.read_text()
    data = json.loads(page.split('<script id="report-data" type="application/json">')[1].split("</script>")[0])
    assert data["comparisons"][0]["counts"]["worse"] == 4 and len(data["comparisons"][0]["rows"]) == 12
    out = regsurvey("diff", *common, "--format", "json", "--output", str(history["root"] / "c.json"), cwd=repo)
    assert out.returncode == 0 and json.loads((history["root"] / "c.json").read_text())["counts"]["worse"] == 4


def test_surveys_from_another_toolchain_are_not_comparable(history: dict[str, Any]) -> None:
    base = stored(history["store"], history["shas"][0])
    cuda = dict(base.toolchain["cuda"], triton="3.10.0")
    (history["root"] / "base.json").write_text(replace(base, toolchain={**base.toolchain, "cuda": cuda}).to_json())
    (history["root"] / "head.json").write_text(stored(history["store"], history["shas"][1]).to_json())
    out = regsurvey("diff", "base.json", "head.json", "--format", "json", cwd=history["root"])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["toolchain_changes"] == [{"backend": "cuda", "part": "triton", "before": "3.10.0",
                                          "after": "3.9.0"}]
    marks = {(r["key"], r["target"]): (r["mark"], r["note"]) for r in data["rows"]}
    assert marks[("gemm/w2", "sm90")] == ("not comparable", "cuda triton: 3.10.0 -> 3.9.0")
    assert marks[("gemm/w2", "gfx950")] == ("worse", None)


def test_stack_reports_each_commit_against_its_parent(history: dict[str, Any]) -> None:
    repo = history["root"] / "toy3"
    subprocess.run(["git", "clone", "-q", str(history["repo"]), str(repo)], check=True)
    edit_ops(repo, "num_warps=4, num_stages=2 if is_hip else 3", "num_warps=8, num_stages=2 if is_hip else 3")
    git(repo, "commit", "-q", "-am", "gemm: 8 warps")
    out = regsurvey("stack", "HEAD~2..HEAD", "--store", str(history["store"]), "--format", "json", "-q", cwd=repo)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["report"] == "stack"
    assert [(s["commit"], s["subject"]) for s in data["steps"]] == [
        (history["shas"][1], "gemm: 256-column tiles"), (git(repo, "rev-parse", "HEAD"), "gemm: 8 warps")]
    first, second = (s["comparison"] for s in data["steps"])
    assert first["rows"] == history["data"]["rows"]  # the same two stored surveys as the diff
    assert first["base"]["label"] == f"HEAD~2 ({history['shas'][0][:10]})"
    assert {m: n for m, n in second["counts"].items() if n}["unchanged"] == 8
    regs = {(r["key"], r["target"]): next(f for f in r["figures"] if f["name"] in ("vgpr", "regs"))
            for r in second["rows"] if r["key"].startswith("gemm/")}
    for (key, target), f in regs.items():
        assert f["before"] == (68 if target == "gfx950" else 123)
        assert f["after"] < f["before"], (key, target, f)  # twice the warps: fewer registers each
    assert all(s["keys_built"] == {"ok": 12, "total": 12} for s in data["steps"])
    assert all(s["lint_findings"]["findings"] == 0 for s in data["steps"])  # the AMD builds, linted clean
    overall = {(r["key"], r["target"]): r for r in data["overall"]["rows"]}
    assert overall[("gemm/w2", "gfx950")]["before"]["resources"]["vgpr"] == 38
    markdown = regsurvey("stack", "HEAD~2..HEAD", "--store", str(history["store"]), "--format", "markdown", "-q",
                         cwd=repo)
    assert f"| {history['shas'][1][:10]} | gemm: 256\\-column tiles | 12/12 | 4 | 0 | 0 | 0 | 0 | unchanged | 0 |" \
        in markdown.stdout.replace("256-column", "256\\-column")


def test_rebuild_check(history: dict[str, Any]) -> None:
    args = ("--kind", "gemm", "--target", "sm90", "--store", str(history["store"]), "-q")
    out = regsurvey("rebuild-check", "--commit", "HEAD", "--format", "json", *args, cwd=history["repo"])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data == {"label": f"HEAD ({history['shas'][1][:10]})", "commit": history["shas"][1], "builds": 2,
                    "deterministic": True, "differences": []}
    diff = regsurvey("diff", "HEAD~1", "HEAD", "--rebuild-check", "--format", "markdown", *args,
                     cwd=history["repo"])
    assert diff.returncode == 0, diff.stderr
    assert "Rebuild check: all 2 builds identical from a cold Triton cache." in diff.stdout
    assert "- raises registers of gemm on sm90 (48 → 123)" in diff.stdout
