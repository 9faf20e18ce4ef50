"""The survey store (regsurvey.store.store): one file per commit and target, partial surveys kept apart,
the matrices' own targets remembered, targets merged on load, and a damaged file a one-line StoreError;
a survey that does not prove its commit and target (moved, swapped, without its seal), or is unsigned
while REGSURVEY_CACHE_KEY is set, is refused."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.model.results import Row, Survey
from regsurvey.store.signing import CACHE_KEY_VAR
from regsurvey.store.store import Store, StoreError, selection_name

from ..conftest import commit_all, git, reseal
from ..lint_surveys import clean_and_mutated

CUDA = {"cuda": {"triton": "3.9.0", "python": "3.11", "fp_fusion": True, "fp_fusion_env": None,
                 "ptxas": {"sm90": "fixture"}}}


@pytest.fixture(scope="module")
def surveys() -> tuple[Survey, Survey]:
    """Two real gfx950 surveys (resources of real HSACOs, real lint findings), of commits a... and b..."""
    base, head = clean_and_mutated()
    return replace(base, reader="r1", created="2025-01-01T00:00:00"), replace(head, reader="r1")


def sm90_survey(commit: str | None, reader: str = "r1") -> Survey:
    """The same keys on sm90, where they failed to build (rows without figures), with a CUDA toolchain."""
    rows = (Row(key="buffers/w8", kind="buffers", axes={"width": 8}, target="sm90", kernel=None, status="error",
                error="kind body raised at kernels/fixture.py:10: ValueError: no sm90 variant"),
            Row(key="gemm/w2", kind="gemm", axes={"width": 2}, target="sm90", kernel="matmul_kernel", status="error",
                error="PTXASError: ptxas fatal   : out of registers"))
    return Survey(commit=commit, label="main", targets=("sm90",), toolchain=CUDA, rows=rows, reader=reader,
                  created="2025-01-02T00:00:00")


def two_targets(gfx950: Survey) -> Survey:
    """One survey of both targets, as a run without --target makes it (key by key, then target)."""
    sm90 = sm90_survey(gfx950.commit, gfx950.reader)
    rows = tuple(r for pair in zip(gfx950.rows, sm90.rows) for r in pair)
    return replace(gfx950, targets=("gfx950", "sm90"), toolchain={**gfx950.toolchain, **CUDA}, rows=rows)


def test_each_target_is_its_own_file(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    both = two_targets(base)
    store = Store(tmp_path / "store")
    assert not store.has(base.commit or "")
    paths = store.save(both)
    folder = tmp_path / "store" / "surveys" / base.commit
    assert paths == [folder / "gfx950.json", folder / "sm90.json"]
    assert store.has(base.commit or "") and not store.has("b" * 40)
    for path, target in zip(paths, ["gfx950", "sm90"]):
        text = path.read_text()
        assert "\n" not in text  # kept on one line
        part = Survey.from_json(text)
        assert part.targets == (target,) and part.commit == base.commit
        assert part.rows == tuple(r for r in both.rows if r.target == target) and len(part.rows) == 2
    assert not (folder / "index.json").exists()  # not told these were the matrices' targets
    assert store.default_targets(base.commit or "") is None


def test_a_saved_survey_loads_back_equal(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, head = surveys
    store = Store(tmp_path / "store")
    store.save(base)
    store.save(head)
    assert store.load(base.commit, ["gfx950"]) == base
    loaded = store.load(head.commit, ["gfx950"])
    assert loaded == head
    # The findings are typed, as the lint made them: the head's two miscompile suspects.
    assert loaded is not None and [len(r.lint or ()) for r in loaded.rows] == [len(r.lint or ()) for r in head.rows]
    assert sum(f.is_error for r in loaded.rows for f in r.lint or ()) >= 2


def test_a_working_tree_survey_is_kept_apart_from_commits(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    dirty = replace(base, commit=None, label="working tree (uncommitted changes)", dirty=True)
    store = Store(tmp_path / "store")
    (path,) = store.save(dirty)
    assert path == tmp_path / "store" / "surveys" / "worktree" / "gfx950.json"
    assert store.load(None, ["gfx950"]) == dirty
    assert store.load(base.commit, ["gfx950"]) is None


def test_load_needs_every_target(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    store.save(base)
    assert store.load(base.commit, ["gfx950", "sm90"]) is None
    assert store.load(base.commit, ["sm90"]) is None
    assert store.load("c" * 40, ["gfx950"]) is None


def test_targets_stored_apart_merge_on_load(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    store.save(base)  # `--target gfx950` first
    store.save(sm90_survey(base.commit))  # `--target sm90` later
    merged = store.load(base.commit, ["gfx950", "sm90"])
    assert merged is not None
    assert merged.targets == ("gfx950", "sm90")
    assert merged.toolchain == {**base.toolchain, **CUDA}
    assert [(r.key, r.target) for r in merged.rows] == [
        ("buffers/w8", "gfx950"), ("buffers/w8", "sm90"), ("gemm/w2", "gfx950"), ("gemm/w2", "sm90")]
    assert merged.created == "2025-01-02T00:00:00"  # the later target's
    assert replace(merged, created=base.created) == two_targets(base) and merged.reader == "r1"
    # In the order asked for.
    swapped = store.load(base.commit, ["sm90", "gfx950"])
    assert swapped is not None and swapped.targets == ("sm90", "gfx950")
    assert [r.target for r in swapped.rows] == ["sm90", "gfx950", "sm90", "gfx950"]


def test_targets_stored_by_other_readers_merge_without_a_reader(tmp_path: Path,
                                                               surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    store.save(base)
    store.save(sm90_survey(base.commit, reader="r2"))
    merged = store.load(base.commit, ["gfx950", "sm90"])
    assert merged is not None and merged.reader == ""  # no one revision made it: never reused as this one's
    assert len(merged.rows) == 4


def test_saving_a_target_again_replaces_only_that_target(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, head = surveys
    store = Store(tmp_path / "store")
    store.save(two_targets(base))
    newer = replace(head, commit=base.commit, label=base.label)  # gfx950 surveyed again, other figures
    store.save(newer)
    merged = store.load(base.commit, ["gfx950", "sm90"])
    assert merged is not None
    assert [r for r in merged.rows if r.target == "gfx950"] == list(newer.rows)
    assert [r for r in merged.rows if r.target == "sm90"] == list(sm90_survey(base.commit).rows)


def test_the_matrices_targets_are_remembered(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    store.save(two_targets(base), default_targets=True)
    assert store.default_targets(base.commit or "") == ["gfx950", "sm90"]
    assert store.default_targets("c" * 40) is None
    index = tmp_path / "store" / "surveys" / base.commit / "index.json"
    for damaged in ["{", "[]", '{"targets": ["gfx950"]}', '{"default_targets": 3}']:
        index.write_text(damaged)
        assert store.default_targets(base.commit or "") is None, damaged


def test_a_partial_survey_never_stands_in_for_a_whole_one(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, head = surveys
    store = Store(tmp_path / "store")
    only_gemm = replace(head, commit=base.commit, rows=tuple(r for r in head.rows if r.kind == "gemm"))
    (path,) = store.save(only_gemm, partial=True, selection="kinds=gemm keys=")
    assert path == (tmp_path / "store" / "surveys" / base.commit / "partial" / selection_name("kinds=gemm keys=")
                    / "gfx950.json")
    assert Survey.from_json(path.read_text()) == only_gemm
    assert store.load(base.commit, ["gfx950"]) is None  # a partial survey is not the commit's survey
    # ... but a later survey of the same selection finds it, and of another selection does not.
    assert store.load(base.commit, ["gfx950"], "kinds=gemm keys=") == only_gemm
    assert store.load(base.commit, ["gfx950"], "kinds= keys=gemm/*") is None
    store.save(base, default_targets=True)
    store.save(only_gemm, partial=True, selection="kinds=gemm keys=")  # a later partial survey replaces nothing whole
    assert store.load(base.commit, ["gfx950"]) == base
    assert store.default_targets(base.commit or "") == ["gfx950"]


def test_the_store_ignores_itself_in_git(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "kernels.py").write_text("# kernels\n")
    commit_all(repo, "kernels")
    store = Store(repo / ".regsurvey")
    store.save(surveys[0], default_targets=True)
    store.objects.put(b"\x7fELF object", "hsaco")
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    gitignore = repo / ".regsurvey" / ".gitignore"
    assert gitignore.read_text() == "# created by regsurvey\n*\n"
    gitignore.write_text("# created by regsurvey\n*\n# kept\n")
    store.prepare()  # an existing marker is left as it is
    assert gitignore.read_text().endswith("# kept\n")


def seal_of(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def damage(path: Path, how: str) -> None:
    """Damage a stored survey and recompute its checksum: what the survey's own checks find (a checksum
    mismatch is tested on its own)."""
    damage_only(path, how)
    reseal(path)


def damage_only(path: Path, how: str) -> None:
    text = path.read_text()
    if how == "truncated":
        path.write_text(text[:-200])
    elif how == "not text":
        path.write_bytes(b"\xff\xfe" + path.read_bytes())
    elif how == "other schema":
        data = json.loads(text)
        data["schema_version"] = 99
        path.write_text(json.dumps(data))
    elif how == "not a survey":
        path.write_text("[1, 2, 3]")
    elif how == "unknown figure":
        data = json.loads(text)
        data["rows"][0]["resources"]["registers"] = 3
        path.write_text(json.dumps(data))
    elif how == "no rows":
        data = json.loads(text)
        del data["rows"]
        path.write_text(json.dumps(data))


@pytest.mark.parametrize(("how", "says"), [
    ("truncated", "not JSON ("),
    ("not text", "'utf-8' codec can't decode byte 0xff in position 0"),
    ("other schema", "schema version 99 (this regsurvey reads 1, 2, 3, 4, 5, 6)"),
    ("not a survey", "no schema_version: not a regsurvey survey"),
    ("unknown figure", "malformed survey (ValueError: row buffers/w8 (gfx950): unknown figure 'registers')"),
    ("no rows", "malformed survey (KeyError: 'rows')"),
])
def test_a_damaged_stored_survey_is_a_one_line_error(tmp_path: Path, surveys: tuple[Survey, Survey], how: str,
                                                    says: str) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    store.save(two_targets(base))
    # A figure is damaged where the rows have figures (gfx950); anything else in the sm90 file.
    culprit = tmp_path / "store" / "surveys" / base.commit / ("gfx950.json" if how == "unknown figure" else "sm90.json")
    damage(culprit, how)
    with pytest.raises(StoreError) as raised:
        store.load(base.commit, ["gfx950", "sm90"])
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"stored survey {culprit} is unusable: ")
    assert says in message
    # The other target alone is still usable.
    other = "gfx950" if culprit.name == "sm90.json" else "sm90"
    alone = store.load(base.commit, [other])
    assert alone is not None and alone.targets == (other,)


def test_an_unreadable_stored_survey_is_a_store_error(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    (path,) = store.save(base)
    path.unlink()
    path.mkdir()
    with pytest.raises(StoreError, match="unusable"):
        store.load(base.commit, ["gfx950"])


def test_a_stored_survey_that_does_not_match_its_checksum_is_refused(tmp_path: Path,
                                                                       surveys: tuple[Survey, Survey]) -> None:
    # Issue #12, defect 6: valid JSON of the right shape, altered after it was stored (a figure edited),
    # is not served as the truth.
    base, _ = surveys
    store = Store(tmp_path / "store")
    (path,) = store.save(base)
    assert json.loads(seal_of(path).read_text()) == {"answers": f"survey {base.commit} gfx950",
                                                     "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    data = json.loads(path.read_text())
    data["rows"][0]["resources"]["vgpr"] += 1
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match=r"is unusable: checksum mismatch \(cut, altered, or left half-written\)"):
        store.load(base.commit, ["gfx950"])
    store.save(base)  # surveyed again and stored: whole again
    assert store.load(base.commit, ["gfx950"]) == base


# -- a writer who means harm (issue 31, item 2) ---------------------------------------------------------

KEY = "0123456789abcdef" * 4
OTHER_KEY = "fedcba9876543210" * 4


def unusable(store: Store, commit: str | None, target: str = "gfx950", selection: str | None = None) -> str:
    """Why loading ``commit``'s stored survey of ``target`` fails: the StoreError's message after the path."""
    with pytest.raises(StoreError) as raised:
        store.load(commit, [target], selection)
    message = str(raised.value)
    assert "\n" not in message and " is unusable: " in message
    return message.split(" is unusable: ", 1)[1]


def seal_as(path: Path, commit: str | None, target: str) -> None:
    """Write ``path``'s seal for the place it is in, as anyone who can write the store can (no key)."""
    seal_of(path).write_text(json.dumps({"answers": f"survey {commit} {target}",
                                         "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}))


def swap(one: Path, two: Path) -> None:
    parked = one.with_name(one.name + ".parked")
    one.rename(parked)
    two.rename(one)
    parked.rename(two)


def test_swapped_commit_folders_are_refused_and_surveyed_again(tmp_path: Path,
                                                               surveys: tuple[Survey, Survey]) -> None:
    # The issue's case: two commits' folders swapped (seals and all) served each commit the other's
    # figures, and check passed a regression reversed.
    base, head = surveys
    store = Store(tmp_path / "store")
    store.save(base)
    store.save(head)
    folders = tmp_path / "store" / "surveys"
    swap(folders / base.commit, folders / head.commit)
    assert unusable(store, base.commit) == (f"its checksum file is that of 'survey {head.commit} gfx950', not of "
                                            f"'survey {base.commit} gfx950' (moved or swapped from another folder)")
    # A writer who also rewrites each seal for its new place: the survey itself says whose it is.
    for commit in (base.commit, head.commit):
        seal_as(folders / commit / "gfx950.json", commit, "gfx950")
    for asked, holds in ((base.commit, head.commit), (head.commit, base.commit)):
        assert unusable(store, asked) == f"it holds the survey of {holds} on gfx950, not of {asked} on gfx950"
    store.save(base)  # surveyed again: whole again
    assert store.load(base.commit, ["gfx950"]) == base


def test_swapped_targets_are_refused(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    gfx950, sm90 = store.save(two_targets(base))
    swap(gfx950, sm90)
    swap(seal_of(gfx950), seal_of(sm90))
    assert unusable(store, base.commit).startswith(f"its checksum file is that of 'survey {base.commit} sm90'")
    seal_as(gfx950, base.commit, "gfx950")
    assert unusable(store, base.commit) == (f"it holds the survey of {base.commit} on sm90, not of {base.commit} "
                                            "on gfx950")
    # A survey naming its target but holding another's rows is refused too.
    data = json.loads(sm90.read_text())
    data["targets"] = ["sm90"]
    data["rows"][0]["target"] = "gfx950"
    sm90.write_text(json.dumps(data))
    seal_as(sm90, base.commit, "sm90")
    assert unusable(store, base.commit, "sm90") == ("malformed survey (ValueError: row buffers/w8 is on target "
                                                    "'gfx950', not one of the survey's (sm90))")


def test_swapped_partial_surveys_are_refused(tmp_path: Path, surveys: tuple[Survey, Survey]) -> None:
    base, _ = surveys
    store = Store(tmp_path / "store")
    gemm = replace(base, rows=tuple(r for r in base.rows if r.kind == "gemm"))
    buffers = replace(base, rows=tuple(r for r in base.rows if r.kind == "buffers"))
    (one,) = store.save(gemm, partial=True, selection="kinds=gemm keys=")
    (two,) = store.save(buffers, partial=True, selection="kinds=buffers keys=")
    swap(one.parent, two.parent)
    assert unusable(store, base.commit, selection="kinds=gemm keys=") == (
        f"its checksum file is that of 'survey {base.commit} gfx950 selection kinds=buffers keys=', not of "
        f"'survey {base.commit} gfx950 selection kinds=gemm keys=' (moved or swapped from another folder)")


@pytest.mark.parametrize(("seal", "says"), [
    (None, "no checksum file beside it (gfx950.json.sha256): not trusted"),
    ("old", "its checksum file is not one this regsurvey writes (an older regsurvey's?)"),
    ("[]", "its checksum file is not one this regsurvey writes (an older regsurvey's?)"),
], ids=["missing", "older-format", "not-a-seal"])
def test_a_survey_without_its_seal_is_not_trusted(tmp_path: Path, surveys: tuple[Survey, Survey], seal: str | None,
                                                  says: str) -> None:
    # A survey edited (a figure lowered) and its checksum file deleted was believed: surveys stored before
    # checksums had none.
    base, _ = surveys
    store = Store(tmp_path / "store")
    (path,) = store.save(base)
    data = json.loads(path.read_text())
    data["rows"][0]["resources"]["vgpr"] -= 1
    path.write_text(json.dumps(data))
    if seal is None:
        seal_of(path).unlink()
    else:  # a bare sha256, as regsurvey wrote it before seals said what they vouch for
        seal_of(path).write_text(hashlib.sha256(path.read_bytes()).hexdigest() if seal == "old" else seal)
    assert unusable(store, base.commit) == says
    store.save(base)
    assert store.load(base.commit, ["gfx950"]) == base


def test_with_a_key_surveys_are_signed_and_only_signed_ones_believed(tmp_path: Path, surveys: tuple[Survey, Survey],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    base, _ = surveys
    root = tmp_path / "store"
    (path,) = Store(root).save(base)  # without a key: unsigned
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    store = Store(root)
    assert unusable(store, base.commit) == f"unsigned ({CACHE_KEY_VAR} is set)"
    store.save(base)
    question = f"survey {base.commit} gfx950"
    assert json.loads(seal_of(path).read_text()) == {
        "answers": question, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "hmac": hmac.new(KEY.encode(), question.encode() + b"\0" + path.read_bytes(), hashlib.sha256).hexdigest()}
    assert store.load(base.commit, ["gfx950"]) == base
    # Another key's signature, or an edit with its checksum recomputed: refused.
    monkeypatch.setenv(CACHE_KEY_VAR, OTHER_KEY)
    assert unusable(Store(root), base.commit) == f"signed with another key or altered since ({CACHE_KEY_VAR} is set)"
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    data = json.loads(path.read_text())
    data["rows"][0]["resources"]["vgpr"] -= 1
    path.write_text(json.dumps(data))
    reseal(path)
    assert unusable(store, base.commit) == f"signed with another key or altered since ({CACHE_KEY_VAR} is set)"
    # Without a key, the edit is believed: the checksum is for accidents (docs/trust.md).
    monkeypatch.delenv(CACHE_KEY_VAR)
    edited = Store(root).load(base.commit, ["gfx950"])
    assert edited is not None and edited.rows[0].resources["vgpr"] == base.rows[0].resources["vgpr"] - 1


def test_an_index_that_does_not_hold_is_not_believed(tmp_path: Path, surveys: tuple[Survey, Survey],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # The index says which targets a survey without --target covers: one that named fewer would hide a
    # target's regressions from check.
    base, head = surveys
    store = Store(tmp_path / "store")
    store.save(two_targets(base), default_targets=True)
    store.save(head, default_targets=True)
    folders = tmp_path / "store" / "surveys"
    base_index, head_index = folders / base.commit / "index.json", folders / head.commit / "index.json"
    assert store.default_targets(base.commit) == ["gfx950", "sm90"]
    swap(base_index, head_index)
    swap(seal_of(base_index), seal_of(head_index))
    assert store.default_targets(base.commit) is None and store.default_targets(head.commit) is None
    seal_of(base_index).unlink()
    assert store.default_targets(base.commit) is None
    store.save(two_targets(base), default_targets=True)
    assert store.default_targets(base.commit) == ["gfx950", "sm90"]
    monkeypatch.setenv(CACHE_KEY_VAR, KEY)
    assert Store(tmp_path / "store").default_targets(base.commit) is None  # unsigned
