"""`regsurvey check` through a poisoned store or results directory (issue 31, item 2): a commit that caps the
NVIDIA GEMM at 32 registers spills (exit 1); a writer of the store or of a shared ``--results`` directory
used to make check pass it (exit 0) by copying one cache entry over another, swapping two commits' survey
folders, editing a stored survey and deleting its checksum, or (without a signing key) editing an entry
and recomputing its checksum. Each is now caught, recompiled or surveyed again, and the gate fails."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.version import READER_REVISION
from regsurvey.store.resultcache import entry_name

from ..conftest import TOY

GIT_ENV = {"GIT_AUTHOR_NAME": "tests", "GIT_AUTHOR_EMAIL": "tests@regsurvey", "GIT_COMMITTER_NAME": "tests",
           "GIT_COMMITTER_EMAIL": "tests@regsurvey"}
KEY_VAR = "REGSURVEY_CACHE_KEY"
KEY = "0123456789abcdef" * 4
OTHER_KEY = "fedcba9876543210" * 4


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                         env={**os.environ, **GIT_ENV})
    return out.stdout.strip()


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """main: the toy project, then "gemm: cap NVIDIA at 32 registers" (its GEMM spills on sm90)."""
    repo = tmp_path_factory.mktemp("poisoned") / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "toy project")
    ops = repo / "toykernels" / "ops.py"
    old = "                 num_warps=4, num_stages=2 if is_hip else 3)"
    assert old in ops.read_text()
    ops.write_text(ops.read_text().replace(
        old, "                 num_warps=4, num_stages=2 if is_hip else 3, **({} if is_hip else {\"maxnreg\": 32}))"))
    git(repo, "commit", "-q", "-am", "gemm: cap NVIDIA at 32 registers")
    return {"repo": repo, "base": git(repo, "rev-parse", "HEAD~1"), "head": git(repo, "rev-parse", "HEAD")}


def check(toy: dict[str, Any], store: Path, results: Path, key: str | None = None) -> subprocess.CompletedProcess:
    """``regsurvey check --base HEAD~1`` on sm90 with ``store`` and the shared ``results`` directory."""
    environ = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", KEY_VAR)}
    if key is not None:
        environ[KEY_VAR] = key
    return subprocess.run([sys.executable, "-m", "regsurvey", "check", "--base", "HEAD~1", "--head", "HEAD",
                           "--target", "sm90", "-j", "2", "-q", "--store", str(store), "--results", str(results)],
                          cwd=toy["repo"], capture_output=True, text=True, timeout=600, env=environ)


def fails_on_spills(out: subprocess.CompletedProcess) -> None:
    assert out.returncode == 1, out.stdout + out.stderr
    assert "- gemm/w2 on sm90 (matmul): spill stores 0 → 72 B" in out.stdout


def gemm_rows(store: Path, commit: str) -> dict[str, dict]:
    """The stored sm90 survey's GEMM rows of ``commit``, by key."""
    survey = json.loads((store / "surveys" / commit / "sm90.json").read_text())
    return {r["key"]: r for r in survey["rows"] if r["kind"] == "gemm"}


def entry(results: Path, triton_hash: str) -> Path:
    h = entry_name(triton_hash)
    return results / "results" / h[:2] / f"{h}.json"


def test_an_entry_copied_over_another_does_not_pass_a_regression(toy: dict[str, Any], tmp_path: Path) -> None:
    results = tmp_path / "results"
    fails_on_spills(check(toy, tmp_path / "one", results))
    base, head = gemm_rows(tmp_path / "one", toy["base"]), gemm_rows(tmp_path / "one", toy["head"])
    copied = set()
    for key, row in head.items():  # the uncapped GEMM's entry in the capped one's place
        entry(results, row["triton_hash"]).write_bytes(entry(results, base[key]["triton_hash"]).read_bytes())
        copied.add(entry(results, row["triton_hash"]).name)
    # A second store sharing the results directory (another CI job) before had exit 0.
    out = check(toy, tmp_path / "two", results)
    fails_on_spills(out)
    warned = {line.split()[4] for line in out.stderr.splitlines() if "is the entry of another build" in line}
    assert warned == copied, out.stderr
    assert json.loads(entry(results, head["gemm/w2"]["triton_hash"]).read_text())["payload"]["triton_hash"] == (
        head["gemm/w2"]["triton_hash"])  # recompiled, and put right

    # A key set on this cache of unsigned entries: every one is compiled again, in one warning per survey
    # (base: its entries; head: those base's recompiles did not sign, the capped GEMM's).
    out = check(toy, tmp_path / "three", results, key=KEY)
    fails_on_spills(out)
    lines = [line for line in out.stderr.splitlines() if f"without a valid {KEY_VAR} signature" in line]
    entries = sorted((results / "results").rglob("*.json"))
    assert [line.split()[2] for line in lines] == [str(len(entries) - 1), "1"], out.stderr
    assert lines[1] == (f"regsurvey: warning: 1 cache entry without a valid {KEY_VAR} signature (1 unsigned: "
                        f"{entry(results, head['gemm/w2']['triton_hash']).name}) ignored; recompiling")
    assert all("hmac" in json.loads(p.read_text()) for p in entries)


