"""``regsurvey history`` and ``regsurvey bisect`` (issue #14, parts 1 and 2) on a repository built here:
21 commits (a base and 20 more), whose kernel starts spilling at a known commit (``waves_per_eu=8`` caps
gfx950's VGPRs at 64: real spills from a real compile), fails to build two commits later, and builds
again after; the other commits only add notes."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from regsurvey.revisions.bisect import BAD, GOOD, SKIP, search

from .. import pressure_kernels as pk
from ..conftest import commit_all, git, own_server_environ
from ..output.chromium import CHROMIUM, Chromium

KEYS = '''
import regsurvey as rs
from kernels import peak_kernel, spill_kernel

matrix = rs.Matrix(targets=["gfx950"], n=[4])


@matrix.kind(axes=["n"])
def spill(n):
    x, y, out = rs.tensor((2048,), "fp32"), rs.tensor((4 * 2048,), "fp32"), rs.tensor((2048,), "fp32")
    spill_kernel[(1,)](x, y, out, BLOCK=2048, N=n, num_warps=1)


@matrix.kind(axes=["n"])
def steady(n):
    x, y, out = rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32"), rs.tensor((1024,), "fp32")
    peak_kernel[(1,)](x, y, out, BLOCK=1024, num_warps=1)
'''
SPILLS_AT, BROKEN_AT = 12, 14  # indices among the 20 commits after the base


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    """Surveys through a worker server of this module's own: 21 surveys, each starting workers, would
    take minutes."""
    with own_server_environ() as environ:
        yield environ


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The repository and the shas of its 20 commits after the base (index 0 is HEAD~19)."""
    repo = tmp_path_factory.mktemp("history") / "proj"
    (repo / "keys").mkdir(parents=True)
    (repo / "keys" / "k.py").write_text(KEYS)
    shutil.copy(pk.__file__, repo / "kernels.py")
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "the kernels")
    shas = []
    for i in range(20):
        keys = (repo / "keys" / "k.py").read_text()
        if i == SPILLS_AT:
            (repo / "keys" / "k.py").write_text(keys.replace("num_warps=1)\n\n\n@matrix.kind(axes=[\"n\"])\ndef steady",
                                                             "num_warps=1, waves_per_eu=8)\n\n\n"
                                                             "@matrix.kind(axes=[\"n\"])\ndef steady"))
            assert "waves_per_eu=8" in (repo / "keys" / "k.py").read_text()
            shas.append(commit_all(repo, "spill: 8 waves per EU"))
        elif i == BROKEN_AT:
            (repo / "keys" / "k.py").write_text(keys.replace("BLOCK=2048", "BLOCK=2000"))  # not a power of two
            shas.append(commit_all(repo, "spill: a block of 2000"))
        elif i == BROKEN_AT + 1:
            (repo / "keys" / "k.py").write_text(keys.replace("BLOCK=2000", "BLOCK=2048"))
            shas.append(commit_all(repo, "spill: back to 2048"))
        else:
            with (repo / "NOTES.md").open("a") as notes:
                notes.write(f"note {i}\n")
            shas.append(commit_all(repo, f"notes: {i}"))
    return repo, shas


def regsurvey(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "regsurvey", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900)


