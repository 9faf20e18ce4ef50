"""The surveys a comparison needs (regsurvey.revisions.range), where no compile is needed: ``BASE..HEAD``
ranges along first parents, survey JSON files standing in for revisions (narrowed to the selection),
and the temporary store a selection of kinds or keys is surveyed into."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.engine.survey import SurveyOptions
from regsurvey.model.results import Row, Survey
from regsurvey.repo.checkout import CheckoutError
from regsurvey.revisions.range import (
    RangeCommit,
    commit_range,
    is_survey_file,
    load_survey_file,
    obtain_surveys,
    survey_store,
)
from regsurvey.store.store import Store, StoreError

from ..conftest import commit_all, git
from ..lint_surveys import clean_and_mutated


def commit(repo: Path, message: str) -> str:
    """A commit changing ``history.txt``; return its sha."""
    with (repo / "history.txt").open("a") as f:
        f.write(f"{message}\n")
    return commit_all(repo, message)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """main: base, one, two, a merge of the side branch (side1, side2 made off one), three."""
    repo = tmp_path_factory.mktemp("range") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "docs").mkdir()
    (repo / "docs" / "notes.txt").write_text("notes\n")
    shas = {"base": commit(repo, "base"), "one": commit(repo, "one")}
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "side.txt").write_text("side 1\n")
    shas["side1"] = commit_all(repo, "side1")
    (repo / "side.txt").write_text("side 2\n")
    shas["side2"] = commit_all(repo, "side2")
    git(repo, "checkout", "-q", "main")
    shas["two"] = commit(repo, "two")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    shas["merge"] = git(repo, "rev-parse", "HEAD")
    shas["three"] = commit(repo, "three")
    return repo, shas


def test_a_range_is_its_first_parents_oldest_first(history: tuple[Path, dict[str, str]]) -> None:
    repo, shas = history
    base, commits = commit_range(repo, "main~4..main")
    assert base == shas["base"]
    assert commits == [RangeCommit(shas["one"], "one"), RangeCommit(shas["two"], "two"),
                       RangeCommit(shas["merge"], "merge side"), RangeCommit(shas["three"], "three")]
    # The side branch's commits are not the range's: they come in with the merge.
    assert shas["side1"] not in {c.sha for c in commits}


def test_either_end_of_a_range_defaults_to_head(history: tuple[Path, dict[str, str]]) -> None:
    repo, shas = history
    base, commits = commit_range(repo, f"{shas['two'][:9]}..")
    assert base == shas["two"] and [c.subject for c in commits] == ["merge side", "three"]
    base, commits = commit_range(repo, f"{shas['base']}..{shas['one']}")
    assert (base, commits) == (shas["base"], [RangeCommit(shas["one"], "one")])
    # From a subdirectory, by branch names.
    base, commits = commit_range(repo / "docs", "side~1..side")
    assert (base, [c.sha for c in commits]) == (shas["side1"], [shas["side2"]])


@pytest.mark.parametrize("spec", ["main", "main...side", "main~2..main..side", "main~1.main"])
def test_a_spec_that_is_no_range_is_a_one_line_error(history: tuple[Path, dict[str, str]], spec: str) -> None:
    repo, _ = history
    with pytest.raises(CheckoutError) as raised:
        commit_range(repo, spec)
    assert str(raised.value) == f"expected a range BASE..HEAD, got {spec!r}"


def test_a_range_with_no_commit_is_an_error(history: tuple[Path, dict[str, str]]) -> None:
    repo, _ = history
    for spec, head in [("main..main~2", "main~2"), ("main..", "HEAD"), ("..main", "main")]:
        with pytest.raises(CheckoutError) as raised:
            commit_range(repo, spec)
        assert str(raised.value).startswith(f"the range {spec} holds no commit ({head} is not ahead of ")


def test_a_range_of_unknown_revisions_is_an_error(history: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    repo, _ = history
    with pytest.raises(CheckoutError, match=r"^unknown revision 'nosuch' in "):
        commit_range(repo, "nosuch..main")
    with pytest.raises(CheckoutError, match=r"^revision '--all' starts with '-'"):
        commit_range(repo, "main~1..--all")
    with pytest.raises(CheckoutError, match="a commit range needs a git repository"):
        commit_range(tmp_path, "HEAD~1..HEAD")


def test_a_commit_without_a_message_is_still_in_the_range(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    base = commit(tmp_path, "base")
    (tmp_path / "a.txt").write_text("a\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "--allow-empty-message", "-m", "")
    silent = git(tmp_path, "rev-parse", "HEAD")
    last = commit(tmp_path, "last")
    assert commit_range(tmp_path, "main~2..main") == (base, [RangeCommit(silent, ""), RangeCommit(last, "last")])


@pytest.fixture(scope="module")
def survey_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Survey]:
    """A survey saved by ``regsurvey run --format json``: real gfx950 rows, and those keys failing on sm90."""
    base, _ = clean_and_mutated()
    sm90 = tuple(replace(r, target="sm90", status="error", error="PTXASError: out of registers", resources={},
                         object=None, lint=None) for r in base.rows)
    both = replace(base, targets=("gfx950", "sm90"), rows=tuple(r for pair in zip(base.rows, sm90) for r in pair))
    path = tmp_path_factory.mktemp("files") / "survey.json"
    path.write_text(both.to_json())
    return path, both


def test_a_survey_file_is_a_revision(survey_file: tuple[Path, Survey], tmp_path: Path) -> None:
    path, _ = survey_file
    assert is_survey_file(str(path))
    assert not is_survey_file(None)
    assert not is_survey_file(str(tmp_path / "missing.json"))  # not a file: a (strange) revision name
    (tmp_path / "folder.json").mkdir()
    assert not is_survey_file(str(tmp_path / "folder.json"))
    text = tmp_path / "survey.txt"
    text.write_text(path.read_text())
    assert not is_survey_file(str(text))
    assert not is_survey_file("HEAD~1")


def test_a_survey_file_loads_whole_or_narrowed(survey_file: tuple[Path, Survey]) -> None:
    path, both = survey_file
    assert load_survey_file(str(path)) == both
    assert load_survey_file(str(path), SurveyOptions()) == both

    def ids(survey: Survey) -> list[tuple[str, str]]:
        return [(r.key, r.target) for r in survey.rows]

    only_sm90 = load_survey_file(str(path), SurveyOptions(targets=("sm90",)))
    assert only_sm90.targets == ("sm90",) and ids(only_sm90) == [("buffers/w8", "sm90"), ("gemm/w2", "sm90")]
    gemm = load_survey_file(str(path), SurveyOptions(kinds=("ge*",)))
    assert gemm.targets == ("gfx950", "sm90") and ids(gemm) == [("gemm/w2", "gfx950"), ("gemm/w2", "sm90")]
    one = load_survey_file(str(path), SurveyOptions(targets=("gfx950",), keys=("buffers/*", "nothing")))
    assert ids(one) == [("buffers/w8", "gfx950")]
    assert one.rows[0] == both.rows[0]  # the row itself: figures and findings
    none = load_survey_file(str(path), SurveyOptions(kinds=("BUFFERS",)))  # globs match case-sensitively
    assert none.rows == ()


@pytest.mark.parametrize(("content", "says"), [
    (None, "No such file or directory"),
    (b"{", "not JSON"),
    (b"\xff\xfe{}", "codec can't decode"),
    (b'{"schema_version": 99}', "schema version 99"),
    (b'{"rows": []}', "no schema_version"),
])
def test_an_unusable_survey_file_is_a_one_line_error(tmp_path: Path, content: bytes | None, says: str) -> None:
    path = tmp_path / "survey.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(StoreError) as raised:
        load_survey_file(str(path))
    message = str(raised.value)
    assert message.startswith(f"survey file {path} is unusable: ") and says in message and "\n" not in message


def test_obtain_surveys_of_files_surveys_nothing(survey_file: tuple[Path, Survey], tmp_path: Path) -> None:
    path, both = survey_file
    other = tmp_path / "other.json"
    head = json.loads(path.read_text())
    head["label"] = "elsewhere"
    other.write_text(json.dumps(head))
    store = Store(tmp_path / "store")
    options = SurveyOptions(targets=("gfx950",))
    surveys = obtain_surveys(tmp_path, [str(path), str(other)], store, options)
    assert [s.label for s in surveys] == [both.label, "elsewhere"]
    assert [[r.target for r in s.rows] for s in surveys] == [["gfx950", "gfx950"]] * 2
    assert not (tmp_path / "store").exists()  # nothing surveyed, nothing stored


def test_a_selection_is_surveyed_into_a_store_of_its_own(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    with survey_store(store, SurveyOptions(targets=("sm90",))) as chosen:
        assert chosen is store  # every key: the repository's store
    for options in (SurveyOptions(kinds=("gemm",)), SurveyOptions(keys=("gemm/*",))):
        with survey_store(store, options) as chosen:
            assert chosen is not store and chosen.root.parent.is_dir()
            chosen.save(Survey(commit="a" * 40, label="x", targets=("sm90",), toolchain={}, rows=(
                Row(key="gemm/w2", kind="gemm", axes={}, target="sm90", kernel=None, status="skipped"),)))
            temporary = chosen.root.parent
        assert not temporary.exists()  # removed with what was saved in it
    assert not (tmp_path / "store").exists()
