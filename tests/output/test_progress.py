"""``output/progress.py`` following real surveys of two revisions (the toy project's GEMM on sm90: 2 keys at
HEAD~1, 3 at HEAD): in a terminal a bar per revision, named after it and counting to its own total; elsewhere
plain lines a log keeps, each naming its revision."""

from __future__ import annotations

import io
import re
import shutil
import time
from pathlib import Path

import pytest

from regsurvey.model.options import SurveyOptions
from regsurvey.model.results import Row, Survey
from regsurvey.output import progress_lines
from regsurvey.output.progress import SurveyCount, WorkCount, clock, survey_progress
from regsurvey.output.progress_lines import is_progress_line
from regsurvey.revisions.obtain import open_store
from regsurvey.revisions.range import obtain_surveys, survey_store

from ..conftest import TOY, commit_all, git

GEMM_ON_SM90 = SurveyOptions(targets=("sm90",), kinds=("gemm",), jobs=2)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DONE_OF = re.compile(r"(\d+)/(\d+)")


class Terminal(io.StringIO):
    """What rich draws on a terminal, kept."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def two_commits(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The toy project, then a commit that adds a third width (the GEMM: 2 keys, then 3)."""
    repo = tmp_path_factory.mktemp("progress") / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "toy project")
    keys = repo / "keys" / "toy.py"
    keys.write_text(keys.read_text().replace("width=[2, 8]", "width=[2, 8, 16]"))
    commit_all(repo, "a third width")
    return repo, [git(repo, "rev-parse", rev) for rev in ("HEAD~1", "HEAD")]


def surveys(repo: Path, progress_stream: io.StringIO, interval: float = 10.0) -> list[Survey]:
    store = open_store(repo.parent / "store", repo)
    with survey_store(store, GEMM_ON_SM90) as used, survey_progress(stream=progress_stream,
                                                                    interval=interval) as progress:
        return obtain_surveys(repo, ["HEAD~1", "HEAD"], used, GEMM_ON_SM90, progress)