def test_bisect_finds_the_commit_that_added_the_spill(project: tuple[Path, list[str]], env: dict[str, str]) -> None:
    repo, shas = project
    out = regsurvey(repo, env, "bisect", "HEAD~20", "HEAD", "--key", "spill/*", "--figure", "vgpr_spill",
                    "--format", "json", "-q")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert (found["commit"], found["subject"]) == (shas[SPILLS_AT], "spill: 8 waves per EU")
    # GOOD and the probes: at most ceil(log2 n) + 1 surveys of the matching keys, n = 20.
    assert found["surveyed"] <= math.ceil(math.log2(20)) + 1
    steps = {s["commit"]: s for s in found["steps"]}
    assert steps[shas[SPILLS_AT]]["verdict"] == "bad" and steps[shas[SPILLS_AT - 1]]["verdict"] == "good"
    # The broken commit was met and skipped, as git bisect skip does.
    assert steps[shas[BROKEN_AT]]["verdict"] == "skip" and "fail" in steps[shas[BROKEN_AT]]["why"]
    # The diff against its parent: the one build, 0 -> N VGPR spills, only the matching keys surveyed.
    (row,) = found["diff"]["rows"]
    assert row["key"] == "spill/n4" and row["mark"] == "mixed"  # spills up, VGPRs down (capped at 64)
    spills = next(f for f in row["figures"] if f["name"] == "vgpr_spill")
    assert spills["before"] == 0 and spills["after"] > 0
    assert found["shows"] == f"gfx950:spill/n4 0 -> {spills['after']}"
    # Again, with a threshold: GOOD need not be surveyed; the stored surveys of the selection are reused.
    again = regsurvey(repo, env, "bisect", "HEAD~20", "HEAD", "--key", "spill/*", "--figure", "vgpr_spill",
                      "--above", "0")
    assert again.returncode == 0, again.stderr
    lines = again.stdout.splitlines()
    assert lines[0] == f"first commit where vgpr_spill of 'spill/*' above 0: {shas[SPILLS_AT]}"
    assert "    spill: 8 waves per EU" in lines
    assert any(line.startswith("it shows in: gfx950:spill/n4 ") for line in lines)
    assert any("from the store" in line and line.startswith("5 of 21 commits surveyed") for line in lines), lines
    assert "adds VGPR spills to spill n4 on gfx950" in again.stdout  # the diff against its parent, as `diff` prints it


def test_bisect_above_finds_the_first_commit_after_good(project: tuple[Path, list[str]], env: dict[str, str]) -> None:
    # Issue #30 item 12: with --above, GOOD is never judged, and the answer's diff against its parent (GOOD,
    # when the answer is the first commit after it) ended in a KeyError traceback, exit 1.
    repo, shas = project
    good, bad = shas[SPILLS_AT - 1], shas[SPILLS_AT]
    out = regsurvey(repo, env, "bisect", good, bad, "--key", "spill/*", "--figure", "vgpr_spill", "--above", "0",
                    "--format", "json", "-q")
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert (found["commit"], found["surveyed"]) == (bad, 2)  # BAD, and GOOD for the diff
    assert [(s["commit"], s["verdict"]) for s in found["steps"]] == [(bad, "bad")]
    (row,) = found["diff"]["rows"]
    assert (found["diff"]["base"]["commit"], found["diff"]["head"]["commit"]) == (good, bad)
    spills = next(f for f in row["figures"] if f["name"] == "vgpr_spill")
    assert row["key"] == "spill/n4" and spills["before"] == 0 and spills["after"] > 0


def test_bisect_says_when_nothing_changed_and_refuses_bad_input(project: tuple[Path, list[str]],
                                                                env: dict[str, str]) -> None:
    repo, shas = project
    none = regsurvey(repo, env, "bisect", "HEAD~20", "HEAD~9", "--key", "steady/*", "--figure", "vgpr")
    assert none.returncode == 1, none.stderr
    assert none.stdout.startswith("no commit of HEAD~20..HEAD~9 shows vgpr of 'steady/*' changes from GOOD's: "
                                  "HEAD~9 itself does not.")
    unknown = regsurvey(repo, env, "bisect", "HEAD~20", "HEAD", "--key", "spill/*", "--figure", "vgprs")
    assert unknown.returncode == 2 and unknown.stderr.startswith("regsurvey: error: unknown figure 'vgprs'; ")
    nokey = regsurvey(repo, env, "bisect", "HEAD~20", "HEAD", "--key", "nosuch/*", "--figure", "vgpr", "-q")
    assert nokey.returncode == 2 and nokey.stderr.splitlines()[-1].startswith("regsurvey: error: "), nokey.stderr
    backwards = regsurvey(repo, env, "bisect", "HEAD", "HEAD~20", "--key", "spill/*", "--figure", "vgpr")
    assert backwards.returncode == 2 and "holds no commit" in backwards.stderr


