"""Where a change moved the registers (issue #13, part 3): ``diff`` names the source lines, on a project
whose second commit launches the kernel on twice the tile it keeps across a loop (tests/pressure_kernels.py's
``spill_kernel``): twice the registers live in the loop. Spills at known lines, from two compiles."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from regsurvey.model.words import count
from regsurvey.output.where_text import where_sentences
from regsurvey.repo.sources import SourcePaths
from regsurvey.where import where_changes

from .. import pressure_kernels as pk
from ..conftest import commit_all, git
from ..output.chromium import CHROMIUM, Chromium
from .test_pressure import pressure

KEYS = '''
import regsurvey as rs
from kernels import spill_kernel

matrix = rs.Matrix(targets=["gfx950"], n=[4])


@matrix.kind(axes=["n"])
def spill(n):
    x, y, out = rs.tensor((8192,), "fp32"), rs.tensor((4 * 8192,), "fp32"), rs.tensor((8192,), "fp32")
    spill_kernel[(1,)](x, y, out, BLOCK=4096, N=n, num_warps=1)
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Commit 1: spill_kernel launched with BLOCK=4096; commit 2: with BLOCK=8192."""
    repo = tmp_path_factory.mktemp("where") / "proj"
    (repo / "keys").mkdir(parents=True)
    (repo / "keys" / "k.py").write_text(KEYS)
    shutil.copy(pk.__file__, repo / "kernels.py")
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "spill kernel")
    (repo / "keys" / "k.py").write_text(KEYS.replace("BLOCK=4096", "BLOCK=8192"))
    commit_all(repo, "twice the block")
    return repo


def test_diff_says_where_the_peak_went(project: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "regsurvey", "diff", "HEAD~1", "HEAD", "-q", "--format", "markdown"],
                         cwd=project, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # Under the VGPR sentence (and only there): the peak, on the unrolled loop's line, about twice as high.
    vgprs = next(i for i, line in enumerate(lines) if line.startswith("- raises VGPRs of spill n4 on gfx950 ("))
    where = lines[vgprs + 1]
    prefix = f"  - where: the VGPR peak at kernels.py:{pk.marked_line('LOOP')} rose from "
    assert where.startswith(prefix) and where.endswith(" live VGPRs"), out.stdout
    was, now = (int(n) for n in where.removeprefix(prefix).removesuffix(" live VGPRs").split(" to "))
    assert 1.8 < now / was <= 2.0
    occupancy = next(i for i, line in enumerate(lines) if line.startswith("- lowers occupancy of spill n4"))
    assert not lines[occupancy + 1].startswith("  - where:")
    # JSON: the build's own sentences; HTML: the same, in the page's data.
    data = json.loads(subprocess.run([sys.executable, "-m", "regsurvey", "diff", "HEAD~1", "HEAD", "-q", "--format",
                                      "json"], cwd=project, capture_output=True, text=True, timeout=900).stdout)
    (row,) = data["rows"]
    assert row["where"] == [where.removeprefix("  - where: ")]
    # The lines holding the most registers on each side, with their text: the loop's first (the peak).
    loop = f"kernels.py:{pk.marked_line('LOOP')}"
    for side, live in (("before", was), ("after", now)):
        hot = row["hot_lines"][side]
        assert hot[0]["line"] == loop and hot[0]["live"] == live and hot[0]["noun"] == "VGPR"
        assert hot[0]["source"] == "acc += tl.exp(tl.load(y_ptr + i * BLOCK + offs))  # LOOP"
        assert [h["live"] for h in hot] == sorted((h["live"] for h in hot), reverse=True)
    page = project / "report.html"
    subprocess.run([sys.executable, "-m", "regsurvey", "diff", "HEAD~1", "HEAD", "-q", "--format", "html", "-o",
                    str(page)], cwd=project, capture_output=True, text=True, timeout=900, check=True)
    text = page.read_text()
    assert json.dumps(row["where"][0])[1:-1] in text
    # The build's detail: each side's source annotated, the loop's line marked hot with the peak's count.
    data = json.loads(text.split('<script id="report-data" type="application/json">')[1].split("</script>")[0])
    (shown,) = [data["rows"][i] for i in data["comparisons"][0]["rows"]]  # each distinct build once, by index
    source = (project / "kernels.py").read_text().splitlines()
    for side, live in (("before", was), ("after", now)):
        (annotated,) = shown["source"][side]
        assert annotated["name"] == "kernels.py" and annotated["found"]
        at = pk.marked_line("LOOP") - annotated["first"]
        text = data["texts"][annotated["text"]]  # texts are kept once per page, named by index
        assert text[at] == source[pk.marked_line("LOOP") - 1]
        # Per-line figures only for the lines that have any: [offset, live, stores, reloads, loop depth].
        figures = {x[0]: x[1:] for x in annotated["lines"]}
        assert "live" not in annotated and sorted(figures) == [x[0] for x in annotated["lines"]]
        assert all(0 <= i < len(text) and (v is not None or st or ld) for i, (v, st, ld, _) in figures.items())
        assert figures[at][0] == live == max(v for v, _, _, _ in figures.values() if v is not None)
        assert all(d == 0 for _, _, _, d in figures.values())  # the loop is unrolled (tl.static_range): none left
        assert len(figures) < len(text)  # lines with no code (blank, comments) are left out
        assert pk.marked_line("LOOP") in annotated["hot"]
    if Path(CHROMIUM).exists():  # drawn: the detail's annotated tables, the loop's row marked
        browser = Chromium(project.parent / "chromium-profile")
        try:
            tab = browser.new_page()
            tab.open(page.as_uri())
            tab.evaluate("document.querySelector('#rows tbody tr.row').click()")
            rows = tab.evaluate("Array.from(document.querySelectorAll('tr.detail details.annotated')).map(d => "
                                "[d.querySelector('summary').textContent, Array.from(d.querySelectorAll('tr.hot'))"
                                ".map(tr => Array.from(tr.cells).map(td => td.textContent))])")
            assert [r[0] for r in rows] == ["before: kernels.py annotated", "after: kernels.py annotated"]
            # Every line drawn, a live count on exactly the lines the page's data gives one.
            drawn = tab.evaluate("Array.from(document.querySelectorAll('tr.detail details.annotated table')).map(t => "
                                 "Array.from(t.querySelectorAll('tr')).slice(1).map(tr => tr.cells[2].textContent))")
            for cells, side in zip(drawn, ("before", "after")):
                (annotated,) = shown["source"][side]
                assert len(cells) == len(data["texts"][annotated["text"]])
                assert [i for i, c in enumerate(cells) if c] == [x[0] for x in annotated["lines"] if x[1] is not None]
            for (_, hot), live in zip(rows, (was, now)):
                assert [str(pk.marked_line("LOOP")), "", str(live)] in [cells[:3] for cells in hot]
                # The line's text, from the page's pool of texts.
                loop_row = next(cells for cells in hot if cells[0] == str(pk.marked_line("LOOP")))
                assert loop_row[-1].strip() == source[pk.marked_line("LOOP") - 1].strip()
            assert tab.errors() == []
        finally:
            browser.close()


