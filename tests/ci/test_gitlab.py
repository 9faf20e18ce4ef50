"""ci/gitlab/regsurvey.gitlab-ci.yml: its two jobs run as GitLab's runner runs them (each job's ``extends``
resolved, its script one bash script with ``-eo pipefail``, its variables expanded over CI's own and over
the project's CI/CD variables its environment scope lets it have, a job token of its own) against a real
two-commit project and a fake GitLab on loopback. ``regsurvey-check`` runs a real ``regsurvey check``
against the merge request's diff base in the checkout, keeps its artifacts and the cached store where the
template says, and fails with the check's status; ``regsurvey-note`` runs after it in a directory holding
only those artifacts (``GIT_STRATEGY: none``) and creates, then updates, the note. ``before_script`` (clone
and install regsurvey: the network) is not run: this environment has regsurvey installed, and
REGSURVEY_HOME points at this checkout.

A merge request whose keys file hunts for tokens (its own environment, and every parent process's) and
raises with them: the survey's code finds no token in its environment, never the note's token when it is
scoped as the template says, and whatever it finds reaches neither the note, nor the report, nor the
SARIF, nor the logs."""

from __future__ import annotations

import copy
import fnmatch
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..conftest import commit_all
from .actions import environment
from .conftest import LEAKING_KEYS, REGSURVEY, Project, scale_reading
from .forge import Forge, serving

TEMPLATE = REGSURVEY / "ci" / "gitlab" / "regsurvey.gitlab-ci.yml"
TOKEN = "glpat-test-token-abcdef"
SURVEY_JOB_TOKEN = "job-token-of-the-survey-4711"
NOTE_JOB_TOKEN = "job-token-of-the-note-0815"
SECRETS = (TOKEN, SURVEY_JOB_TOKEN, NOTE_JOB_TOKEN)
MARKER = "<!-- regsurvey -->"
NOTE_SCOPE = "regsurvey-note"

def expand(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), ""), value)


def _merged(base: Any, over: Any) -> Any:
    """GitLab's ``extends``: mappings merged key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = _merged(base.get(key), value) if key in base else copy.deepcopy(value)
        return out
    return copy.deepcopy(over)


def template_job(name: str) -> dict[str, Any]:
    """The job ``name`` of the template, its ``extends`` resolved."""
    jobs = yaml.safe_load(TEMPLATE.read_text())
    job = jobs[name]
    parents = job.get("extends", [])
    resolved: dict[str, Any] = {}
    for parent in [parents] if isinstance(parents, str) else parents:
        resolved = _merged(resolved, template_job(parent))
    resolved = _merged(resolved, {k: v for k, v in job.items() if k != "extends"})
    return resolved


def rule_holds(condition: str, env: dict[str, str]) -> bool:
    """A ``rules: if:`` of ``$VAR == "value"`` terms joined by ``&&``."""
    for term in condition.split("&&"):
        name, value = (part.strip() for part in term.split("=="))
        if env.get(name.lstrip("$"), "") != value.strip('"'):
            return False
    return True


@dataclass
class Pipeline:
    check: subprocess.CompletedProcess[str]
    check_env: dict[str, str]
    note: subprocess.CompletedProcess[str] | None
    note_env: dict[str, str]
    note_dir: Path

    def logs(self) -> str:
        return "".join(done.stdout + done.stderr for done in (self.check, self.note) if done is not None)


def job_env(name: str, project: Project, tmp_path: Path, forge: Forge, token_scope: str,
            overrides: dict[str, str]) -> dict[str, str]:
    """What GitLab gives job ``name``: CI's variables, its own job token, the project's CI/CD variables
    whose environment scope matches the job's environment, then the job's variables."""
    job = template_job(name)
    ci = {"GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
          "CI_API_V4_URL": f"{forge.url}/api/v4", "CI_PROJECT_ID": "42", "CI_MERGE_REQUEST_IID": "5",
          "CI_MERGE_REQUEST_DIFF_BASE_SHA": project.base, "CI_COMMIT_SHA": project.head,
          "CI_PROJECT_DIR": str(project.repo), "CI_JOB_URL": "https://gitlab.example/g/p/-/jobs/77",
          "CI_JOB_TOKEN": SURVEY_JOB_TOKEN if name == "regsurvey-check" else NOTE_JOB_TOKEN,
          "LEAK_DUMP": str(tmp_path / "leak.json")}
    environment_name = (job.get("environment") or {}).get("name")
    if token_scope == "*" or (environment_name and fnmatch.fnmatchcase(environment_name, token_scope)):
        ci["REGSURVEY_GITLAB_TOKEN"] = TOKEN
    env = environment(Path(sys.executable), tmp_path / "bin", **ci)
    for variable, value in job["variables"].items():
        env[variable] = expand(str(value), env)
    env.update(REGSURVEY_HOME=str(REGSURVEY), REGSURVEY_TARGETS="sm90", **overrides)
    return env


def run_script(job: dict[str, Any], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "\n".join(job["script"])],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def run_pipeline(project: Project, tmp_path: Path, forge: Forge, token_scope: str = NOTE_SCOPE,
                 **overrides: str) -> Pipeline:
    """The merge request's pipeline: the survey job in the checkout, then (when its rules hold) the note
    job in a directory of its own holding the survey job's artifacts."""
    check_job = template_job("regsurvey-check")
    check_env = job_env("regsurvey-check", project, tmp_path, forge, token_scope, overrides)
    assert rule_holds(check_job["rules"][0]["if"], check_env)
    check = run_script(check_job, check_env, project.repo)

    note_job = template_job("regsurvey-note")
    note_env = job_env("regsurvey-note", project, tmp_path, forge, token_scope, overrides)
    note_dir = tmp_path / "note-job"
    shutil.rmtree(note_dir, ignore_errors=True)
    note_dir.mkdir()
    (rule,) = note_job["rules"]
    if not rule_holds(rule["if"], note_env):
        return Pipeline(check, check_env, None, note_env, note_dir)
    assert rule["when"] == "always" and note_job["needs"] == [{"job": "regsurvey-check", "artifacts": True}]
    for path in check_job["artifacts"]["paths"]:
        if (project.repo / path).is_file():
            shutil.copy(project.repo / path, note_dir / path)
    note = run_script(note_job, note_env, note_dir)
    return Pipeline(check, check_env, note, note_env, note_dir)


