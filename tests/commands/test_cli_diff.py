"""`regsurvey diff`, `stack` and `rebuild-check` end to end on a toy repository whose second commit
widens the GEMM tile (64 -> 256 columns): more registers and shared memory, less occupancy.

Every figure the reports are expected to show is the stored object's second reading
(tests/readings.independent_reading: LLVM's and ptxas's own numbers, Triton's metadata), never typed in,
so the tests check the comparison and its reports on whatever toolchain compiled the toy.
"""

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
import triton

from regsurvey.model.results import Survey

from ..conftest import TOY
from ..readings import independent_reading

# Fixed dates: a clone that adds a commit shares the first two commits' shas, so their stored surveys
# are reused by the stack test.
GIT_ENV = {"GIT_AUTHOR_NAME": "tests", "GIT_AUTHOR_EMAIL": "tests@regsurvey", "GIT_COMMITTER_NAME": "tests",
           "GIT_COMMITTER_EMAIL": "tests@regsurvey", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00"}
GEMM = {("gemm/w2", "gfx950"), ("gemm/w8", "gfx950"), ("gemm/w2", "sm90"), ("gemm/w8", "sm90")}
SPILLS = ("vgpr_spill", "sgpr_spill", "scratch_bytes", "spill_store_bytes", "spill_load_bytes", "stack_bytes")
# Figures a wider tile must move, each the worse way (the commit's point), and one it may move.
MOVED = {"gfx950": {"occupancy", "vgpr", "vgpr_total", "lds_bytes"},
         "sm90": {"occupancy_blocks", "occupancy_warps", "regs", "shared_bytes"}}
MAY_MOVE = {"gfx950": {"sgpr", "agpr"}, "sm90": set()}  # AGPRs: Triton 3.6's LLVM gives the GEMM some
LOWER_IS_WORSE = {"occupancy", "occupancy_blocks", "occupancy_warps"}
OTHER_TRITON = "3.0.0"  # a release regsurvey does not support: never the installed one
Readings = dict[tuple[str, str], dict[str, int]]


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
    shas = [git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")]
    return {"root": root, "repo": repo, "store": store, "data": json.loads(out.stdout), "shas": shas,
            "readings": [readings(store, sha) for sha in shas]}


def stored(store: Path, sha: str) -> Survey:
    parts = [Survey.from_json((store / "surveys" / sha / f"{t}.json").read_text()) for t in ("gfx950", "sm90")]
    return parts[0].merge(parts[1])


def readings(store: Path, sha: str) -> Readings:
    """(key, target) -> every figure of the build the commit's stored survey names, read without
    regsurvey (each key of the toy builds one kernel)."""
    survey = stored(store, sha)
    by_object: dict[str, dict[str, int]] = {}
    for r in survey.rows:
        assert r.ok and r.object is not None and r.launch == 0, r
        if r.object.sha256 not in by_object:
            by_object[r.object.sha256] = independent_reading(store, r.to_dict())
    return {(r.key, r.target): by_object[r.object.sha256] for r in survey.rows if r.object}


def no_spills(*sides: Readings) -> None:
    """The toy's builds spill nothing and have no stack on these commits (their second readings): the
    reports' spill totals and spill columns are zeros."""
    assert not any(read.get(name) for side in sides for read in side.values() for name in SPILLS)


def gemm(side: Readings, target: str) -> dict[str, int]:
    """The GEMM's figures on ``target``: w2 and w8 build one kernel (16-row tiles for both)."""
    assert side[("gemm/w2", target)] == side[("gemm/w8", target)]
    return side[("gemm/w2", target)]


def moved(before: Readings, after: Readings, build: tuple[str, str]) -> dict[str, tuple[int, int, int]]:
    """Figure -> (before, after, delta) of the figures the second readings of ``build`` differ in."""
    return {name: (value, after[build][name], after[build][name] - value) for name, value in before[build].items()
            if after[build][name] != value}


def test_the_wider_tile_is_worse_with_the_real_figures(history: dict[str, Any]) -> None:
    data = history["data"]
    before, after = history["readings"]
    # What the commit did, as the second readings say: it changed the GEMM builds and nothing else, and
    # each of them for the worse on every figure it moved.
    assert {build for build in before if before[build] != after[build]} == GEMM
    for key, target in GEMM:
        changed = moved(before, after, (key, target))
        assert MOVED[target] <= set(changed) <= MOVED[target] | MAY_MOVE[target], (key, target, changed)
        assert all((delta < 0) == (name in LOWER_IS_WORSE) for name, (_, _, delta) in changed.items()), changed
    no_spills(before, after)

    assert data["schema_version"] == 1 and data["report"] == "comparison"
    assert data["base"]["commit"] == history["shas"][0] and data["head"]["commit"] == history["shas"][1]
    assert {m: n for m, n in data["counts"].items() if n} == {"worse": 4, "unchanged": 8}
    rows = {(r["key"], r["target"]): r for r in data["rows"]}
    assert {k for k, r in rows.items() if r["mark"] == "worse"} == GEMM

    def changes(key: str, target: str) -> dict[str, tuple[int, int, int]]:
        return {f["name"]: (f["before"], f["after"], f["delta"]) for f in rows[(key, target)]["figures"]
                if f["delta"]}

    for build in GEMM:
        assert changes(*build) == moved(before, after, build), build
    # The figures are the stored surveys' own (each commit was surveyed once and stored), and those are
    # every build's second reading.
    for side, sha, read in zip(("before", "after"), history["shas"], history["readings"]):
        survey = stored(history["store"], sha)
        for r in survey.rows:
            assert rows[(r.key, r.target)][side]["resources"] == r.resources == read[(r.key, r.target)]
    # The commit widened the tile: each line says the builds were made with it.
    WIDER = "; built with BLOCK_N 64 -> 256"
    amd, amd_now, nv, nv_now = gemm(before, "gfx950"), gemm(after, "gfx950"), gemm(before, "sm90"), gemm(after, "sm90")
    # Without AGPRs the unified VGPRs are the VGPRs, moving as they do: the summary does not repeat them.
    unified = (f"; unified {amd['vgpr_total']} -> {amd_now['vgpr_total']}"
               if (amd["vgpr_total"], amd_now["vgpr_total"]) != (amd["vgpr"], amd_now["vgpr"]) else "")
    agpr = [f"raises AGPRs of gemm on gfx950 ({amd['agpr']} -> {amd_now['agpr']})" + WIDER]
    sgpr = [f"raises SGPRs of gemm on gfx950 ({amd['sgpr']} -> {amd_now['sgpr']})" + WIDER]
    said = [s["text"] for s in data["summary"]]
    # Where the builds first differ: the wider tile is the kernel's own change (its TTIR), for all four builds
    # of gemm; the figures in it are those above (first_stage, diff/stage_summary).
    stage = [s for s in said if s.startswith("4 builds: the kernel's Triton IR changed (TTIR differs: ")]
    assert len(stage) == 1 and f"VGPRs {amd_now['vgpr'] - amd['vgpr']:+d}" in stage[0], said
    said.remove(stage[0])
    assert said == [
        f"lowers occupancy of gemm on gfx950 ({amd['occupancy']} -> {amd_now['occupancy']} waves/SIMD)" + WIDER,
        f"lowers occupancy of gemm on sm90 ({nv['occupancy_warps']} -> {nv_now['occupancy_warps']} warps/SM; "
        f"{nv['occupancy_blocks']} -> {nv_now['occupancy_blocks']} blocks/SM)" + WIDER,
        f"raises VGPRs of gemm on gfx950 ({amd['vgpr']} -> {amd_now['vgpr']}{unified})" + WIDER,
        *(agpr if amd["agpr"] != amd_now["agpr"] else []),
        *(sgpr if amd["sgpr"] != amd_now["sgpr"] else []),
        f"raises registers of gemm on sm90 ({nv['regs']} -> {nv_now['regs']})" + WIDER,
        f"raises LDS of gemm on gfx950 ({amd['lds_bytes']} -> {amd_now['lds_bytes']} B)" + WIDER,
        f"raises shared memory of gemm on sm90 ({nv['shared_bytes']} -> {nv_now['shared_bytes']} B)" + WIDER,
        "every key builds on both commits",
        "8 of 12 builds unchanged",
    ]


def test_every_format_from_the_stored_surveys(history: dict[str, Any]) -> None:
    repo, store = history["repo"], history["store"]
    before, after = history["readings"]
    no_spills(before, after)  # the spill totals below are zeros
    amd, amd_now, nv, nv_now = gemm(before, "gfx950"), gemm(after, "gfx950"), gemm(before, "sm90"), gemm(after, "sm90")

    def told(name: str, was: dict[str, int], now: dict[str, int]) -> str:
        return f"{was[name]} → {now[name]} ({now[name] - was[name]:+d})"

    common = ("HEAD~1", "HEAD", "--store", str(store), "-q")
    table = regsurvey("diff", *common, "--columns", "200", cwd=repo)  # room for a column per moved figure
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == f"HEAD~1 ({history['shas'][0][:10]}) → HEAD ({history['shas'][1][:10]})"
    assert lines.index("worse (2 of 4, AMD)") < lines.index("worse (2 of 4, NVIDIA)")
    assert any(line.split()[:3] == ["gemm/w2", "gfx950", "matmul"] and told("vgpr", amd, amd_now) in line
               for line in lines)
    assert "unchanged: 8 builds" in lines
    total = " ".join(" ".join(lines[next(i for i, line in enumerate(lines) if line.startswith("TOTAL")):]).split())
    assert total.startswith("TOTAL 12 keys (12 builds) compared on gfx950, sm90: 4 worse, 8 unchanged; "
                            "spill totals VGPR spills 0 → 0, SGPR spills 0 → 0, scratch 0 → 0 B")
    assert total.endswith("stack 0 → 0 B; builds that spill 0 → 0")
    markdown = regsurvey("diff", *common, "--format", "markdown", cwd=repo)
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.startswith(f"### Registers: `HEAD~1` ({history['shas'][0][:10]}) → `HEAD` "
                                      f"({history['shas'][1][:10]})\n")
    assert (f"| **worse** | `gemm/w8` | sm90 | `matmul` | warps {told('occupancy_warps', nv, nv_now)}, "
            f"blocks {told('occupancy_blocks', nv, nv_now)}, regs {told('regs', nv, nv_now)}, "
            f"smem {told('shared_bytes', nv, nv_now)}; built with BLOCK_N 64 → 256; "
            f"warps/SM {nv['occupancy_warps']} → {nv_now['occupancy_warps']} |") in markdown.stdout
    html = regsurvey("diff", *common, "--format", "html", cwd=repo)
    assert html.returncode == 0, html.stderr
    path = repo / "reports" / "HEAD_1..HEAD.html"
    assert html.stdout.strip() == f"wrote {path}"
    page = path.read_text()
    data = json.loads(page.split('<script id="report-data" type="application/json">')[1].split("</script>")[0])
    # The 4 worse builds listed; the 8 unchanged ones, of kinds on targets where nothing changed, named.
    shown = data["comparisons"][0]
    assert shown["counts"]["worse"] == 4 and shown["counts"]["unchanged"] == 8 and len(shown["rows"]) == 4
    assert shown["folded"]["unlisted"].startswith("not listed: 8 unchanged builds of the ")
    out = regsurvey("diff", *common, "--format", "json", "--output", str(history["root"] / "c.json"), cwd=repo)
    assert out.returncode == 0 and json.loads((history["root"] / "c.json").read_text())["counts"]["worse"] == 4


def test_surveys_from_another_toolchain_are_not_comparable(history: dict[str, Any]) -> None:
    base = stored(history["store"], history["shas"][0])
    assert triton.__version__ != OTHER_TRITON
    cuda = dict(base.toolchain["cuda"], triton=OTHER_TRITON)
    (history["root"] / "base.json").write_text(replace(base, toolchain={**base.toolchain, "cuda": cuda}).to_json())
    (history["root"] / "head.json").write_text(stored(history["store"], history["shas"][1]).to_json())
    out = regsurvey("diff", "base.json", "head.json", "--format", "json", cwd=history["root"])
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["toolchain_changes"] == [{"backend": "cuda", "part": "triton", "before": OTHER_TRITON,
                                          "after": triton.__version__}]
    marks = {(r["key"], r["target"]): (r["mark"], r["note"]) for r in data["rows"]}
    assert marks[("gemm/w2", "sm90")] == ("not comparable", f"cuda triton: {OTHER_TRITON} -> {triton.__version__}")
    assert marks[("gemm/w2", "gfx950")] == ("worse", None)
    assert data["across_toolchains"] is False
    # Asked to judge across the toolchains: every build marked as between the commits' own surveys, the
    # toolchain that differs still named.
    judged = regsurvey("diff", "base.json", "head.json", "--across-toolchains", "--format", "json",
                       cwd=history["root"])
    assert judged.returncode == 0, judged.stderr
    across = json.loads(judged.stdout)
    assert across["across_toolchains"] is True and across["toolchain_changes"] == data["toolchain_changes"]
    assert [(r["key"], r["target"], r["mark"], r["note"]) for r in across["rows"]] == [
        (r["key"], r["target"], r["mark"], r["note"]) for r in history["data"]["rows"]]


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
    # The 8-warp commit's builds, read as the others were.
    before, after = history["readings"]
    eight = readings(history["store"], git(repo, "rev-parse", "HEAD"))
    no_spills(before, after)  # the first step's spill column below: "unchanged"
    regs = {(r["key"], r["target"]): next(f for f in r["figures"] if f["name"] in ("vgpr", "regs"))
            for r in second["rows"] if r["key"].startswith("gemm/")}
    assert set(regs) == GEMM
    for (key, target), f in regs.items():
        name = f["name"]
        assert (f["before"], f["after"]) == (after[(key, target)][name], eight[(key, target)][name])
        assert f["after"] < f["before"], (key, target, f)  # twice the warps: fewer registers each
    assert all(s["keys_built"] == {"ok": 12, "total": 12} for s in data["steps"])
    assert all(s["lint_findings"]["findings"] == 0 for s in data["steps"])  # the AMD builds, linted clean
    overall = {(r["key"], r["target"]): r for r in data["overall"]["rows"]}
    assert overall[("gemm/w2", "gfx950")]["before"]["resources"]["vgpr"] == before[("gemm/w2", "gfx950")]["vgpr"]
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
    before, after = history["readings"]
    nv, nv_now = gemm(before, "sm90"), gemm(after, "sm90")
    assert f"- raises registers of gemm on sm90 ({nv['regs']} → {nv_now['regs']})" in diff.stdout