def test_a_bar_per_revision_named_after_it(two_commits: tuple[Path, list[str]],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # every column drawn whole
    monkeypatch.setenv("TERM", "xterm")
    repo, (base, head) = two_commits
    terminal = Terminal()
    before, after = surveys(repo, terminal)
    assert (len(before.rows), len(after.rows)) == (2, 3)
    drawn = ANSI.sub("", terminal.getvalue())
    names = [f"HEAD~1 ({base[:10]}), revision 1 of 2", f"HEAD ({head[:10]}), revision 2 of 2"]
    # Each bar's last frame: its revision, all of its own keys done.
    for name, total in zip(names, (2, 3)):
        assert re.search(rf"{re.escape(name)} .* {total}/{total} ", drawn), drawn[-2000:]
    # Never past a total (a single bar for both counted 5/3).
    assert all(int(done) <= int(total) for done, total in DONE_OF.findall(drawn)), drawn[-2000:]


def test_lines_for_a_log_name_each_revision(two_commits: tuple[Path, list[str]]) -> None:
    repo, (base, head) = two_commits
    log = io.StringIO()
    before, after = surveys(repo, log, interval=0.05)
    text = log.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    for name, survey in ((f"HEAD~1 ({base[:10]}), revision 1 of 2", before),
                         (f"HEAD ({head[:10]}), revision 2 of 2", after)):
        total = len({r.key for r in survey.rows})
        own = [line for line in lines if line.startswith(f"regsurvey: {name}: ")]
        assert f"regsurvey: surveying {name}" in lines
        # While the keys are listed (every interval: this one is short), then once they are.
        listing = [line for line in own if line.startswith(f"regsurvey: {name}: listing keys; ")]
        assert own[:len(listing)] == listing
        own = own[len(listing):]
        assert own[0].startswith(f"regsurvey: {name}: {total} keys to survey; ")
        compiled = sum(r.ok and not r.reused for r in survey.rows)
        reused = sum(r.ok and r.reused for r in survey.rows)
        failed = sum(r.failed for r in survey.rows)
        assert re.fullmatch(rf"regsurvey: {re.escape(name)}: {total}/{total} keys, {compiled} builds? compiled, "
                            rf"{reused} reused, {failed} failed; done in \d+s", own[-1]), own[-1]
        # Between (where a key finished since the last line): keys done of this revision's total, never past it.
        for line in own[1:-1]:
            found = re.fullmatch(rf"regsurvey: {re.escape(name)}: (\d)/{total} keys?, .* elapsed(, about \S+ left)?",
                                 line)
            assert found and int(found.group(1)) < total, line
    # The first revision's lines all come before the second's.
    assert lines.index(f"regsurvey: surveying HEAD ({head[:10]}), revision 2 of 2") > max(
        i for i, line in enumerate(lines) if "revision 1 of 2" in line)
    # Every line of a real survey's log is one the CI script recognises (output/progress_lines).
    assert lines and all(is_progress_line(line) for line in lines)


def test_a_count_says_where_it_is() -> None:
    count = SurveyCount("HEAD~1 (abc1234567), revision 1 of 2", began=100.0)
    assert count.line(112.0) == "regsurvey: HEAD~1 (abc1234567), revision 1 of 2: listing keys; 12s elapsed"
    count.start(1)
    assert count.line(130.0).endswith(": 1 key to survey; 30s elapsed")
    assert [clock(s) for s in (0.4, 59, 61, 3599, 3725)] == ["0s", "59s", "1m01s", "59m59s", "1h02m"]


def test_every_line_shape_is_recognised_and_nothing_else() -> None:
    count = SurveyCount("HEAD (abc1234567)", began=0.0)
    said = [progress_lines.surveying("HEAD (abc1234567)"), count.line(3.0)]
    count.start(2)
    said.append(count.line(4.0))
    count.add([Row(key="k/w2", kind="k", axes={}, target="sm90", kernel="k", status="ok")])
    said.append(count.line(9.0))
    count.add([Row(key="k/w4", kind="k", axes={}, target="sm90", kernel="k", status="ok", reused=True)])
    said.append(count.line(12.0))
    assert said[-1] == "regsurvey: HEAD (abc1234567): 2/2 keys, 1 build compiled, 1 reused, 0 failed; done in 12s"
    assert all(is_progress_line(line) and is_progress_line(line + "\n") for line in said)
    # What a check says besides its progress stays in the report of a check that could not judge.
    for other in ("regsurvey: warning: stored object objects/ab/ab.cubin does not match its sha256",
                  "regsurvey: error: unknown target 'gfx1030'", "regsurvey: surveying", "Traceback (most recent "
                  "call last):", "regsurvey: HEAD: 3 keys failed to build"):
        assert not is_progress_line(other), other


def test_the_work_after_the_surveys_is_counted_alike() -> None:
    """What a command does after its surveys before any output (the changed builds' source-line pressure: an
    nvdisasm run per cubin) says what it does and how far it is, in lines the CI script recognises."""
    work = WorkCount("source-line pressure of 3 changed builds", "cubin", 6, began=0.0)
    said = [work.first_line(), work.line(5.0)]
    work.done = 2
    said.append(work.line(10.0))
    work.done = 6
    said.append(work.line(31.0))
    assert said == ["regsurvey: source-line pressure of 3 changed builds (6 cubins)",
                    "regsurvey: source-line pressure of 3 changed builds: 0/6 cubins; 5s elapsed",
                    "regsurvey: source-line pressure of 3 changed builds: 2/6 cubins; 10s elapsed, about 20s left",
                    "regsurvey: source-line pressure of 3 changed builds: 6/6 cubins; done in 31s"]
    assert all(is_progress_line(line) and is_progress_line(line + "\n") for line in said)
    assert not is_progress_line("regsurvey: warning: stored object objects/ab/ab.cubin is missing (2 cubins)")


def test_the_work_after_the_surveys_in_a_log_and_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    log = io.StringIO()
    with survey_progress(stream=log, interval=0.05) as progress:
        progress.on_work("source-line pressure of 2 changed builds", "cubin", 3)
        for _ in range(3):
            time.sleep(0.12)
            progress.on_item()
    lines = log.getvalue().splitlines()
    assert lines[0] == "regsurvey: source-line pressure of 2 changed builds (3 cubins)"
    assert re.fullmatch(r"regsurvey: source-line pressure of 2 changed builds: 3/3 cubins; done in \ds", lines[-1])
    between = lines[1:-1]
    assert between and all(re.fullmatch(r"regsurvey: source-line pressure of 2 changed builds: [12]/3 cubins; "
                                        r"\ds elapsed, about \ds left", line) for line in between), lines
    assert all(is_progress_line(line) for line in lines)
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setenv("TERM", "xterm")
    terminal = Terminal()
    with survey_progress(stream=terminal) as progress:
        progress.on_work("source-line pressure of 2 changed builds", "cubin", 3)
        for _ in range(3):
            progress.on_item()
            time.sleep(0.1)  # a frame drawn
    drawn = ANSI.sub("", terminal.getvalue())
    assert re.search(r"source-line pressure of 2 changed builds .* 3/3 cubins", drawn), drawn[-2000:]