def test_the_gitlab_jobs_note_the_merge_request_and_fail_with_the_check(project: Project, tmp_path: Path) -> None:
    with serving(Forge("gitlab")) as forge:
        first = run_pipeline(project, tmp_path, forge)
        check_job = template_job("regsurvey-check")
        assert first.check.returncode == 1, first.check.stderr
        assert first.check.stdout.endswith("regsurvey check exit status 1\n")
        assert check_job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
        # The artifacts and the cache: where the template says, written.
        assert check_job["artifacts"]["when"] == "always" and check_job["cache"]["when"] == "always"
        markdown = (project.repo / check_job["artifacts"]["paths"][0]).read_text()
        sarif = json.loads((project.repo / check_job["artifacts"]["paths"][1]).read_text())
        assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["regsurvey/occupancy-drop"]
        (cached,) = check_job["cache"]["paths"]
        assert (project.repo / cached / "surveys").is_dir()
        assert markdown.startswith(f"### regsurvey check failed, 1 problem: `{project.head[:10]}` against "
                                   f"`{project.base[:10]}`\n")
        before, after = (scale_reading(project.repo / cached, sha) for sha in (project.base, project.head))
        assert after["regs"] > before["regs"]
        assert "### Registers: " in markdown
        assert f"regs {before['regs']} → {after['regs']} (+{after['regs'] - before['regs']})" in markdown
        # The note, by the note job, from the artifacts alone: the marker and the report, sent with the
        # access token in PRIVATE-TOKEN.
        assert first.note is not None and first.note.returncode == 0, first.note.stderr
        assert first.note.stdout == "pr_comment: created the regsurvey comment (gitlab comment 1001)\n"
        assert sorted(p.name for p in first.note_dir.iterdir()) == ["regsurvey.md", "regsurvey.sarif"]
        notes = "/api/v4/projects/42/merge_requests/5/notes"
        assert forge.calls() == [("GET", f"{notes}?per_page=100"), ("POST", notes)]
        assert forge.requests[-1].headers["private-token"] == TOKEN
        (body,) = forge.bodies()
        assert body.startswith(f"{MARKER}\n{markdown.rstrip()}\n")
        assert not any(secret in first.logs() for secret in SECRETS)

        # The next pipeline: a clean checkout (git clean -ffdx), then the cache restored.
        store = project.repo / cached
        kept = {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file() and p.name != "costs.json"}
        shutil.move(store, tmp_path / "cache")
        subprocess.run(["git", "-C", str(project.repo), "clean", "-q", "-ffdx"], check=True)
        shutil.move(tmp_path / "cache", store)
        # The note is updated; REGSURVEY_FAIL_ON_REGRESSION false lets the survey job pass; both surveys
        # came from the cached store (nothing compiled or stored again).
        again = run_pipeline(project, tmp_path, forge, REGSURVEY_FAIL_ON_REGRESSION="false")
        assert again.check.returncode == 0, again.check.stderr
        assert again.note is not None and again.note.returncode == 0, again.note.stderr
        assert forge.calls()[-1] == ("PUT", f"{notes}/1001") and len(forge.comments) == 1
        assert forge.bodies()[0].startswith(f"{MARKER}\n{markdown.rstrip()}\n")
        assert {p: p.stat().st_mtime_ns for p in store.rglob("*") if p.is_file() and p.name != "costs.json"} == kept

        # REGSURVEY_COMMENT false: no note job.
        forge.requests.clear()
        quiet = run_pipeline(project, tmp_path, forge, REGSURVEY_COMMENT="false")
        assert quiet.check.returncode == 1 and quiet.note is None and forge.requests == []