@pytest.fixture(scope="module")
def nvidia_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two commits on sm90, where a build's pressure is computed at first need (an nvdisasm run per cubin),
    after the surveys: the kernel on a tile of 1024, then of 2048 (registers rise; smaller tiles than the
    AMD project's, so that ptxas takes seconds)."""
    repo = tmp_path_factory.mktemp("where-sm90") / "proj"
    (repo / "keys").mkdir(parents=True)
    keys = KEYS.replace('targets=["gfx950"]', 'targets=["sm90"]')
    (repo / "keys" / "k.py").write_text(keys.replace("BLOCK=4096", "BLOCK=1024"))
    shutil.copy(pk.__file__, repo / "kernels.py")
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "spill kernel")
    (repo / "keys" / "k.py").write_text(keys.replace("BLOCK=4096", "BLOCK=2048"))
    commit_all(repo, "twice the block")
    return repo


def test_the_cubins_pressure_after_the_surveys_says_its_progress(nvidia_project: Path) -> None:
    """The changed build's two cubins are read after both surveys, before any output: said on stderr as the
    surveys are (a line as it begins, one as it ends: outside a terminal), in lines the CI script knows; a
    second diff reads the kept pressures back and says nothing of them."""
    from regsurvey.output.progress_lines import is_progress_line

    def diff() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "regsurvey", "diff", "HEAD~1", "HEAD", "--format", "json"],
                              cwd=nvidia_project, capture_output=True, text=True, timeout=900)

    first = diff()
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    begins = lines.index("regsurvey: source-line pressure of 1 changed build (2 cubins)")
    assert begins > max(i for i, line in enumerate(lines) if "revision 2 of 2" in line)  # after both surveys
    assert re.fullmatch(r"regsurvey: source-line pressure of 1 changed build: 2/2 cubins; done in \d+s", lines[-1])
    assert all(is_progress_line(line) for line in lines), lines
    (row,) = json.loads(first.stdout)["rows"]
    assert row["where"] and row["hot_lines"]["before"] and row["hot_lines"]["after"]
    again = diff()
    assert again.returncode == 0 and "source-line pressure" not in again.stderr, again.stderr
    assert json.loads(again.stdout)["rows"][0]["where"] == row["where"]