def test_the_search_is_git_bisects() -> None:
    """The search alone, over every answer of ranges up to 40 commits: found in ceil(log2 n) probes (one
    more to confirm BAD when it is the answer); skipped commits go on beside, or leave it open."""
    for n in range(1, 41):
        for first in range(n):
            probes: list[int] = []

            def judge(i: int, first: int = first, probes: list[int] = probes) -> str:
                probes.append(i)
                return BAD if i >= first else GOOD

            assert search(n, judge).first == first
            assert len(probes) <= (math.ceil(math.log2(n)) if n > 1 else 0) + (first == n - 1)
        assert search(n, lambda i: GOOD).first is None
    open_ = search(10, lambda i: SKIP if i == 4 else BAD if i >= 5 else GOOD)
    assert (open_.first, open_.candidates) == (None, (4, 5))
    beside = search(10, lambda i: SKIP if i == 6 else BAD if i >= 5 else GOOD)
    assert beside.first == 5


def test_history_draws_every_commit(project: tuple[Path, list[str]], env: dict[str, str], tmp_path: Path) -> None:
    repo, shas = project
    out = regsurvey(repo, env, "history", "HEAD~20..HEAD", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("regsurvey: 21 commits, ")
    data = json.loads(out.stdout)
    base = git(repo, "rev-parse", "HEAD~20")
    assert [c["sha"] for c in data["commits"]] == [base, *shas]
    series = {(s["kind"], s["target"], s["figure"]): s["points"] for s in data["series"]}
    assert set(series) == {("spill", "gfx950", "vgpr"), ("spill", "gfx950", "vgpr_spill"),
                           ("steady", "gfx950", "vgpr"), ("steady", "gfx950", "vgpr_spill")}
    spills = series[("spill", "gfx950", "vgpr_spill")]
    assert [p["max"] for p in spills[:SPILLS_AT + 1]] == [0] * (SPILLS_AT + 1)  # the base and indices 0..11
    assert spills[SPILLS_AT + 1]["max"] > 0 and spills[BROKEN_AT + 1] == {"max": None, "min": None, "built": 0,
                                                                           "failed": 1, "moved": 0, "worse": 0,
                                                                           "better": 0}
    # The build's own move, counted where it happened: 0 -> N spills, worse.
    assert [i for i, p in enumerate(spills) if p["moved"]] == [SPILLS_AT + 1]
    assert (spills[SPILLS_AT + 1]["worse"], spills[SPILLS_AT + 1]["better"]) == (1, 0)
    assert spills[-1]["max"] == spills[SPILLS_AT + 1]["max"]
    steady = series[("steady", "gfx950", "vgpr")]
    assert len({p["max"] for p in steady}) == 1 and all(p["failed"] == 0 for p in steady)
    step = data["commits"][SPILLS_AT + 1]
    assert step["counts"]["mixed"] == 1 and any(line.startswith("adds VGPR spills to spill n4 on gfx950")
                                                for line in step["summary"])
    # Markdown: the kinds that moved, a row per commit.
    markdown = regsurvey(repo, env, "history", "HEAD~20..HEAD", "--format", "markdown", "-q").stdout
    assert "#### spill on gfx950" in markdown and "Unchanged along the range: steady on gfx950." in markdown
    assert f"| `{shas[BROKEN_AT][:10]}` | spill: a block of 2000 | 1 failed | 1 failed |" in markdown
    assert f"- `{shas[0][:10]}` to `{shas[SPILLS_AT - 1][:10]}`: {SPILLS_AT} commits, every build unchanged\n" \
        f"- `{shas[SPILLS_AT][:10]}` spill: 8 waves per EU: 1 mixed\n  - adds VGPR spills to spill n4 on gfx950 (0 → " \
        in markdown
    assert f"| | *{SPILLS_AT} commits unchanged* | | |" in markdown
    # One commit in five (counted back from HEAD), from the store.
    every = json.loads(regsurvey(repo, env, "history", "HEAD~20..HEAD", "--every", "5", "--format", "json",
                                 "-q").stdout)
    assert [c["sha"] for c in every["commits"]] == [base, shas[4], shas[9], shas[14], shas[19]]
    assert [c["span"] for c in every["commits"]] == [0, 5, 5, 5, 5]  # a change lies in one of 5 commits
    # The page: drawn, points link to the commit's diff, failures marked, nothing fetched.
    page = tmp_path / "history.html"
    assert regsurvey(repo, env, "history", "HEAD~20..HEAD", "-o", str(page), "-q").returncode == 0
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian's chromium (.ci/run installs it)")
    browser = Chromium(tmp_path / "profile")
    try:
        tab = browser.new_page()
        tab.open(page.as_uri())
        assert tab.evaluate("document.querySelectorAll('main > section.kind svg').length") == 2  # what moved: spill
        # First the verdict and the commits that changed builds; steady, which did not move, is a line, folded.
        assert tab.evaluate("[document.getElementById('verdict').textContent, Array.from(document.querySelectorAll("
                            "'ul.summary a')).map(a => a.getAttribute('href'))]") == [
            "3 of 20 commits changed builds", [f"#c-{shas[SPILLS_AT]}", f"#c-{shas[BROKEN_AT]}",
                                               f"#c-{shas[BROKEN_AT + 1]}"]]
        assert tab.evaluate("document.querySelectorAll('details.still svg').length") == 0
        assert tab.evaluate("Array.from(document.querySelectorAll('details.still td.mono')).map(td => td.textContent)"
                            ) == ["steady on gfx950"]
        assert tab.evaluate("document.querySelectorAll('section.kind svg circle').length") == 2 * 20  # one fails
        assert tab.evaluate("document.querySelectorAll('svg path.fail').length") == 2
        # Coloured where the chart's own figure moved: the spills rose (worse), the VGPRs fell (capped).
        assert tab.evaluate("Array.from(document.querySelectorAll('svg circle.worse, svg circle.better')).map(c =>"
                            " [c.closest('.chart').querySelector('h3').firstChild.textContent.trim(),"
                            " c.getAttribute('class'), c.parentNode.getAttribute('href')])") == [
            ["VGPRs", "better", f"#c-{shas[SPILLS_AT]}"], ["VGPR spills", "worse", f"#c-{shas[SPILLS_AT]}"]]
        box = tab.evaluate("(() => { const r = document.querySelector('svg polyline.line').getBoundingClientRect();"
                           " return [r.width, r.height]; })()")
        assert box[0] > 300 and box[1] > 10
        tab.evaluate(f"document.querySelector('a[href=\"#c-{shas[SPILLS_AT]}\"]').dispatchEvent("
                     "new MouseEvent('click', {bubbles: true}))")
        assert tab.evaluate("location.hash") == f"#c-{shas[SPILLS_AT]}"
        assert "adds VGPR spills" in tab.evaluate("document.querySelector('tr:target').textContent")
        assert tab.errors() == []
        tab.screenshot(tmp_path / "history.png")
    finally:
        browser.close()


def test_the_default_page_name_says_what_was_drawn(project: tuple[Path, list[str]], env: dict[str, str]) -> None:
    """Two histories of one range over other selections or figures are two pages: the second no longer
    overwrites the first."""
    repo, _ = project
    runs = {"": (), ".kind-steady": ("--kind", "steady"),
            ".key-spill_.figure-vgpr_spill.every-2": ("--key", "spill/*", "--figure", "vgpr_spill", "--every", "2")}
    for part, args in runs.items():
        out = regsurvey(repo, env, "history", "HEAD~2..HEAD", *args, "-q")
        assert out.returncode == 0, out.stderr
        assert out.stdout == f"wrote {repo / 'reports' / f'HEAD_2..HEAD{part}.history.html'}\n"
    assert len(list((repo / "reports").glob("*.history.html"))) == 3