def test_swapped_survey_folders_do_not_pass_a_regression(toy: dict[str, Any], tmp_path: Path) -> None:
    store, results = tmp_path / "store", tmp_path / "results"
    fails_on_spills(check(toy, store, results))
    base, head = store / "surveys" / toy["base"], store / "surveys" / toy["head"]
    base.rename(tmp_path / "parked")
    head.rename(base)
    (tmp_path / "parked").rename(head)
    out = check(toy, store, results)  # before: each commit served the other's figures, exit 0
    fails_on_spills(out)
    assert (f"regsurvey: surveying HEAD ({toy['head'][:10]}) again: stored survey {head / 'sm90.json'} is unusable: "
            f"its checksum file is that of 'survey {toy['base']} sm90'") in out.stderr


def test_a_survey_edited_without_its_checksum_does_not_pass_a_regression(toy: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    store, results = tmp_path / "store", tmp_path / "results"
    fails_on_spills(check(toy, store, results))
    path = store / "surveys" / toy["head"] / "sm90.json"
    base = gemm_rows(store, toy["base"])
    survey = json.loads(path.read_text())
    for row in survey["rows"]:
        if row["kind"] == "gemm":
            row["resources"] = base[row["key"]]["resources"]
    path.write_text(json.dumps(survey))
    path.with_name("sm90.json.sha256").unlink()
    out = check(toy, store, results)
    fails_on_spills(out)
    assert "is unusable: no checksum file beside it (sm90.json.sha256): not trusted" in out.stderr


def test_with_a_key_an_edited_entry_does_not_pass_a_regression(toy: dict[str, Any], tmp_path: Path) -> None:
    results = tmp_path / "results"
    fails_on_spills(check(toy, tmp_path / "one", results, key=KEY))
    base, head = gemm_rows(tmp_path / "one", toy["base"]), gemm_rows(tmp_path / "one", toy["head"])
    edited = set()
    for key, row in head.items():  # the capped GEMM's figures lowered to the uncapped one's, checksum recomputed
        path = entry(results, row["triton_hash"])
        data = json.loads(path.read_text())
        data["payload"]["report"]["resources"] = base[key]["resources"]
        data["sha256"] = hashlib.sha256(json.dumps(data["payload"], sort_keys=True).encode()).hexdigest()
        path.write_text(json.dumps(data))
        edited.add(path.name)
    # What docs/trust.md says of a cache read without the key: whoever can write it decides what it believes.
    assert check(toy, tmp_path / "keyless", results).returncode == 0
    out = check(toy, tmp_path / "two", results, key=KEY)
    fails_on_spills(out)
    (line,) = [line for line in out.stderr.splitlines() if "signature" in line]
    names = ", ".join(sorted(edited))
    assert line == (f"regsurvey: warning: {len(edited)} cache entr{'y' if len(edited) == 1 else 'ies'} without a "
                    f"valid {KEY_VAR} signature ({len(edited)} signed with another key or altered since: {names}) "
                    "ignored; recompiling")
    # Entries signed with another key are not believed either.
    out = check(toy, tmp_path / "three", results, key=OTHER_KEY)
    fails_on_spills(out)
    assert "signed with another key or altered since" in out.stderr


def test_entry_names_are_those_the_cache_uses() -> None:
    # (what entry() above relies on: results/<h[:2]>/<h>.json, h hashing the Triton hash with the readers)
    assert entry_name("abc") == hashlib.sha256(f"abc-{READER_REVISION}".encode()).hexdigest()