def test_only_the_note_job_holds_the_token_and_it_runs_no_project_code() -> None:
    check_job, note_job = template_job("regsurvey-check"), template_job("regsurvey-note")
    # The token's scope names the note job's environment; the survey job has none.
    assert "environment" not in check_job
    assert note_job["environment"] == {"name": NOTE_SCOPE, "action": "access"}
    # The note job: no checkout, no cache, only regsurvey's own comment script of a fresh clone.
    assert note_job["variables"]["GIT_STRATEGY"] == "none" and note_job["cache"] == []
    assert note_job["script"] == ['python "$REGSURVEY_HOME/ci/pr_comment.py" --forge gitlab --body regsurvey.md']
    assert note_job["before_script"][0] == 'REGSURVEY_HOME="$(mktemp -d)/regsurvey"'
    # Every positional argument of git after "--": a REGSURVEY_SOURCE of "--upload-pack=..." is a URL.
    for job in (check_job, note_job):
        (clone,) = [line for line in job["before_script"] if line.startswith("git clone")]
        assert ' -- "$REGSURVEY_SOURCE" "$REGSURVEY_HOME"' in clone
    # The setup, which may install the request's code, runs without the secret variables.
    assert any("ci/secret_vars.py\" -- bash" in line for line in check_job["before_script"])


@pytest.mark.parametrize("token_scope", [NOTE_SCOPE, "*"])
def test_a_keys_file_hunting_tokens_leaks_none(project: Project, tmp_path: Path, token_scope: str) -> None:
    """The template's scope (only the note job gets the token), and the token given to every job (the
    variable left unscoped): either way no token reaches the note, the report, the SARIF or the logs."""
    (project.repo / "keys" / "leak.py").write_text(LEAKING_KEYS)
    head = commit_all(project.repo, "a keys file that hunts tokens")
    leaking = Project(project.repo, project.base, head)
    with serving(Forge("gitlab")) as forge:
        done = run_pipeline(leaking, tmp_path, forge, token_scope)
        assert done.check.returncode == 1, done.check.stderr
        assert done.note is not None and done.note.returncode == 0, done.note.stderr
        leak = json.loads((tmp_path / "leak.json").read_text())
        # The project's code ran (a worker of the check) with no token in its environment, the rest of the
        # job's variables there.
        assert not [name for name in leak["environ"] if "TOKEN" in name]
        assert not any(secret in json.dumps(leak["environ"]) for secret in SECRETS)
        assert leak["environ"]["CI_PROJECT_ID"] == "42" and leak["environ"]["LEAK_DUMP"]
        # What it found in the processes above it: the survey job's own token; the note's token only
        # when the job was given it (scoped as the template says, it never was).
        assert leak["found"]["CI_JOB_TOKEN"] == SURVEY_JOB_TOKEN
        assert leak["found"].get("REGSURVEY_GITLAB_TOKEN") == (TOKEN if token_scope == "*" else None)
        assert "REGSURVEY_GITLAB_TOKEN" not in done.check_env or token_scope == "*"
        assert done.note_env["REGSURVEY_GITLAB_TOKEN"] == TOKEN

        # It raised with what it found: the report says so, each value replaced by its name.
        markdown = (leaking.repo / "regsurvey.md").read_text()
        found = ("'CI_JOB_TOKEN': '[secret CI_JOB_TOKEN]'" if token_scope != "*" else
                 "'REGSURVEY_GITLAB_TOKEN': '[secret REGSURVEY_GITLAB_TOKEN]'")
        assert ("- leak/width2 on sm90 (no kernel) is new and fails to build: kind body raised after 1 launch at "
                "keys/leak.py:39: RuntimeError: tokens {") in markdown
        assert found in markdown
        sarif = (leaking.repo / "regsurvey.sarif").read_text()
        (result,) = [r for r in json.loads(sarif)["runs"][0]["results"] if r["ruleId"] == "regsurvey/newly-failing"]
        assert found in result["message"]["text"]
        (body,) = forge.bodies()
        assert found in body
        assert forge.requests[-1].headers["private-token"] == TOKEN
        # And no token anywhere that leaves: the note, the artifacts, the logs.
        for text in (body, markdown, sarif, done.logs()):
            assert not any(secret in text for secret in SECRETS)


