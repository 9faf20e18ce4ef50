"""`regsurvey check` end to end on a toy repository: a commit that caps the NVIDIA GEMM at 32 registers
(``maxnreg``) and spills, a commit that breaks a kernel, the baseline that accepts the spills, SARIF,
the GitHub step summary, and bad input in one line.

The spill figures the gate is expected to report are the stored builds' second readings (ptxas -v re-run
on the stored PTX, tests/readings.py), never typed in: the tests hold on whatever toolchain compiles the toy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.results import Survey

from ..conftest import TOY
from ..readings import independent_reading

GIT_ENV = {"GIT_AUTHOR_NAME": "tests", "GIT_AUTHOR_EMAIL": "tests@regsurvey", "GIT_COMMITTER_NAME": "tests",
           "GIT_COMMITTER_EMAIL": "tests@regsurvey"}
REPO_ROOT = Path(__file__).resolve().parents[2]
# sm90 only: the register cap is an NVIDIA launch option, and one target keeps the surveys quick.
SURVEY = ("--target", "sm90", "-j", "2", "-q")
SPILL_FIGURES = ("spill_store_bytes", "spill_load_bytes", "stack_bytes")
SPILL_LABELS = ("spill stores", "spill loads", "stack")


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                         env={**os.environ, **GIT_ENV})
    return out.stdout.strip()


def edit(repo: Path, old: str, new: str) -> None:
    ops = repo / "toykernels" / "ops.py"
    text = ops.read_text()
    assert old in text
    ops.write_text(text.replace(old, new))


def check(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run([sys.executable, "-m", "regsurvey", "check", *args], cwd=repo, capture_output=True,
                          text=True, timeout=600, env={**environ, **(env or {})})


def capped_gemm(toy: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """The GEMM's figures on sm90 before and after the register cap (main~1, main), read without regsurvey
    from the builds a check stored; w2 and w8 build one kernel."""
    store, sides = toy["root"] / "store", []
    for rev in ("main~1", "main"):
        sha = git(toy["repo"], "rev-parse", rev)
        survey = Survey.from_json((store / "surveys" / sha / "sm90.json").read_text())
        w2, w8 = (independent_reading(store, r.to_dict()) for key in ("gemm/w2", "gemm/w8")
                  for r in survey.rows if r.key == key)
        assert w2 == w8
        sides.append(w2)
    before, after = sides
    # What the cap did: fewer registers (at most 32), so no lower occupancy, and spills where there were
    # none: the gate's only problems are the two builds' new spills.
    assert after["regs"] <= 32 < before["regs"]
    assert after["occupancy_warps"] >= before["occupancy_warps"]
    assert [before[f] for f in SPILL_FIGURES] == [0, 0, 0] and all(after[f] for f in SPILL_FIGURES), after
    # ptxas spills inside the K loop too (the second reading: the SASS's backward branches).
    assert before["loop_spill_ops"] == 0 and after["loop_spill_ops"] > 0 and after["loop_spill_depth"] == 1
    return before, after


def spill_text(before: dict[str, int], after: dict[str, int]) -> str:
    """How the gate tells the new spills: ``spill stores 0 → 72 B, spill loads 0 → 72 B, stack 0 → 64 B``."""
    return ", ".join(f"{label} {before[f]} → {after[f]} B" for f, label in zip(SPILL_FIGURES, SPILL_LABELS))


def one_line_error(out: subprocess.CompletedProcess, text: str) -> None:
    assert out.returncode == 2, out.stderr
    assert out.stdout == "" and out.stderr == f"regsurvey: error: {text}\n"


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """main: the toy project, then "gemm: cap NVIDIA at 32 registers"; branch broken: then a scale kernel
    whose block is no power of two (it no longer compiles)."""
    root = tmp_path_factory.mktemp("check")
    repo = root / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "toy project")
    edit(repo, "                 num_warps=4, num_stages=2 if is_hip else 3)",
         "                 num_warps=4, num_stages=2 if is_hip else 3, **({} if is_hip else {\"maxnreg\": 32}))")
    git(repo, "commit", "-q", "-am", "gemm: cap NVIDIA at 32 registers")
    git(repo, "checkout", "-q", "-b", "broken")
    edit(repo, "block = triton.next_power_of_2(x.shape[1])", "block = 3 * triton.next_power_of_2(x.shape[1])")
    git(repo, "commit", "-q", "-am", "scale: three blocks per row")
    git(repo, "checkout", "-q", "main")
    return {"root": root, "repo": repo, "store": ("--store", str(root / "store"))}


def test_spills_fail_the_gate_with_sarif_and_step_summary(toy: dict[str, Any]) -> None:
    repo, root = toy["repo"], toy["root"]
    summary = root / "step-summary.md"
    summary.write_text("earlier step\n")
    out = check(repo, "--base", "HEAD~1", "--head", "HEAD", "--sarif", str(root / "check.sarif"), *SURVEY,
                *toy["store"], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 1, out.stderr
    head, base = git(repo, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD~1")
    before, after = capped_gemm(toy)
    lines = out.stdout.splitlines()
    assert lines[0] == f"### regsurvey check failed, 4 problems: `HEAD` ({head[:10]}) against `HEAD~1` ({base[:10]})"
    # The figures ptxas gives the GEMM capped at 32 registers.
    assert lines[2:5] == [
        "**spill increase** (`regsurvey/new-spill`)",
        f"- gemm/w2 on sm90 (matmul): {spill_text(before, after)}; no baseline entry allows it",
        f"- gemm/w8 on sm90 (matmul): {spill_text(before, after)}; no baseline entry allows it",
    ]
    # And, by a rule of their own, the spills inside its loop.
    looped = (f"spill instructions in loops 0 → {after['loop_spill_ops']}, deepest loop with a spill 0 → "
              f"{after['loop_spill_depth']}; no baseline entry allows it")
    at = lines.index("**spills in loops** (`regsurvey/loop-spill`)")
    assert lines[at + 1:at + 3] == [f"- gemm/w2 on sm90 (matmul): {looped}", f"- gemm/w8 on sm90 (matmul): {looped}"]
    stores, loads, stack = (f"{before[f]} → {after[f]} B" for f in SPILL_FIGURES)
    assert f"- adds spill stores to gemm on sm90 ({stores}; loads {loads}, stack {stack})" in lines
    assert summary.read_text() == "earlier step\n" + out.stdout + "\n"

    sarif = json.loads((root / "check.sarif").read_text())
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-schema-2.1.0.json")
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "regsurvey"
    rules = [r["id"] for r in driver["rules"]]
    assert rules == ["regsurvey/newly-failing", "regsurvey/kernarg-never-read", "regsurvey/new-spill",
                     "regsurvey/loop-spill", "regsurvey/occupancy-drop", "regsurvey/register-increase",
                     "regsurvey/compile-slowdown"]
    assert all(r["shortDescription"]["text"] and r["defaultConfiguration"]["level"] == "error"
               for r in driver["rules"])
    assert [r["ruleId"] for r in run["results"]] == ["regsurvey/new-spill"] * 2 + ["regsurvey/loop-spill"] * 2
    launch_line = next(i for i, line in enumerate((repo / "toykernels" / "ops.py").read_text().splitlines(), 1)
                       if line.lstrip().startswith("matmul[grid]("))
    for result, key in zip(run["results"][:2], ("gemm/w2", "gemm/w8")):
        assert result["ruleId"] == "regsurvey/new-spill" and rules[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] == "error"
        assert result["message"]["text"].startswith(
            f"{key} on sm90 (matmul): spill stores {before['spill_store_bytes']} → {after['spill_store_bytes']} B")
        # The launch site, relative to the repository root (the survey ran in a temporary worktree).
        assert result["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "toykernels/ops.py"},
                                                             "region": {"startLine": launch_line}}}]
        assert result["properties"]["figures"]["spill_store_bytes"] == {"before": before["spill_store_bytes"],
                                                                        "after": after["spill_store_bytes"]}
    fingerprints = {r["partialFingerprints"]["regsurveyBuild/v1"] for r in run["results"]}
    assert len(fingerprints) == 4


def test_update_baseline_round_trip(toy: dict[str, Any]) -> None:
    repo = toy["repo"]
    baseline = repo / "regsurvey.baseline.toml"
    one_line_error(check(repo, "--base", "HEAD~1", "--update-baseline", *SURVEY, *toy["store"]),
                   "--update-baseline needs --reason TEXT: why the new figures are acceptable")
    # HEAD defaults to the working tree (HEAD, clean): its stored survey is reused.
    reason = "NVIDIA gemm capped at 32 registers for occupancy; the spills cost less than a wave"
    out = check(repo, "--base", "HEAD~1", "--update-baseline", "--reason", reason, *SURVEY, *toy["store"])
    assert out.returncode == 0, out.stderr
    assert out.stderr == f"regsurvey: {baseline}: allowed the figures of 2 builds (created)\n"
    text = baseline.read_text()
    after = capped_gemm(toy)[1]
    stores = after["spill_store_bytes"]
    assert f'''
[[allow]]
key = "gemm/w2"
target = "sm90"
spill_store_bytes = {stores}
spill_load_bytes = {after["spill_load_bytes"]}
stack_bytes = {after["stack_bytes"]}
loop_spill_ops = {after["loop_spill_ops"]}
loop_spill_depth = {after["loop_spill_depth"]}
reason = "{reason}"
''' in text
    head = git(repo, "rev-parse", "HEAD")
    # Named as this command asked for it: the working tree, clean at HEAD, is that commit.
    assert out.stdout.startswith(f"### regsurvey check passed: `{head[:10]}` against `HEAD~1`")
    assert "**allowed by the baseline**" in out.stdout
    again = check(repo, "--base", "HEAD~1", *SURVEY, *toy["store"])
    assert again.returncode == 0, again.stderr
    # Nothing left to allow: the file stays as it was.
    same = check(repo, "--base", "HEAD~1", "--update-baseline", "--reason", "r", *SURVEY, *toy["store"])
    assert same.returncode == 0 and "no figure needs an allowance" in same.stderr and baseline.read_text() == text
    # A tighter allowance (8 bytes fewer spill stores) fails again, and says what the entry allows.
    baseline.write_text(text.replace(f"spill_store_bytes = {stores}", f"spill_store_bytes = {stores - 8}", 1))
    tight = check(repo, "--base", "HEAD~1", *SURVEY, *toy["store"])
    assert tight.returncode == 1
    assert (f"- gemm/w2 on sm90 (matmul): spill stores 0 → {stores} B; entry 1 (key \"gemm/w2\", target sm90) "
            f"allows spill stores up to {stores - 8} B") in tight.stdout
    # A placeholder reason is refused before anything is surveyed.
    baseline.write_text(text.replace(reason, "TODO: explain", 1))
    one_line_error(check(repo, "--base", "HEAD~1", *SURVEY, *toy["store"]),
                   f'{baseline}: [[allow]] entry 1 (key "gemm/w2"): the reason "TODO: explain" is a placeholder: '
                   "say why these figures are acceptable before merging")
    baseline.write_text(text)


def test_a_key_that_stops_building_fails(toy: dict[str, Any]) -> None:
    repo, root = toy["repo"], toy["root"]
    out = check(repo, "--base", "main", "--head", "broken", "--sarif", str(root / "broken.sarif"), *SURVEY,
                *toy["store"])
    assert out.returncode == 1, out.stderr
    assert "**newly failing** (`regsurvey/newly-failing`)" in out.stdout
    results = json.loads((root / "broken.sarif").read_text())["runs"][0]["results"]
    assert sorted(r["properties"]["key"] for r in results) == [
        "scale/w2/nostop", "scale/w2/stop", "scale/w8/nostop", "scale/w8/stop"]
    assert {r["ruleId"] for r in results} == {"regsurvey/newly-failing"}
    assert all("no longer builds" in r["message"]["text"] for r in results)
    assert all(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "toykernels/ops.py"
               for r in results)
    # The baseline allows figures, never a build that fails.
    assert check(repo, "--base", "main", "--head", "broken", *SURVEY, *toy["store"]).returncode == 1


def test_bad_input_is_one_line(toy: dict[str, Any]) -> None:
    repo, root = toy["repo"], toy["root"]
    bad = root / "bad.toml"
    bad.write_text('[[allow]]\nkey = "gemm/*"\nspill_store_bytes = 80\n')
    one_line_error(check(repo, "--base", "HEAD~1", "--baseline", str(bad), *SURVEY),
                   f'{bad}: [[allow]] entry 1 (key "gemm/*"): no reason: say why these figures are acceptable')
    one_line_error(check(repo, "--base", "HEAD~1", "--baseline", str(root / "missing.toml"), *SURVEY),
                   f"{root / 'missing.toml'}: no such baseline file")
    one_line_error(check(repo, "--base", "no-such-branch", *SURVEY, *toy["store"]),
                   f"unknown revision 'no-such-branch' in {repo}")
    one_line_error(check(repo, "--base", "HEAD~1", "--reason", "why", *SURVEY),
                   "--reason goes with --update-baseline")
    one_line_error(check(repo, "--base=--output=/tmp/regsurvey-planted", *SURVEY, *toy["store"]),
                   "revision '--output=/tmp/regsurvey-planted' starts with '-': git would read it as an option")


LEAKING_KEYS = '''"""A kind body that reports its environment and raises with a token found in a file."""

import os
from pathlib import Path

import regsurvey as rs

matrix = rs.Matrix(targets=["sm90"], width=[2])


@matrix.kind(axes=["width"])
def leak(width):
    names = sorted(name for name in os.environ if name.startswith(("SERVICE_", "PLAIN_", "GITHUB_", "VENDOR_")))
    raise RuntimeError(f"env {names} found {Path(os.environ['PLAIN_SOURCE_FILE']).read_text()}")
'''


def test_the_projects_code_sees_no_secret_and_the_reports_hold_none(toy: dict[str, Any]) -> None:
    """A kind body runs without the secret variables of the check's environment (those the rules name and
    those REGSURVEY_SECRET_VARS adds); a value it finds elsewhere (here a file) and raises with is
    replaced by the variable's name in the Markdown, the job summary and the SARIF."""
    repo, root = toy["repo"], toy["root"]
    git(repo, "checkout", "-q", "-b", "leaky", "main")
    try:
        (repo / "keys" / "leak.py").write_text(LEAKING_KEYS)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "a kind body that leaks")
    finally:
        git(repo, "checkout", "-q", "main")
    token_file = root / "token.txt"
    token_file.write_text("svc-0123456789abcdef")
    summary = root / "leak-summary.md"
    env = {"SERVICE_TOKEN": "svc-0123456789abcdef", "VENDOR_LICENSE": "svc-0123456789abcdef",
           "REGSURVEY_SECRET_VARS": "VENDOR_*", "GITHUB_TOKEN": "ghs_0123456789abcdef", "PLAIN_SETTING": "1",
           "PLAIN_SOURCE_FILE": str(token_file), "GITHUB_STEP_SUMMARY": str(summary)}
    out = check(repo, "--base", "main", "--head", "leaky", "--sarif", str(root / "leak.sarif"), *SURVEY,
                *toy["store"], env=env)
    assert out.returncode == 1, out.stderr
    said = ("leak/width2 on sm90 (no kernel) is new and fails to build: kind body raised at keys/leak.py:14: "
            "RuntimeError: env {} found [secret SERVICE_TOKEN]")
    names = "['GITHUB_STEP_SUMMARY', 'PLAIN_SETTING', 'PLAIN_SOURCE_FILE']"
    assert "- " + said.format(names.replace("[", "\\[").replace("]", "\\]")) + "\n" in out.stdout
    assert summary.read_text() == out.stdout + "\n"
    (result,) = json.loads((root / "leak.sarif").read_text())["runs"][0]["results"]
    assert result["message"]["text"] == said.format(names)
    for text in (out.stdout, out.stderr, (root / "leak.sarif").read_text()):
        assert "svc-0123456789abcdef" not in text and "ghs_0123456789abcdef" not in text


def test_pre_commit_hook_definition() -> None:
    text = (REPO_ROOT / ".pre-commit-hooks.yaml").read_text()
    try:
        import yaml
    except ImportError:  # PyYAML is pre-commit's, not ours: read the one flat mapping by hand
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        assert lines[0].startswith("- id:")
        pairs = [line.removeprefix("- ").split(":", 1) for line in lines]
        raw = {k.strip(): v.strip() for k, v in pairs}
        hook = {k: {"true": True, "false": False}.get(v, v) for k, v in raw.items()}
    else:
        (hook,) = yaml.safe_load(text)
    assert hook["id"] == "regsurvey-check" and hook["language"] == "python"
    assert hook["entry"].split()[:4] == ["regsurvey", "check", "--base", "origin/main"]
    assert hook["pass_filenames"] is False and hook["always_run"] is True
