"""Surveys at the toolchain's own pace: stored surveys and content-addressed results are reused, and
never when damaged; a change recompiles exactly the keys it touches."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from ..conftest import commit_all, reseal


def survey(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[dict, str]:
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "-j", "2", *args],
                         cwd=repo, capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def reused(data: dict) -> dict[tuple[str, str], bool]:
    return {(r["key"], r["target"]): r["reused"] for r in data["rows"]}


def compiled_hashes(data: dict) -> set[str]:
    return {r["triton_hash"] for r in data["rows"] if not r["reused"]}


def test_rerun_of_a_commit_reuses_its_stored_survey(toy_repo: Path) -> None:
    first, _ = survey(toy_repo)
    # Keys whose kernels are identical (scale's width only sizes the grid) compile once.
    assert {r["triton_hash"] for r in first["rows"]} == compiled_hashes(first)
    assert any(r["reused"] for r in first["rows"])
    again, _ = survey(toy_repo)
    assert again == first  # the stored survey itself, not a new one
    forced, _ = survey(toy_repo, "--force")
    assert forced["created"] >= first["created"] and not any(reused(forced).values())
    assert [r["triton_hash"] for r in forced["rows"]] == [r["triton_hash"] for r in first["rows"]]
    assert [r["resources"] for r in forced["rows"]] == [r["resources"] for r in first["rows"]]


def test_a_change_recompiles_exactly_the_kind_it_touches(toy_repo: Path) -> None:
    before, _ = survey(toy_repo)
    ops = toy_repo / "toykernels" / "ops.py"
    # Edit the gemm launcher only (its tile): scale's kernel and launch are untouched.
    ops.write_text(ops.read_text().replace("block_n: int = 64", "block_n: int = 128"))
    data, _ = survey(toy_repo)
    scale = [r for r in data["rows"] if r["kind"] == "scale"]
    gemm = [r for r in data["rows"] if r["kind"] == "gemm"]
    assert len(scale) == 8 and all(r["reused"] for r in scale)
    old = {r["triton_hash"] for r in before["rows"]}
    assert gemm and all(r["triton_hash"] not in old for r in gemm)
    assert compiled_hashes(data) == {r["triton_hash"] for r in gemm}  # exactly gemm's kernels compiled
    # Commit it: a survey of the new commit reuses everything from the working-tree survey.
    commit_all(toy_repo, "bigger gemm tile")
    data, _ = survey(toy_repo, "--commit", "HEAD")
    assert all(reused(data).values())


def test_damaged_cache_entries_and_objects_are_recompiled(toy_repo: Path) -> None:
    # The result cache's own repair: every key's launches looked up there (no key taken from its record,
    # which would not read the damaged entry at all: tests/engine/test_key_records.py damages an object).
    env = {**os.environ, "REGSURVEY_KEY_REUSE": "off"}
    first, _ = survey(toy_repo, "--kind", "scale", "--kind", "gemm", env=env)
    store = toy_repo / ".regsurvey"
    entries = sorted((store / "results").rglob("*.json"))
    hashes = {r["triton_hash"] for r in first["rows"]}
    assert len(entries) == len(hashes) >= 4
    entries[0].write_text(entries[0].read_text()[:40])  # a truncated entry
    damaged = json.loads(entries[1].read_text())["payload"]
    obj = store / damaged["object"]["path"]
    obj.write_bytes(obj.read_bytes()[:100])  # a truncated object behind another entry
    data, err = survey(toy_repo, "--kind", "scale", "--kind", "gemm", env=env)  # --kind: no whole-survey reuse
    # Two workers may both meet a damaged entry before it is rewritten: count entries, not lines.
    assert len(set(re.findall(r"warning: cache entry (\S+) is .*; recompiling", err))) == 2, err
    assert len(compiled_hashes(data)) == 2
    assert [r["resources"] for r in data["rows"]] == [r["resources"] for r in first["rows"]]
    assert json.loads(entries[0].read_text())["sha256"] and len(obj.read_bytes()) > 100  # repaired
    data, err = survey(toy_repo, "--kind", "scale", "--kind", "gemm", env=env)
    assert all(reused(data).values()) and "warning" not in err


def test_damaged_or_foreign_stored_survey_is_redone(toy_repo: Path) -> None:
    first, _ = survey(toy_repo, "--target", "sm90")
    stored = toy_repo / ".regsurvey" / "surveys" / first["commit"] / "sm90.json"
    stored.write_text(stored.read_text()[:-200])
    reseal(stored)  # cut, with its checksum recomputed: what the survey's own reading finds
    data, err = survey(toy_repo, "--target", "sm90")
    assert f"regsurvey: surveying the working tree again: stored survey {stored} is unusable: not JSON" in err
    assert data["created"] >= first["created"] and all(reused(data).values())
    # A survey made by another toolchain is not reused either.
    doc = json.loads(stored.read_text())
    doc["toolchain"]["cuda"]["triton"] = "0.0.0"
    doc["rows"] = []
    stored.write_text(json.dumps(doc))
    reseal(stored)
    data, err = survey(toy_repo, "--target", "sm90")
    assert "again: the toolchain changed since the stored survey of sm90 (cuda triton: " in err
    assert len(data["rows"]) == 6 and data["toolchain"]["cuda"]["triton"] != "0.0.0"


def test_two_surveys_at_once_share_one_store(toy_repo: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "-j", "1", "--force",
           "--store", str(store)]
    procs = [subprocess.Popen(cmd, cwd=toy_repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    one, two = (json.loads(o) for o, _ in outs)
    assert [r["resources"] for r in one["rows"]] == [r["resources"] for r in two["rows"]]
    assert not list(store.rglob("*.tmp"))
    data, err = survey(toy_repo, "--store", str(store), "--kind", "*")
    assert all(reused(data).values()) and "warning" not in err


def test_a_stored_survey_of_other_readers_is_surveyed_again(toy_repo: Path) -> None:
    from regsurvey.model.version import READER_REVISION

    first, _ = survey(toy_repo, "--commit", "HEAD")
    assert first["reader"] == READER_REVISION
    # As if an earlier regsurvey, whose readers reported other figures, had stored this commit's survey.
    stored = sorted((toy_repo / ".regsurvey" / "surveys").glob("*/*.json"))
    stored = [path for path in stored if path.name != "index.json"]
    assert stored
    for path in stored:
        data = json.loads(path.read_text())
        data["reader"] = "0.0.1+readers1"
        for row in data["rows"]:
            if row["resources"]:
                row["resources"] = {**row["resources"], next(iter(row["resources"])): 999}
        path.write_text(json.dumps(data))
        reseal(path)
    again, err = survey(toy_repo, "--commit", "HEAD")
    assert f"regsurvey: surveying HEAD ({first['commit'][:10]}) again: the stored survey of gfx950 was made by " \
        "regsurvey readers 0.0.1+readers1" in err
    assert again["reader"] == READER_REVISION
    assert [r["resources"] for r in again["rows"]] == [r["resources"] for r in first["rows"]]
    # The store now holds the survey of these readers, which the next run reuses.
    assert all(json.loads(path.read_text())["reader"] == READER_REVISION for path in stored)
    third, err = survey(toy_repo, "--commit", "HEAD")
    assert third == again and "surveying" not in err


def test_a_survey_stored_before_constexprs_were_recorded_is_made_again(toy_repo: Path) -> None:
    """A schema-2 survey has no ``build`` on its rows: a diff against it could not say which constexprs
    changed, so it is surveyed again, and the new one is reused."""
    first, _ = survey(toy_repo, "--commit", "HEAD")
    assert all(r["build"] is not None for r in first["rows"] if r["kernel"])
    stored = [p for p in sorted((toy_repo / ".regsurvey" / "surveys").glob("*/*.json")) if p.name != "index.json"]
    for path in stored:
        data = json.loads(path.read_text())
        data["schema_version"] = 2
        for row in data["rows"]:
            del row["build"], row["name"]
        path.write_text(json.dumps(data))
        reseal(path)
    again, err = survey(toy_repo, "--commit", "HEAD")
    assert f"regsurvey: surveying HEAD ({first['commit'][:10]}) again: the stored survey of gfx950 was made before " \
        "builds' constexprs were recorded" in err
    assert [r["build"] for r in again["rows"]] == [r["build"] for r in first["rows"]]
    third, err = survey(toy_repo, "--commit", "HEAD")
    assert third == again and "surveying" not in err


def test_the_lint_of_every_build_is_kept_for_the_next_survey(toy_repo: Path) -> None:
    # NVIDIA builds without a stack frame are linted at the survey's end; the result cache keeps their
    # findings too, so a survey reusing them (another commit, a working tree) has them without linting.
    first, _ = survey(toy_repo, "--target", "sm90")
    assert [r["lint"] for r in first["rows"] if r["status"] == "ok"] == [[]] * len(first["rows"])
    entries = [json.loads(p.read_text())["payload"] for p in (toy_repo / ".regsurvey" / "results").rglob("*.json")]
    assert entries and all(e["report"]["findings"] == [] for e in entries)
    ops = toy_repo / "toykernels" / "ops.py"
    ops.write_text(ops.read_text() + "\n# an edit that changes no kernel\n")
    again, _ = survey(toy_repo, "--target", "sm90")
    assert all(r["reused"] and r["lint"] == [] for r in again["rows"])
    assert "lint_s" not in again["timing"] or again["timing"]["lint_s"] < 0.05


def test_a_results_directory_shared_by_two_jobs_at_once(toy_repo: Path, tmp_path: Path) -> None:
    """As two CI jobs restoring one cached directory: surveys of two branches, each with a store of its own
    and one --results directory, run at once; then a third store's survey of either commit compiles
    nothing, and what it reports equals each job's own."""
    from ..conftest import git

    main = git(toy_repo, "rev-parse", "HEAD")
    ops = toy_repo / "toykernels" / "ops.py"
    ops.write_text(ops.read_text().replace("block_n: int = 64", "block_n: int = 128"))
    branch = commit_all(toy_repo, "bigger gemm tile")
    results = tmp_path / "shared"
    jobs = [subprocess.Popen([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "-j", "1",
                              "--commit", sha, "--store", str(tmp_path / f"store-{i}"), "--results", str(results)],
                             cwd=toy_repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i, sha in enumerate((main, branch))]
    outs = [job.communicate(timeout=900) for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0], [err for _, err in outs]
    firsts = [json.loads(out) for out, _ in outs]
    # The stores hold surveys only; objects and results are in the shared directory.
    assert not (tmp_path / "store-0" / "objects").exists() and (results / "objects").is_dir()
    assert not list(results.rglob("*.tmp*"))  # no temporary file left by either writer
    # Files get the mode open() gives (not mkstemp's 0600): jobs of other users can read the directory.
    from regsurvey.store.files import new_file_mode

    modes = {p.stat().st_mode & 0o777 for p in results.rglob("*") if p.is_file()}
    assert modes == {new_file_mode()}, [oct(m) for m in modes]
    for i, sha in enumerate((main, branch)):
        third, _ = survey(toy_repo, "--commit", sha, "--store", str(tmp_path / f"third-{i}"),
                          "--results", str(results))
        assert all(reused(third).values())
        strip = ("reused", "compile_s")
        assert [{k: v for k, v in r.items() if k not in strip} for r in third["rows"]] == \
            [{k: v for k, v in r.items() if k not in strip} for r in firsts[i]["rows"]]
    # REGSURVEY_RESULTS is the same as --results.
    env = {**__import__("os").environ, "REGSURVEY_RESULTS": str(results)}
    out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--commit", main,
                          "--store", str(tmp_path / "by-env")], cwd=toy_repo, capture_output=True, text=True,
                         timeout=900, env=env)
    assert out.returncode == 0 and all(reused(json.loads(out.stdout)).values())