def test_a_refused_note_fails_the_note_job_in_one_line(project: Project, tmp_path: Path) -> None:
    with serving(Forge("gitlab", refuse=(403, {"message": "403 Forbidden"}))) as forge:
        done = run_pipeline(project, tmp_path, forge, REGSURVEY_BASE="no-such-rev")
        assert done.check.returncode == 2
        assert (project.repo / "regsurvey.md").read_text().startswith(
            "### regsurvey check could not judge this change (exit status 2)\n")
        assert done.note is not None and done.note.returncode == 2
        assert done.note.stderr == (f"pr_comment: error: GET {forge.url}/api/v4/projects/42/merge_requests/5/notes"
                                    "?per_page=100: HTTP 403 (403 Forbidden)\n")
        assert not any(secret in done.logs() for secret in SECRETS)


def test_a_base_that_is_an_option_runs_nothing(project: Project, tmp_path: Path) -> None:
    """REGSURVEY_BASE of ``--upload-pack=CMD`` (a pipeline variable anyone starting a pipeline may set):
    refused in one line before git sees it, where ``git fetch origin <base>`` ran CMD."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(project.repo), str(origin)], check=True)
    subprocess.run(["git", "-C", str(project.repo), "remote", "add", "origin", str(origin)], check=True)
    planted = tmp_path / "planted"
    base = f"--upload-pack=touch {planted}; git-upload-pack"
    with serving(Forge("gitlab")) as forge:
        done = run_pipeline(project, tmp_path, forge, REGSURVEY_BASE=base)
        assert done.check.returncode == 2 and not planted.exists()
        assert done.check.stderr == (f"regsurvey_check: error: REGSURVEY_BASE {base!r} is not a revision: it "
                                     "starts with '-' (git would read it as an option)\n")
        assert (project.repo / "regsurvey.md").read_text() == (
            f"### regsurvey check could not run\n\nREGSURVEY_BASE {base!r} is not a revision: it starts with '-' "
            "(git would read it as an option)\n")


def test_the_base_toolchain_variable_is_the_checks_base_toolchain(project: Project, tmp_path: Path) -> None:
    """A Triton upgrade gated (docs/ci.md, "Gating a Triton upgrade in CI"): REGSURVEY_BASE_TOOLCHAIN, empty in
    the template (the plain check), is passed as ``--base-toolchain``; one that is not there is one line."""
    assert template_job("regsurvey-check")["variables"]["REGSURVEY_BASE_TOOLCHAIN"] == ""
    missing = tmp_path / "venv-base"
    with serving(Forge("gitlab")) as forge:
        done = run_pipeline(project, tmp_path, forge, REGSURVEY_BASE_TOOLCHAIN=str(missing), REGSURVEY_COMMENT="false")
    assert done.check.returncode == 2 and done.note is None
    assert f" --base-toolchain {missing}\n" in done.check.stderr
    assert (project.repo / "regsurvey.md").read_text() == (
        "### regsurvey check could not judge this change (exit status 2)\n\n```\n"
        f"regsurvey: error: --base-toolchain {missing}: no such file or directory\n```\n")
