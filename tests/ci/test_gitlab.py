"""ci/gitlab/regsurvey.gitlab-ci.yml: its job's script run as GitLab's runner runs it (one bash script with
``-eo pipefail``, the job's variables expanded over CI's own) against a real two-commit project and a fake
GitLab on loopback: a real ``regsurvey check`` against the merge request's diff base, the note created,
the artifacts and the cached store where the template says, and the job failing with the check's status
after the note. ``before_script`` (clone and install regsurvey: the network) is not run: this environment
has regsurvey installed, and REGSURVEY_HOME points at this checkout."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from .actions import environment
from .conftest import REGSURVEY, Project
from .forge import Forge, serving

TEMPLATE = REGSURVEY / "ci" / "gitlab" / "regsurvey.gitlab-ci.yml"
TOKEN = "glpat-test-token-abcdef"
MARKER = "<!-- regsurvey -->"


def expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), value)


def run_job(project: Project, tmp_path: Path, forge: Forge,
            **overrides: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    job = yaml.safe_load(TEMPLATE.read_text())["regsurvey-check"]
    ci = {"GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
          "CI_API_V4_URL": f"{forge.url}/api/v4", "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "5",
          "CI_MERGE_REQUEST_DIFF_BASE_SHA": project.base, "CI_COMMIT_SHA": project.head,
          "CI_PROJECT_DIR": str(project.repo), "CI_JOB_TOKEN": "job-token-xyz",
          "REGSURVEY_GITLAB_TOKEN": TOKEN, "CI_JOB_URL": "https://gitlab.example/g/p/-/jobs/77"}
    env = environment(Path(sys.executable), tmp_path / "bin", **ci)
    for name, value in job["variables"].items():
        env[name] = expand(str(value), env)
    env.update(REGSURVEY_HOME=str(REGSURVEY), REGSURVEY_TARGETS="sm90", **overrides)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(job["script"])],
                          cwd=project.repo, env=env, capture_output=True, text=True, timeout=300)
    return done, job


def test_the_gitlab_job_notes_the_merge_request_and_fails_with_the_check(project: Project, tmp_path: Path) -> None:
    with serving(Forge("gitlab")) as forge:
        done, job = run_job(project, tmp_path, forge)
        assert done.returncode == 1, done.stderr
        assert done.stdout.endswith("pr_comment: created the regsurvey comment (gitlab comment 1001)\n"
                                    "regsurvey check exit status 1\n")
        assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
        # The artifacts and the cache: where the template says, written.
        assert job["artifacts"]["when"] == "always" and job["cache"]["when"] == "always"
        markdown = (project.repo / job["artifacts"]["paths"][0]).read_text()
        sarif = json.loads((project.repo / job["artifacts"]["paths"][1]).read_text())
        assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["regsurvey/occupancy-drop"]
        (cached,) = job["cache"]["paths"]
        assert (project.repo / cached / "surveys").is_dir()
        assert markdown.startswith(f"### regsurvey check failed, 1 problem: `{project.head[:10]}` against "
                                   f"`{project.base[:10]}`\n")
        assert "### Registers: " in markdown and "regs 30 → 50 (+20)" in markdown
        # The note: the marker and the report, sent with the access token in PRIVATE-TOKEN.
        notes = "/api/v4/projects/42/merge_requests/5/notes"
        assert forge.calls() == [("GET", f"{notes}?per_page=100"), ("POST", notes)]
        assert forge.requests[-1].headers["private-token"] == TOKEN
        (body,) = forge.bodies()
        assert body.startswith(f"{MARKER}\n{markdown.rstrip()}\n")
        assert TOKEN not in done.stdout + done.stderr

        # The next pipeline: a clean checkout (git clean -ffdx), then the cache restored.
        store = project.repo / cached
        kept = {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file() and p.name != "costs.json"}
        shutil.move(store, tmp_path / "cache")
        subprocess.run(["git", "-C", str(project.repo), "clean", "-q", "-ffdx"], check=True)
        shutil.move(tmp_path / "cache", store)
        # The note is updated; REGSURVEY_FAIL_ON_REGRESSION false lets the job pass; both surveys came
        # from the cached store (nothing compiled or stored again).
        again, _ = run_job(project, tmp_path, forge, REGSURVEY_FAIL_ON_REGRESSION="false")
        assert again.returncode == 0, again.stderr
        assert forge.calls()[-1] == ("PUT", f"{notes}/1001") and len(forge.comments) == 1
        assert forge.bodies()[0].startswith(f"{MARKER}\n{markdown.rstrip()}\n")
        assert {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file() and p.name != "costs.json"} == kept


def test_a_refused_note_fails_the_job_in_one_line(project: Project, tmp_path: Path) -> None:
    with serving(Forge("gitlab", refuse=(403, {"message": "403 Forbidden"}))) as forge:
        done, _ = run_job(project, tmp_path, forge, REGSURVEY_BASE="no-such-rev")
        assert done.returncode == 2
        assert done.stderr.endswith(f"pr_comment: error: GET {forge.url}/api/v4/projects/42/merge_requests/5/notes"
                                    "?per_page=100: HTTP 403 (403 Forbidden)\n")
        assert (project.repo / "regsurvey.md").read_text().startswith(
            "### regsurvey check could not judge this change (exit status 2)\n")
        assert TOKEN not in done.stdout + done.stderr