def test_the_sentences_from_two_pressures() -> None:
    """Straight from two compiles: BLOCK 4096 (no spills) then 8192 (the kept tile spilled)."""
    before, after = pressure("spill_kernel", "gfx950", 4096), pressure("spill_kernel", "gfx950", 8192)
    vgpr_spills = [s for s in after.spills if s.medium != "vgpr-lane"]  # (both spill a few SGPRs to lanes)
    assert vgpr_spills and not [s for s in before.spills if s.medium != "vgpr-lane"]
    here = Path(__file__).resolve().parents[2]
    paths = SourcePaths(here if (here / ".git").exists() else None, None)
    sentences = where_sentences(where_changes(before, after, paths, paths))
    name = paths.name(str(Path(pk.__file__).resolve()))
    stores = sum(1 for s in vgpr_spills if s.kind == "store")
    reloads = sum(1 for s in vgpr_spills if s.kind == "reload")
    assert f"new spills at {name}:{pk.marked_line('KEEP')} ({count(stores, 'store')}, 0 reloads)" in sentences
    assert f"new spills at {name}:{pk.marked_line('USE')} (0 stores, {count(reloads, 'reload')})" in sentences
    peak = [s for s in sentences if "peak" in s]
    assert len(peak) == 1 and peak[0].startswith("the VGPR peak ")
    # And back: the spills go away.
    assert f"no spills left at {name}:{pk.marked_line('KEEP')} (were {count(stores, 'store')}, 0 reloads)" in \
        where_sentences(where_changes(after, before, paths, paths))


def test_no_change_no_sentence() -> None:
    p = pressure("spill_kernel", "gfx950", 8192)
    paths = SourcePaths(None, None)
    assert where_changes(p, p, paths, paths) == ()


def test_the_annotated_source_carries_the_spills_and_the_hot_lines() -> None:
    """``annotated_files`` (the HTML detail's source): the spill stores on the kept tile's line, the
    reloads where it is used, figures equal to the pressure's own per-line table, the long stretch cut."""
    from regsurvey import where
    from regsurvey.where import annotated_files

    after = pressure("spill_kernel", "gfx950", 8192)
    here = Path(__file__).resolve().parents[2]
    paths = SourcePaths(here if (here / ".git").exists() else None, None)
    (annotated,) = annotated_files(after, paths)
    by_line = next(iter(after.by_file().values()))
    assert annotated.name.endswith("pressure_kernels.py") and annotated.found
    assert annotated.first == min(by_line) and annotated.first + len(annotated.text) - 1 == max(by_line)
    source = Path(pk.__file__).read_text().splitlines()
    for n, stats in by_line.items():
        i = n - annotated.first
        assert annotated.text[i] == source[n - 1].rstrip()
        assert annotated.live[i] == stats.live["vgpr"]
        assert (annotated.stores[i], annotated.reloads[i]) == (stats.spill_stores + stats.inlined_stores,
                                                              stats.spill_reloads + stats.inlined_reloads)
    assert annotated.stores[pk.marked_line("KEEP") - annotated.first] > 0
    assert annotated.reloads[pk.marked_line("USE") - annotated.first] > 0
    assert list(annotated.hot) == sorted(s.frame[1] for s in after.top_lines(where.HOT_LINES)
                                         if s.frame[1] in by_line)
    # A stretch longer than the cap keeps the lines around the hottest.
    old_cap = where.MAX_ANNOTATED_LINES
    try:
        where.MAX_ANNOTATED_LINES = 4
        (cut,) = annotated_files(after, paths)
    finally:
        where.MAX_ANNOTATED_LINES = old_cap
    hottest = max(by_line.values(), key=lambda s: s.live["vgpr"]).frame[1]
    assert len(cut.text) == 4 and cut.first <= hottest < cut.first + 4


# A library outside the project: tests/pressure_kernels.py as ``wherelib.kern``, with a launcher of its own.
LIBRARY_LAUNCHER = '''

def launch_spill(x, y, out, block, n):
    spill_kernel[(1,)](x, y, out, BLOCK=block, N=n, num_warps=1)  # LAUNCH
'''

LIBRARY_KEYS = '''
import sys

sys.path.insert(0, {libs!r})

import regsurvey as rs
from wherelib.kern import launch_spill

matrix = rs.Matrix(targets=["gfx950"], n=[4])


@matrix.kind(axes=["n"])
def spill(n):
    x, y, out = rs.tensor((8192,), "fp32"), rs.tensor((4 * 8192,), "fp32"), rs.tensor((8192,), "fp32")
    launch_spill(x, y, out, {block}, n)  # CALL
'''


