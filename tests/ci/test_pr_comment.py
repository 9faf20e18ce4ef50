"""ci/pr_comment.py, run as CI runs it (a subprocess of its own), against a fake forge on loopback: the first
run creates the comment, later runs find it again (on whatever page) and edit it, refusals and missing
settings are one line and exit status 2, and the token goes only into the request's header."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .forge import Forge, serving

SCRIPT = Path(__file__).resolve().parents[2] / "ci" / "pr_comment.py"
TOKEN = "ghs_test-token-1234567890"
MARKER = "<!-- regsurvey -->"
REPORT = ("### regsurvey check failed, 1 problem: the working tree against `main` (0123456789)\n\n"
          "### Registers: `main` (0123456789) → `worktree`\n\n- raises registers of scale width2 on sm90 (30 → 50)\n")


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], env={"PATH": "/usr/bin:/bin", **env},
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path = tmp_path / "regsurvey.md"
    path.write_text(REPORT)
    return path


def github_env(forge: Forge, tmp_path: Path, number: int = 7) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": number,
                                 "pull_request": {"number": number, "base": {"sha": "0" * 39 + "1"}}}))
    return {"GITHUB_API_URL": forge.url, "GITHUB_REPOSITORY": "octo/kernels", "GITHUB_TOKEN": TOKEN,
            "GITHUB_EVENT_PATH": str(event), "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_RUN_ID": "99"}


def assert_secret_kept(result: subprocess.CompletedProcess[str]) -> None:
    assert TOKEN not in result.stdout and TOKEN not in result.stderr


def test_github_first_run_creates_the_comment_then_edits_it_on_a_later_page(report: Path, tmp_path: Path) -> None:
    with serving(Forge("github", page_size=1)) as forge:
        env = github_env(forge, tmp_path)
        forge.add("LGTM")  # someone else's comment
        first = run(["--body", str(report)], env)
        assert (first.returncode, first.stderr) == (0, ""), first.stderr
        assert first.stdout == "pr_comment: created the regsurvey comment (github comment 1002)\n"
        assert forge.calls() == [("GET", "/repos/octo/kernels/issues/7/comments?per_page=100"),
                                 ("POST", "/repos/octo/kernels/issues/7/comments")]
        posted = forge.requests[-1]
        assert posted.headers["authorization"] == f"Bearer {TOKEN}"
        assert posted.headers["accept"] == "application/vnd.github+json"
        body = posted.body["body"]
        assert body == (f"{MARKER}\n{REPORT.rstrip()}\n\n<sub>[regsurvey check run]"
                        "(https://github.example/octo/kernels/actions/runs/99); this comment is updated at each "
                        "push.</sub>\n")
        assert_secret_kept(first)

        # More comments come after ours: ours is on page 2 of 5 (one a page); a mention of the marker
        # inside someone's comment is not ours.
        forge.add(f"quoting: {MARKER}")
        forge.add("another")
        forge.add("and another")
        forge.requests.clear()
        report.write_text(REPORT.replace("failed, 1 problem", "passed"))
        second = run(["--body", str(report)], env)
        assert (second.returncode, second.stderr) == (0, ""), second.stderr
        assert second.stdout == "pr_comment: updated the regsurvey comment (github comment 1002)\n"
        assert forge.calls() == [("GET", "/repos/octo/kernels/issues/7/comments?per_page=100"),
                                 ("GET", "/repos/octo/kernels/issues/7/comments?per_page=100&page=2"),
                                 ("PATCH", "/repos/octo/kernels/issues/comments/1002")]
        assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in forge.requests)
        assert len(forge.comments) == 5 and forge.bodies()[0] == "LGTM"
        assert forge.bodies()[1].startswith(f"{MARKER}\n### regsurvey check passed: the working tree")
        assert_secret_kept(second)


def test_github_comment_found_on_the_last_page(report: Path, tmp_path: Path) -> None:
    with serving(Forge("github", page_size=1)) as forge:
        for n in range(3):
            forge.add(f"comment {n}")
        ours = forge.add(f"{MARKER}\nold report")
        result = run(["--body", str(report), "--number", "12"], github_env(forge, tmp_path, number=7))
        assert result.returncode == 0, result.stderr
        assert [path for _, path in forge.calls()][-2:] == [
            "/repos/octo/kernels/issues/12/comments?per_page=100&page=4", f"/repos/octo/kernels/issues/comments/{ours}"]
        assert len(forge.comments) == 4 and forge.bodies()[3].startswith(f"{MARKER}\n### regsurvey check failed")


def test_github_refusal_is_one_line_and_exit_2(report: Path, tmp_path: Path) -> None:
    message = {"message": "Resource not accessible by integration",
               "documentation_url": "https://docs.github.com/rest/issues/comments"}
    with serving(Forge("github", refuse=(403, message))) as forge:
        result = run(["--body", str(report)], github_env(forge, tmp_path))
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == (f"pr_comment: error: GET {forge.url}/repos/octo/kernels/issues/7/comments"
                                 "?per_page=100: HTTP 403 (Resource not accessible by integration)\n")
        assert forge.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
        assert_secret_kept(result)


def test_a_message_echoing_the_token_is_scrubbed(report: Path, tmp_path: Path) -> None:
    with serving(Forge("github", refuse=(401, {"message": f"Bad credentials: {TOKEN}"}))) as forge:
        result = run(["--body", str(report)], github_env(forge, tmp_path))
        assert result.returncode == 2 and result.stderr.endswith("HTTP 401 (Bad credentials: [secret GITHUB_TOKEN])\n")
        assert_secret_kept(result)


@pytest.mark.parametrize(("drop", "error"), [
    ("GITHUB_TOKEN", "GITHUB_TOKEN is not set (a token that may write pull-request comments, e.g. "
                     "${{ github.token }})"),
    ("GITHUB_REPOSITORY", "GITHUB_REPOSITORY is not set (owner/name of the repository)"),
    ("GITHUB_EVENT_PATH", "no pull request number: pass --number N, or run on a pull_request event "
                          "(GITHUB_EVENT_PATH is not set)"),
])
def test_github_missing_settings_are_one_line(report: Path, tmp_path: Path, drop: str, error: str) -> None:
    with serving(Forge("github")) as forge:
        env = github_env(forge, tmp_path)
        del env[drop]
        result = run(["--body", str(report)], env)
        assert (result.returncode, result.stdout, result.stderr) == (2, "", f"pr_comment: error: {error}\n")
        assert forge.requests == []


def test_not_a_pull_request_event_and_bad_bodies(report: Path, tmp_path: Path) -> None:
    with serving(Forge("github")) as forge:
        env = github_env(forge, tmp_path)
        Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps({"ref": "refs/heads/main", "before": "abc"}))
        result = run(["--body", str(report)], env)
        assert result.returncode == 2
        assert result.stderr == (f"pr_comment: error: the event in {env['GITHUB_EVENT_PATH']} is not a pull "
                                 "request's (no pull_request.number): pass --number N\n")
        empty = tmp_path / "empty.md"
        empty.write_text("\n")
        result = run(["--body", str(empty), "--number", "3"], env)
        assert (result.returncode, result.stderr) == (2, f"pr_comment: error: {empty} is empty: nothing to post\n")
        missing = tmp_path / "missing.md"
        result = run(["--body", str(missing), "--number", "3"], env)
        assert (result.returncode, result.stderr) == (2, f"pr_comment: error: cannot read {missing}: "
                                                         "No such file or directory\n")
        assert forge.requests == []


def test_nothing_listening_is_one_line(report: Path, tmp_path: Path) -> None:
    with serving(Forge("github")) as forge:
        env = github_env(forge, tmp_path)
    # The server is gone: its port refuses.
    result = run(["--body", str(report)], env)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"pr_comment: error: GET {env['GITHUB_API_URL']}/repos/octo/kernels/issues/7/")
    assert "Connection refused" in result.stderr


def gitlab_env(forge: Forge, **tokens: str) -> dict[str, str]:
    return {"GITLAB_CI": "true", "CI_API_V4_URL": f"{forge.url}/api/v4", "CI_PROJECT_ID": "42",
            "CI_MERGE_REQUEST_IID": "5", "CI_JOB_URL": "https://gitlab.example/g/p/-/jobs/77", **tokens}


def test_gitlab_creates_the_note_then_updates_it_on_a_later_page(report: Path) -> None:
    with serving(Forge("gitlab")) as forge:
        env = gitlab_env(forge, REGSURVEY_GITLAB_TOKEN=TOKEN, CI_JOB_TOKEN="job-token-xyz")
        forge.add("changes look fine")
        first = run(["--body", str(report)], env)  # the forge from GITLAB_CI
        assert (first.returncode, first.stderr) == (0, ""), first.stderr
        assert first.stdout == "pr_comment: created the regsurvey comment (gitlab comment 1002)\n"
        notes = "/api/v4/projects/42/merge_requests/5/notes"
        assert forge.calls() == [("GET", f"{notes}?per_page=100"), ("POST", notes)]
        assert forge.requests[-1].headers["private-token"] == TOKEN
        assert "job-token" not in forge.requests[-1].headers and "authorization" not in forge.requests[-1].headers
        assert forge.bodies()[1] == (f"{MARKER}\n{REPORT.rstrip()}\n\n<sub>[regsurvey check run]"
                                     "(https://gitlab.example/g/p/-/jobs/77); this comment is updated at each "
                                     "push.</sub>\n")
        forge.add("one")
        forge.add("two")
        forge.requests.clear()
        # The job token when no access token is set; pages by X-Next-Page.
        second = run(["--body", str(report)], gitlab_env(forge, CI_JOB_TOKEN="job-token-xyz"))
        assert (second.returncode, second.stderr) == (0, ""), second.stderr
        assert second.stdout == "pr_comment: updated the regsurvey comment (gitlab comment 1002)\n"
        assert forge.calls() == [("GET", f"{notes}?per_page=100"), ("PUT", f"{notes}/1002")]
        assert all(r.headers["job-token"] == "job-token-xyz" for r in forge.requests)
        forge.page_size = 1  # ours, the second note, is now on page 2
        forge.requests.clear()
        third = run(["--body", str(report), "--forge", "gitlab"], env)
        assert third.returncode == 0, third.stderr
        assert forge.calls() == [("GET", f"{notes}?per_page=100"), ("GET", f"{notes}?per_page=100&page=2"),
                                 ("PUT", f"{notes}/1002")]
        assert len(forge.comments) == 4
        assert_secret_kept(first)
        assert_secret_kept(second)


def test_gitlab_refusal_and_missing_settings(report: Path) -> None:
    with serving(Forge("gitlab", refuse=(403, {"message": "403 Forbidden"}))) as forge:
        result = run(["--body", str(report)], gitlab_env(forge, GITLAB_TOKEN=TOKEN))
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == (f"pr_comment: error: GET {forge.url}/api/v4/projects/42/merge_requests/5/notes"
                                 "?per_page=100: HTTP 403 (403 Forbidden)\n")
        assert_secret_kept(result)
        forge.requests.clear()
        no_token = run(["--body", str(report)], gitlab_env(forge))
        assert no_token.returncode == 2 and no_token.stderr == (
            "pr_comment: error: no token: set REGSURVEY_GITLAB_TOKEN (an access token with the api scope) or run "
            "in a GitLab job (CI_JOB_TOKEN)\n")
        env = gitlab_env(forge, GITLAB_TOKEN=TOKEN)
        del env["CI_MERGE_REQUEST_IID"]
        no_iid = run(["--body", str(report)], env)
        assert no_iid.returncode == 2 and no_iid.stderr == (
            "pr_comment: error: CI_MERGE_REQUEST_IID is not set (the merge request's iid: run in a merge-request "
            "pipeline, or pass --number N)\n")
        assert forge.requests == []


def test_the_body_is_scrubbed_of_every_secret_of_the_environment(tmp_path: Path) -> None:
    """The report comes from a job that ran the request's code: any secret value in it (the token in use,
    another job's, the runner's) is posted as the variable's name; other values are left as they are."""
    job_token = "job-token-of-the-note-0815"
    report = tmp_path / "regsurvey.md"
    report.write_text(f"### regsurvey check failed\n\n- raised: tokens {TOKEN} {job_token} aws-secret-0123456789 "
                      "for keys mla_decode/*\n")
    with serving(Forge("gitlab")) as forge:
        env = gitlab_env(forge, REGSURVEY_GITLAB_TOKEN=TOKEN, CI_JOB_TOKEN=job_token,
                         AWS_SECRET_ACCESS_KEY="aws-secret-0123456789", REGSURVEY_KEYS="mla_decode/*")
        result = run(["--body", str(report)], env)
        assert result.returncode == 0, result.stderr
        (body,) = forge.bodies()
        assert body.startswith(f"{MARKER}\n### regsurvey check failed\n\n- raised: tokens "
                               "[secret REGSURVEY_GITLAB_TOKEN] [secret CI_JOB_TOKEN] [secret AWS_SECRET_ACCESS_KEY] "
                               "for keys mla_decode/*\n")
        assert forge.requests[-1].headers["private-token"] == TOKEN


def test_a_body_that_is_no_regular_file_or_too_long(tmp_path: Path) -> None:
    """A FIFO in the report's place is refused in one line (not waited on); a report of megabytes is read
    only up to the forge's limit and posted cut."""
    fifo = tmp_path / "regsurvey.md"
    os.mkfifo(fifo)
    with serving(Forge("github")) as forge:
        env = github_env(forge, tmp_path)
        result = run(["--body", str(fifo)], env)
        assert (result.returncode, result.stderr) == (2, f"pr_comment: error: cannot read {fifo}: not a regular file\n")
        assert forge.requests == []
        big = tmp_path / "big.md"
        big.write_text("### report\n" + "é" * 3_000_000)
        result = run(["--body", str(big)], env)
        assert result.returncode == 0, result.stderr
        (body,) = forge.bodies()
        assert len(body) <= 65536 and "(cut here: the whole report is in the job's summary and artifacts)" in body
