"""action.yml, run step by step as GitHub's runner would (tests/ci/actions.py) against a real two-commit
project: the check's own command line with its inputs substituted, a real ``regsurvey check`` on sm90,
the SARIF and the job summary written, the pull request's one comment created on a fake GitHub on
loopback and updated by the next run, and the job's status that of the check, decided after the comment
and the SARIF steps ran. The steps that ``uses:`` other actions (setup-python, cache, upload-sarif) are
GitHub's: what they would be given is checked; the install step (pip, the network) is not run: this
environment has regsurvey installed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import triton
import yaml

from ..conftest import commit_all
from .actions import ActionRun, environment, run_action
from .conftest import LEAKING_KEYS, REGSURVEY, Project, scale_reading
from .forge import Forge, serving

TOKEN = "ghs_action-test-token-0987654321"
MARKER = "<!-- regsurvey -->"


def github_context(project: Project, tmp_path: Path, event: dict[str, Any],
                   event_name: str | None = None) -> tuple[dict[str, Any], Path]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    event_name = event_name or ("pull_request" if "pull_request" in event else "push")
    return {"event": event, "event_name": event_name, "token": TOKEN, "sha": project.head,
            "repository": "octo/kernels", "workspace": str(project.repo)}, path


def pull_request(project: Project) -> dict[str, Any]:
    return {"action": "synchronize", "number": 7,
            "pull_request": {"number": 7, "base": {"sha": project.base}, "head": {"sha": project.head}}}


def run(project: Project, tmp_path: Path, forge: Forge, event: dict[str, Any], event_name: str | None = None,
        runner: dict[str, str] | None = None, **inputs: str) -> ActionRun:
    """The action's steps as the runner runs them; ``runner``: further variables of the runner's
    environment (every step's)."""
    github, event_path = github_context(project, tmp_path, event, event_name)
    env = environment(Path(sys.executable), tmp_path / "bin", GITHUB_API_URL=forge.url,
                      GITHUB_REPOSITORY="octo/kernels", GITHUB_EVENT_PATH=str(event_path), GITHUB_ACTIONS="true",
                      GITHUB_SERVER_URL="https://github.example", GITHUB_RUN_ID="99",
                      GITHUB_EVENT_NAME=github["event_name"], **(runner or {}))
    return run_action(REGSURVEY, {"targets": "sm90", **inputs}, github, project.repo, env, skip=("install",))


def store_files(store: Path) -> dict[str, int]:
    """The store's surveys, objects and results: path -> modification time (ns)."""
    return {str(p.relative_to(store)): p.stat().st_mtime_ns for part in ("surveys", "objects", "results")
            for p in (store / part).rglob("*") if p.is_file()}


def assert_token_kept(run: ActionRun) -> None:
    for step in run.steps:
        assert TOKEN not in step.stdout and TOKEN not in step.stderr, step.name


def test_the_action_judges_the_pull_request_comments_and_fails_with_the_check(project: Project,
                                                                                tmp_path: Path) -> None:
    with serving(Forge("github")) as forge:
        first = run(project, tmp_path, forge, pull_request(project))
        check = first.step("check")
        sarif_path, markdown_path = tmp_path / "regsurvey.sarif", tmp_path / "regsurvey.md"  # in the runner's temp
        assert check.ran and check.outputs == {"status": "1", "sarif": str(sarif_path)}, check.stderr
        assert check.env["REGSURVEY_BASE"] == project.base and check.env["REGSURVEY_TARGETS"] == "sm90"
        assert (f"regsurvey -m regsurvey check --base {project.base} --sarif {sarif_path} --target sm90 "
                "--store .regsurvey -C .") in check.stderr.replace(sys.executable, "regsurvey")
        # Not --quiet: the log shows the surveys' progress, a line per event.
        progress = [line for line in check.stderr.splitlines() if "revision " in line and " of 2" in line]
        assert [line for line in progress if line.startswith("regsurvey: surveying")] == [
            f"regsurvey: surveying {project.base[:10]}, revision 1 of 2",
            "regsurvey: surveying working tree, revision 2 of 2"], check.stderr  # the checkout of the head
        assert sum("1/1 key" in line and "done in" in line for line in progress) == 2, check.stderr

        markdown = markdown_path.read_text()
        # A clean checkout is its commit: both sides by their shas.
        base, head = project.base[:10], project.head[:10]
        assert markdown.startswith(f"### regsurvey check failed, 1 problem: `{head}` against `{base}`\n")
        before, after = (scale_reading(project.repo / ".regsurvey", sha) for sha in (project.base, project.head))
        assert after["occupancy_warps"] < before["occupancy_warps"] and after["regs"] > before["regs"]
        assert (f"- scale/width2 on sm90 (scale_rows): occupancy {before['occupancy_warps']} → "
                f"{after['occupancy_warps']} warps/SM; no baseline entry allows it\n") in markdown
        assert f"### Registers: `{base}` → `{head}`\n" in markdown
        assert (f"- raises registers of scale width2 on sm90 ({before['regs']} → {after['regs']}); built with "
                "BLOCK 4096 → 8192\n") in markdown
        assert markdown in check.stdout  # and in the log
        assert first.summary == markdown + "\n"  # regsurvey check appended it to the step's summary

        sarif = json.loads(sarif_path.read_text())
        (result,) = sarif["runs"][0]["results"]
        assert (result["ruleId"], result["level"]) == ("regsurvey/occupancy-drop", "error")

        # What the other actions are given: Python, the store's cache keyed on toolchain, base and head.
        assert first.step("Set up Python").with_ == {"python-version": "3.12"}
        toolchain = first.step("toolchain").outputs["key"]
        assert re.fullmatch(r"py3\.\d+-triton3\.\d+\.\d+\S*", toolchain), toolchain
        restore, save = first.step("Restore the regsurvey store"), first.step("Save the regsurvey store")
        assert restore.uses == "actions/cache/restore@v4" and save.uses == "actions/cache/save@v4" and save.ran
        key = f"regsurvey-Linux-{toolchain}-{project.head}"  # saved under the commit judged; first restored:
        assert restore.with_ == {"path": ".regsurvey", "key": key,  # the store of the run that judged the base
                                 "restore-keys": f"regsurvey-Linux-{toolchain}-{project.base}\n"
                                                 f"regsurvey-Linux-{toolchain}-\n"}
        assert save.with_ == {"path": ".regsurvey", "key": key}
        assert (project.repo / ".regsurvey" / "surveys").is_dir()
        upload = first.step("Upload the SARIF")
        assert upload.ran and upload.uses == "github/codeql-action/upload-sarif@v3"
        assert upload.with_ == {"sarif_file": str(sarif_path), "category": "regsurvey"}

        # The comment: created, the marker and the report, with the token in the header only.
        comment = first.step("comment")
        assert (comment.returncode, comment.stdout) == (0, "pr_comment: created the regsurvey comment "
                                                           "(github comment 1001)\n"), comment.stderr
        assert forge.calls() == [("GET", "/repos/octo/kernels/issues/7/comments?per_page=100"),
                                 ("POST", "/repos/octo/kernels/issues/7/comments")]
        assert forge.requests[-1].headers["authorization"] == f"Bearer {TOKEN}"
        (body,) = forge.bodies()
        assert body.startswith(f"{MARKER}\n{markdown.rstrip()}\n")

        # The job fails with the check's status, in the last step, after the comment and the SARIF.
        verdict = first.step("The gate's verdict")
        assert verdict.returncode == 1 and first.failed
        assert [s.name for s in first.steps if s.ran][-3:] == ["Upload the SARIF", "Comment on the pull request",
                                                               "The gate's verdict"]
        assert_token_kept(first)

        # The next push: the store is there (restored), the comment is updated, not added; with
        # fail-on-regression false the job passes though the gate failed.
        forge.requests.clear()
        stored = store_files(project.repo / ".regsurvey")
        assert any(path.startswith("surveys/") for path in stored) and any(p.endswith(".cubin") for p in stored)
        second = run(project, tmp_path, forge, pull_request(project), **{"fail-on-regression": "false"})
        assert second.step("check").outputs == {"status": "1", "sarif": str(sarif_path)}
        assert forge.calls()[-1] == ("PATCH", "/repos/octo/kernels/issues/comments/1001")
        assert len(forge.comments) == 1 and forge.bodies()[0].startswith(f"{MARKER}\n{markdown.rstrip()}\n")
        assert second.step("The gate's verdict").returncode == 0 and not second.failed
        # Both surveys came from the store: nothing was compiled, surveyed or stored again.
        assert store_files(project.repo / ".regsurvey") == stored
        assert_token_kept(second)


def test_a_check_that_cannot_judge_says_why_in_the_comment_and_fails_the_job(project: Project,
                                                                              tmp_path: Path) -> None:
    with serving(Forge("github")) as forge:
        done = run(project, tmp_path, forge, pull_request(project), base="no-such-rev")
        assert done.step("check").outputs == {"status": "2"}
        markdown = (tmp_path / "regsurvey.md").read_text()
        assert markdown == ("### regsurvey check could not judge this change (exit status 2)\n\n```\n"
                            f"regsurvey: error: unknown revision 'no-such-rev' in {project.repo}\n```\n")
        assert done.summary == markdown + "\n"
        assert not done.step("Upload the SARIF").ran  # no SARIF was written
        (body,) = forge.bodies()
        assert body.startswith(f"{MARKER}\n{markdown.rstrip()}\n")
        assert done.step("The gate's verdict").returncode == 2 and done.failed


def test_on_a_push_the_base_is_the_commit_before_and_nothing_is_commented(project: Project, tmp_path: Path) -> None:
    with serving(Forge("github")) as forge:
        # A push that created its branch: no commit before it, nothing to judge against.
        done = run(project, tmp_path, forge, {"ref": "refs/heads/topic", "before": "0" * 40, "after": project.head})
        check = done.step("check")
        assert check.env["REGSURVEY_BASE"] == "0" * 40 and check.outputs == {"status": "2"}
        assert "regsurvey_check: error: REGSURVEY_BASE is not set" in check.stderr
        assert not done.step("comment").ran and forge.requests == []
        assert done.step("The gate's verdict").returncode == 2 and done.failed


OIDC_TOKEN = "oidc-request-token-1357924680"


def test_a_keys_file_hunting_tokens_finds_none_and_the_reports_hold_none(project: Project, tmp_path: Path) -> None:
    """The job's token is given to the comment step alone; a token every step has (the OIDC request
    token of ``id-token: write``) is not in the check's environment, and where the project's code finds
    it (a process above it) and raises with it, the report, SARIF, summary and comment have its name."""
    (project.repo / "keys" / "leak.py").write_text(LEAKING_KEYS)
    head = commit_all(project.repo, "a keys file that hunts tokens")
    leaking = Project(project.repo, project.base, head)
    event = pull_request(leaking)
    with serving(Forge("github")) as forge:
        done = run(leaking, tmp_path, forge, event, runner={"ACTIONS_ID_TOKEN_REQUEST_TOKEN": OIDC_TOKEN,
                                                            "LEAK_DUMP": str(tmp_path / "leak.json")})
        assert done.step("check").outputs["status"] == "1", done.step("check").stderr
        leak = json.loads((tmp_path / "leak.json").read_text())
        assert not [name for name in leak["environ"] if "TOKEN" in name]
        assert leak["environ"]["GITHUB_REPOSITORY"] == "octo/kernels"
        assert leak["found"]["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] == OIDC_TOKEN
        assert TOKEN not in leak["found"].values()  # the job's token: in the comment step alone
        found = "'ACTIONS_ID_TOKEN_REQUEST_TOKEN': '[secret ACTIONS_ID_TOKEN_REQUEST_TOKEN]'"
        markdown = (tmp_path / "regsurvey.md").read_text()
        sarif = (tmp_path / "regsurvey.sarif").read_text()
        (body,) = forge.bodies()
        assert forge.requests[-1].headers["authorization"] == f"Bearer {TOKEN}"
        for text in (markdown, done.summary, body):
            assert found in text
        assert found in json.loads(sarif)["runs"][0]["results"][0]["message"]["text"]
        logs = "".join(step.stdout + step.stderr for step in done.steps)
        for text in (markdown, sarif, done.summary, body, logs):
            assert OIDC_TOKEN not in text and TOKEN not in text


@pytest.mark.parametrize("event_name", ["pull_request_target", "workflow_run"])
def test_a_privileged_event_runs_no_code_of_the_pull_request(project: Project, tmp_path: Path,
                                                             event_name: str) -> None:
    """On pull_request_target and workflow_run the job holds the base repository's write token and
    secrets: the check refuses to run (nothing is surveyed), and says why."""
    with serving(Forge("github")) as forge:
        done = run(project, tmp_path, forge, pull_request(project), event_name=event_name)
        check = done.step("check")
        assert check.outputs == {"status": "2"}
        why = (f"refusing to run on {event_name}: its job holds the base repository's write token and secrets, "
               "and the check runs the pull request's code; run it on pull_request (docs/ci.md, \"CI: GitHub "
               "Actions and GitLab\")")
        assert check.stderr == f"regsurvey_check: error: {why}\n"
        assert (tmp_path / "regsurvey.md").read_text() == f"### regsurvey check could not run\n\n{why}\n"
        assert not (project.repo / ".regsurvey").exists()
        assert done.step("The gate's verdict").returncode == 2 and done.failed


def test_the_base_toolchain_input_is_the_checks_base_toolchain(project: Project, tmp_path: Path) -> None:
    """A Triton upgrade gated (docs/ci.md, "Gating a Triton upgrade in CI"): the input becomes
    REGSURVEY_BASE_TOOLCHAIN and ``--base-toolchain``, empty by default (the plain check); an environment that
    is not there is the report's one line, and nothing is surveyed."""
    assert yaml.safe_load((REGSURVEY / "action.yml").read_text())["inputs"]["base-toolchain"]["default"] == ""
    missing = tmp_path / "venv-base"
    with serving(Forge("github")) as forge:
        done = run(project, tmp_path, forge, pull_request(project), comment="false",
                   **{"base-toolchain": str(missing)})
    check = done.step("check")
    assert check.env["REGSURVEY_BASE_TOOLCHAIN"] == str(missing) and check.outputs == {"status": "2"}
    assert f"--store .regsurvey -C . --base-toolchain {missing}\n" in check.stderr
    assert (tmp_path / "regsurvey.md").read_text() == (
        "### regsurvey check could not judge this change (exit status 2)\n\n```\n"
        f"regsurvey: error: --base-toolchain {missing}: no such file or directory\n```\n")
    assert not (project.repo / ".regsurvey" / "surveys").exists() and done.failed


def test_the_action_gates_a_triton_upgrade(project: Project, tmp_path: Path, other_python: str) -> None:
    """The base surveyed with another environment's Triton (REGSURVEY_OTHER_TOOLCHAIN), the head with this
    one's: judged across the two by the gate's rules, each side named for its Triton."""
    old = subprocess.run([other_python, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                         text=True, check=True).stdout.strip()
    with serving(Forge("github")) as forge:
        done = run(project, tmp_path, forge, pull_request(project), comment="false",
                   **{"base-toolchain": other_python})
    check = done.step("check")
    assert check.outputs["status"] in ("0", "1"), check.stderr
    markdown = (tmp_path / "regsurvey.md").read_text()
    head, base = project.head[:10], project.base[:10]
    assert markdown.startswith(f"### regsurvey check {'passed' if check.outputs['status'] == '0' else 'failed'}")
    assert markdown.splitlines()[0].endswith(
        f"`working tree with triton {triton.__version__}` ({head}) against `{base} with triton {old}`")
    assert f"> toolchain differs: cuda triton: {old} → {triton.__version__}\n" in markdown
    assert "not comparable" not in markdown