def library_copies(base: Path) -> tuple[Path, Path]:
    """``wherelib`` twice: in a directory named site-packages, and in one that is not (a PYTHONPATH or
    ``.pth`` directory); the same files."""
    copies = (base / "venv" / "lib" / "python3.12" / "site-packages", base / "proof" / "libs-from")
    for libs in copies:
        (libs / "wherelib").mkdir(parents=True)
        (libs / "wherelib" / "__init__.py").write_text("")
        (libs / "wherelib" / "kern.py").write_text(Path(pk.__file__).read_text() + LIBRARY_LAUNCHER)
    return copies


def marked(path: Path, marker: str) -> int:
    """The line of ``path`` that ends with ``# <marker>``."""
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if line.rstrip().endswith(f"# {marker}"))


COMPILE = '''
import sys

sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from wherelib.kern import peak_kernel

signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "BLOCK": "constexpr"}
compiled = triton.compile(ASTSource(peak_kernel, signature, {"BLOCK": 256}, {}),
                          target=GPUTarget("hip", "gfx942", 64), options={"num_warps": 1})
sys.stdout.write(compiled.asm["amdgcn"])
'''


def test_a_library_imported_from_another_directory_has_not_moved(tmp_path: Path) -> None:
    """Issue 35's defect 5, from two real compiles of one kernel: imported from a site-packages directory,
    then from another directory on sys.path. Its lines are the same lines: nothing moved."""
    from regsurvey.pressure.amd import amd_pressure
    from regsurvey.where import annotated_files, hot_lines

    pressures = []
    for i, libs in enumerate(library_copies(tmp_path)):
        # Each its own Triton cache: Triton's hash leaves the path out, and would serve the first's object.
        out = subprocess.run([sys.executable, "-c", COMPILE, str(libs)], capture_output=True, text=True, timeout=600,
                             env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / f"cache{i}")}, check=True)
        pressures.append(amd_pressure(out.stdout, "gfx942"))
    before, after = pressures
    ours = [tuple(f for f in p.files if "wherelib" in f) for p in pressures]
    assert ours[0] != ours[1]  # the objects name each its own directory
    paths = SourcePaths(None, None)
    assert where_changes(before, after, paths, paths) == ()
    peak = f"wherelib/kern.py:{marked(tmp_path / 'proof' / 'libs-from' / 'wherelib' / 'kern.py', 'PEAK')}"
    assert [h.line for h in hot_lines(before, paths)] == [h.line for h in hot_lines(after, paths)]
    assert hot_lines(after, paths)[0].line == peak
    assert [f.name for f in annotated_files(before, paths)] == [f.name for f in annotated_files(after, paths)] == \
        ["wherelib/kern.py"]


def test_diff_of_a_library_imported_from_two_directories(tmp_path: Path) -> None:
    """The same under a survey: commit 1 imports the library from a site-packages directory, commit 2 from
    another (its keys file puts each on sys.path) and launches twice the tile. The peak stays on the
    library's loop line and is said to rise there, not to move to another file; each side's launch site in
    the library has one name."""
    site, elsewhere = library_copies(tmp_path / "libs")
    repo = tmp_path / "proj"
    (repo / "keys").mkdir(parents=True)
    (repo / "keys" / "k.py").write_text(LIBRARY_KEYS.format(libs=str(site), block=4096))
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "the library from site-packages")
    (repo / "keys" / "k.py").write_text(LIBRARY_KEYS.format(libs=str(elsewhere), block=8192))
    commit_all(repo, "from another directory, twice the block")
    out = subprocess.run([sys.executable, "-m", "regsurvey", "diff", "HEAD~1", "HEAD", "-q", "--format", "json"],
                         cwd=repo, capture_output=True, text=True, timeout=900,
                         env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")})
    assert out.returncode == 0, out.stderr
    (row,) = json.loads(out.stdout)["rows"]
    kern = site / "wherelib" / "kern.py"
    loop = f"wherelib/kern.py:{marked(kern, 'LOOP')}"
    (sentence,) = row["where"]
    assert sentence.startswith(f"the VGPR peak at {loop} rose from "), sentence
    assert row["hot_lines"]["before"][0]["line"] == row["hot_lines"]["after"][0]["line"] == loop
    for side in ("before", "after"):
        assert row[side]["where"] == f"wherelib/kern.py:{marked(kern, 'LAUNCH')}"
        assert row[side]["project_where"] == f"keys/k.py:{marked(repo / 'keys' / 'k.py', 'CALL')}"
