"""Getting the survey of a revision (regsurvey.revisions.obtain): a stored survey is reused only when it covers
the targets asked for and was made with the same toolchain block and by the same reader revision; any
other is surveyed again (and stored).

The rule's cases run against a repository without a ``keys/`` directory: a survey of it stops at once with
"no keys/ directory", so a decision to survey shows without compiling anything. One test surveys the toy
project for real (once cold, then warm from the result cache)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.compile.toolchain import toolchain_info
from regsurvey.engine.errors import SurveyError
from regsurvey.model.options import SurveyOptions
from regsurvey.model.results import Survey
from regsurvey.model.version import READER_REVISION
from regsurvey.repo.checkout import CheckoutError
from regsurvey.revisions.obtain import current_toolchain, default_store, obtain_survey, open_store, selection_text
from regsurvey.store.store import Store, selection_name

from ..conftest import commit_all, git, reseal
from ..lint_surveys import clean_and_mutated

GFX950 = SurveyOptions(targets=("gfx950",), jobs=2)


@pytest.fixture(scope="module")
def hip_toolchain() -> dict[str, dict]:
    return current_toolchain(["gfx950"])


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, str]:
    """A repository with kernels but no keys/: surveying any of its revisions is a SurveyError."""
    repo = tmp_path / "project"
    (repo / "kernels").mkdir(parents=True)
    (repo / "kernels" / "ops.py").write_text("# kernels\n")
    git(repo, "init", "-q", "-b", "main")
    return repo, commit_all(repo, "kernels")


def stored_survey(commit: str, toolchain: dict[str, dict], reader: str = READER_REVISION) -> Survey:
    """A real gfx950 survey (the lint fixtures' rows) as if made of ``commit`` and stored."""
    base, _ = clean_and_mutated()
    return replace(base, commit=commit, label="HEAD", toolchain=toolchain, reader=reader,
                   created="2025-01-01T00:00:00")


def surveys_again(start: Path, rev: str | None, store: Store, options: SurveyOptions = GFX950,
                  reuse: bool = True) -> None:
    """obtain_survey goes on to survey ``rev`` (and finds nothing to survey)."""
    with pytest.raises(SurveyError, match=r"no keys/ directory in .*: nothing to survey"):
        obtain_survey(start, rev, store, options, reuse=reuse)


def test_the_default_store_is_at_the_repository_root(project: tuple[Path, str], tmp_path: Path) -> None:
    repo, _ = project
    assert default_store(repo / "kernels").root == repo / ".regsurvey"
    assert open_store(None, repo / "kernels").root == repo / ".regsurvey"
    assert open_store(tmp_path / "elsewhere", repo).root == tmp_path / "elsewhere"
    plain = tmp_path / "plain"
    plain.mkdir()
    assert default_store(plain).root == plain / ".regsurvey"


def test_the_toolchain_block_is_per_backend(hip_toolchain: dict[str, dict]) -> None:
    import triton

    assert list(hip_toolchain) == ["hip"]
    assert hip_toolchain["hip"] == toolchain_info("hip")
    assert hip_toolchain["hip"]["triton"] == triton.__version__ and "amd_codegen_revision" in hip_toolchain["hip"]
    both = current_toolchain(["sm90", "gfx950", "gfx942"])
    assert list(both) == ["cuda", "hip"] and both["hip"] == hip_toolchain["hip"]
    assert "sm90" in both["cuda"]["ptxas"]
    assert current_toolchain([]) == {}


def test_a_survey_of_this_toolchain_and_these_readers_is_reused(project: tuple[Path, str],
                                                               hip_toolchain: dict[str, dict],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    repo, sha = project
    store = default_store(repo)
    stored = stored_survey(sha, hip_toolchain)
    store.save(stored)
    # Reused, and named as this command asks for it (not as the run that stored it did).
    assert obtain_survey(repo, "HEAD", store, GFX950) == replace(stored, label=f"HEAD ({sha[:10]})")
    assert obtain_survey(repo, sha[:10], store, GFX950) == replace(stored, label=sha[:10])
    # The working tree, clean at that commit, is that commit.
    assert obtain_survey(repo / "kernels", None, store, GFX950) == replace(stored, label="working tree")
    assert capsys.readouterr().err == ""
    # Not when asked not to reuse it, nor for a working tree with edits.
    surveys_again(repo, "HEAD", store, reuse=False)
    (repo / "kernels" / "ops.py").write_text("# kernels, edited\n")
    surveys_again(repo, None, store)


def test_without_targets_the_matrices_targets_of_a_full_survey_are_reused(project: tuple[Path, str],
                                                                         hip_toolchain: dict[str, dict]) -> None:
    repo, sha = project
    store = default_store(repo)
    stored = stored_survey(sha, hip_toolchain)
    store.save(stored)  # a --target survey: not known to be every target of the matrices
    surveys_again(repo, "HEAD", store, SurveyOptions())
    store.save(stored, default_targets=True)
    assert obtain_survey(repo, "HEAD", store, SurveyOptions()) == replace(stored, label=f"HEAD ({sha[:10]})")


def test_a_survey_missing_a_target_is_not_reused(project: tuple[Path, str], hip_toolchain: dict[str, dict],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    repo, sha = project
    store = default_store(repo)
    store.save(stored_survey(sha, hip_toolchain))
    surveys_again(repo, "HEAD", store, SurveyOptions(targets=("gfx950", "gfx942")))
    # gfx950 is served; gfx942 alone is surveyed, saying why.
    assert capsys.readouterr().err == (f"regsurvey: surveying HEAD ({sha[:10]}) again on gfx942: the stored survey "
                                       "lacks target gfx942\n")


def test_a_selection_of_kinds_or_keys_is_always_surveyed(project: tuple[Path, str],
                                                         hip_toolchain: dict[str, dict]) -> None:
    repo, sha = project
    store = default_store(repo)
    store.save(stored_survey(sha, hip_toolchain))
    surveys_again(repo, "HEAD", store, SurveyOptions(targets=("gfx950",), kinds=("gemm",)))
    surveys_again(repo, "HEAD", store, SurveyOptions(targets=("gfx950",), keys=("gemm/*",)))


@pytest.mark.parametrize(("change", "said"), [
    ("triton", 'hip triton: "3.0.0" → "{triton}"'),
    ("codegen", 'hip amd_codegen_revision: "another" → "{codegen}'),
    ("fp fusion", "hip fp_fusion: false → true"),
    ("no toolchain", "none recorded for hip"),
])
def test_a_survey_of_another_toolchain_is_not_reused(project: tuple[Path, str], hip_toolchain: dict[str, dict],
                                                     change: str, said: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    repo, sha = project
    hip = dict(hip_toolchain["hip"])
    assert hip["fp_fusion"] is True
    toolchain: dict[str, dict] = {"hip": hip}
    if change == "triton":
        hip["triton"] = "3.0.0"
    elif change == "codegen":
        hip["amd_codegen_revision"] = "another"
    elif change == "fp fusion":
        hip["fp_fusion"] = False
    else:
        toolchain = {}
    store = default_store(repo)
    store.save(stored_survey(sha, toolchain))
    surveys_again(repo, "HEAD", store)
    (line,) = capsys.readouterr().err.splitlines()
    now = hip_toolchain["hip"]
    expected = said.format(triton=now["triton"], codegen=str(now["amd_codegen_revision"])[:36])
    assert line.startswith(f"regsurvey: surveying HEAD ({sha[:10]}) again: the toolchain changed since the stored "
                           f"survey of gfx950 ({expected}"), line


def test_a_target_is_judged_by_its_own_backends_toolchain(project: tuple[Path, str],
                                                          hip_toolchain: dict[str, dict],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # Issue #30 item 2: a survey of gfx950 and sm90 kept both toolchain blocks in each target's file, and
    # `--target sm90` then found {cuda} != {cuda, hip}: "another toolchain", surveyed again.
    repo, sha = project
    store = default_store(repo)
    both = {**hip_toolchain, "cuda": {"triton": hip_toolchain["hip"]["triton"], "ptxas": {"sm90": "another"}}}
    (path,) = store.save(stored_survey(sha, both))
    assert Survey.from_json(path.read_text()).toolchain == hip_toolchain  # each target keeps its backend's
    stored = stored_survey(sha, hip_toolchain)
    assert obtain_survey(repo, "HEAD", store, GFX950) == replace(stored, label=f"HEAD ({sha[:10]})")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("reader", "named"), [("0.0.1+readers1", "0.0.1+readers1"),
                                               ("", "of an unknown revision")])
def test_a_survey_by_other_readers_is_not_reused(project: tuple[Path, str], hip_toolchain: dict[str, dict],
                                                 reader: str, named: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    repo, sha = project
    store = default_store(repo)
    store.save(stored_survey(sha, hip_toolchain, reader=reader))  # the same toolchain
    surveys_again(repo, "HEAD", store)
    assert capsys.readouterr().err.splitlines() == [
        f"regsurvey: surveying HEAD ({sha[:10]}) again: the stored survey of gfx950 was made by regsurvey readers "
        f"{named} (these are {READER_REVISION})"]


def test_targets_stored_by_two_reader_revisions_are_not_reused(project: tuple[Path, str],
                                                              hip_toolchain: dict[str, dict],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    repo, sha = project
    store = default_store(repo)
    stored = stored_survey(sha, hip_toolchain)
    store.save(stored)
    store.save(replace(stored, targets=("gfx942",), rows=tuple(replace(r, target="gfx942") for r in stored.rows),
                       reader="0.0.1+readers1"))
    assert obtain_survey(repo, "HEAD", store, GFX950).rows == stored.rows  # gfx950 alone is these readers'
    surveys_again(repo, "HEAD", store, SurveyOptions(targets=("gfx950", "gfx942")))
    # gfx942 alone is surveyed again: gfx950 is served as it is.
    assert capsys.readouterr().err.splitlines() == [
        f"regsurvey: surveying HEAD ({sha[:10]}) again on gfx942: the stored survey of gfx942 was made by regsurvey "
        f"readers 0.0.1+readers1 (these are {READER_REVISION})"]


def test_a_damaged_stored_survey_is_reported_and_surveyed_again(project: tuple[Path, str],
                                                                hip_toolchain: dict[str, dict],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    repo, sha = project
    store = default_store(repo)
    (path,) = store.save(stored_survey(sha, hip_toolchain))
    path.write_text(path.read_text()[:-100])
    reseal(path)  # cut, with its checksum recomputed: what the survey's own reading finds
    surveys_again(repo, "HEAD", store)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"regsurvey: surveying HEAD ({sha[:10]}) again: stored survey {path} is unusable: "
                           "not JSON (")


def test_an_unknown_revision_or_no_repository_is_an_error(project: tuple[Path, str], tmp_path: Path) -> None:
    repo, _ = project
    with pytest.raises(CheckoutError, match="unknown revision 'nosuch'"):
        obtain_survey(repo, "nosuch", default_store(repo), GFX950)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(CheckoutError, match="'HEAD' names a git revision, and .* is not in a git repository"):
        obtain_survey(plain, "HEAD", default_store(plain), GFX950)


def test_a_survey_by_other_readers_is_replaced_by_these_readers_survey(toy_repo: Path,
                                                                      hip_toolchain: dict[str, dict],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    sha = git(toy_repo, "rev-parse", "HEAD")
    store = default_store(toy_repo)
    # What an earlier regsurvey stored for this commit: another revision's readers, other rows.
    store.save(stored_survey(sha, hip_toolchain, reader="0.0.1+readers1"))
    fresh = obtain_survey(toy_repo, "HEAD", store, GFX950)
    assert "was made by regsurvey readers 0.0.1+readers1" in capsys.readouterr().err
    assert (fresh.commit, fresh.reader, fresh.toolchain, fresh.targets) == (sha, READER_REVISION, hip_toolchain,
                                                                           ("gfx950",))
    assert [r.key for r in fresh.rows] == ["scale/w2/nostop", "scale/w2/stop", "scale/w8/nostop", "scale/w8/stop",
                                           "gemm/w2", "gemm/w8"]
    assert all(r.ok and r.resources["vgpr"] > 0 for r in fresh.rows)
    # Stored in the old one's place, named by its short sha (not "HEAD", as this call named it).
    assert store.load(sha, ["gfx950"]) == replace(fresh, label=sha[:10])
    # Now it is reused as it is: the same survey, nothing compiled, nothing said.
    assert obtain_survey(toy_repo, "HEAD", store, GFX950) == fresh
    assert capsys.readouterr().err == ""

    # The toolchain block changed (as after an upgrade of Triton): surveyed again; the kernels Triton
    # hashes the same come from the content-addressed result cache, with the same figures.
    stored = toy_repo / ".regsurvey" / "surveys" / sha / "gfx950.json"
    data = json.loads(stored.read_text())
    data["toolchain"]["hip"]["amd_codegen_revision"] = "older"
    stored.write_text(json.dumps(data))
    reseal(stored)
    again = obtain_survey(toy_repo, "HEAD", store, GFX950)
    assert again.toolchain == hip_toolchain and all(r.reused for r in again.rows)
    assert [r.resources for r in again.rows] == [r.resources for r in fresh.rows]
    assert store.load(sha, ["gfx950"]) == replace(again, label=sha[:10])

    # A selection of kinds is surveyed and kept apart: the whole survey stays.
    scale = obtain_survey(toy_repo, "HEAD", store, SurveyOptions(targets=("gfx950",), kinds=("scale",), jobs=2))
    assert [r.kind for r in scale.rows] == ["scale"] * 4 and all(r.reused for r in scale.rows)
    selection = selection_text(SurveyOptions(kinds=("scale",)))
    assert (toy_repo / ".regsurvey" / "surveys" / sha / "partial" / selection_name(selection) / "gfx950.json").is_file()
    # A later survey of the same selection finds it.
    assert store.load(sha, ["gfx950"], selection) == replace(scale, label=sha[:10])
    assert store.load(sha, ["gfx950"]) == replace(again, label=sha[:10])
    assert git(toy_repo, "status", "--porcelain") == ""  # the store ignores itself


@pytest.mark.parametrize(("failure", "passing"), [
    ({"status": "error", "error": "timed out after 600 s (--timeout)", "transient": True}, True),
    ({"status": "error", "error": "worker process died while surveying the key (exit code -9)", "transient": True},
     True),
    ({"status": "flaky", "error": "LLVM ERROR: lld failed", "flaky": "LLVM ERROR: lld failed"}, True),
    ({"status": "error", "error": "CompilationError: at 4:29: type fp8e4b8 not supported"}, False),
])
def test_a_survey_with_failures_of_the_moment_is_not_reused(project: tuple[Path, str], hip_toolchain: dict[str, dict],
                                                           capsys: pytest.CaptureFixture[str], failure: dict,
                                                           passing: bool) -> None:
    # Issue #12, defect 2: a time-out, a lost worker or an intermittent toolchain failure is not the
    # commit's truth; a compile error is, and is reused like any other row.
    repo, sha = project
    store = default_store(repo)
    stored = stored_survey(sha, hip_toolchain)
    first = stored.rows[0]
    broken = replace(first, resources={}, object=None, lint=None, **failure)
    assert broken.passing_failure is passing
    store.save(replace(stored, rows=(broken, *stored.rows[1:])))
    if passing:
        surveys_again(repo, "HEAD", store)
        (line,) = capsys.readouterr().err.splitlines()
        assert line == (f"regsurvey: surveying HEAD ({sha[:10]}) again: the stored survey of gfx950 has 1 build "
                        "that failed for a cause of the moment (a time-out, a lost worker, an intermittent toolchain "
                        "failure)")
    else:
        assert obtain_survey(repo, "HEAD", store, GFX950).rows[0] == broken


def test_a_damaged_stored_object_is_surveyed_again_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The one policy (``surveyed_and_used``): what ``use`` finds damaged is surveyed again, past the stored
    survey, said on stderr, and used again; damaged again, the error is the caller's."""
    from regsurvey.errors import CorruptObjectError
    from regsurvey.revisions import obtain

    base, head = clean_and_mutated()
    asked: list[bool] = []

    def fake_obtain(start, rev, store, options, progress=None, reuse=True):  # noqa: ANN001, ANN202
        asked.append(reuse)
        return base if reuse else head

    def use(survey: Survey) -> str:
        if survey is base:
            raise CorruptObjectError("objects/ab/abc.hsaco: altered")
        return survey.commit or ""

    monkeypatch.setattr(obtain, "obtain_survey", fake_obtain)
    store = Store(tmp_path / "store")
    assert obtain.surveyed_and_used(tmp_path, "HEAD", store, SurveyOptions(), use) == (head, head.commit)
    assert asked == [True, False]
    warning = f"regsurvey: warning: objects/ab/abc.hsaco: altered; surveying {base.label} again\n"
    assert capsys.readouterr().err == warning
    asked.clear()
    with pytest.raises(CorruptObjectError):
        obtain.surveyed_and_used(tmp_path, "HEAD", store, SurveyOptions(), lambda survey: use(base))
    assert asked == [True, False]
