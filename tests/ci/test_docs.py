"""docs/ci.md's "CI: GitHub Actions and GitLab": the workflow and the include it shows are valid YAML that use
only what action.yml and the GitLab template declare, with the permissions the action's steps need, on
the events where a pull request's code may run; and its "Gating a Triton upgrade in CI": the recipes'
scripts build the base's venv from the base commit's pin file where the pin changed, and only there."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..conftest import commit_all, git
from .conftest import REGSURVEY


def section_blocks() -> list[str]:
    text = (REGSURVEY / "docs" / "ci.md").read_text()
    section = text.split("## CI: GitHub Actions and GitLab\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", section, flags=re.S)


def test_the_workflow_the_docs_show_uses_the_action_as_declared() -> None:
    workflow_text, gitlab_text = section_blocks()
    assert len(workflow_text.splitlines()) <= 12
    workflow = yaml.safe_load(workflow_text)
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "security-events": "write"}
    (job,) = workflow["jobs"].values()
    checkout, action = job["steps"]
    assert checkout["uses"].startswith("actions/checkout@") and action["uses"] == "<owner>/regsurvey@main"
    declared = yaml.safe_load((REGSURVEY / "action.yml").read_text())["inputs"]
    assert set(action["with"]) <= set(declared)
    # PyYAML reads the `on` key as True. Never pull_request_target: the check runs the pull request's code.
    assert set(workflow[True]) == {"pull_request", "push"}

    gitlab = yaml.safe_load(gitlab_text)
    (include,) = gitlab["include"]
    assert include["remote"].endswith("/ci/gitlab/regsurvey.gitlab-ci.yml")
    template = yaml.safe_load((REGSURVEY / "ci" / "gitlab" / "regsurvey.gitlab-ci.yml").read_text())
    assert set(gitlab["regsurvey-check"]["variables"]) <= set(template["regsurvey-check"]["variables"])
    # What both jobs share (where regsurvey comes from) is set in the hidden job they extend.
    assert set(gitlab[".regsurvey"]["variables"]) <= set(template[".regsurvey"]["variables"])
    assert template["regsurvey-check"]["extends"] == template["regsurvey-note"]["extends"] == ".regsurvey"


# docs/ci.md's "Gating a Triton upgrade in CI": the base's venv built from the base commit's pin file, only
# where the pin changed. Their scripts run here with python, python3 and pip stubbed (no network): a venv is
# a directory whose bin/pip records what it was asked to install, and from which file.
PIP_STUB = """#!/bin/bash
echo "pip $*" >> "${PIP_LOG:?}"
for word; do if [ -f "$word" ]; then cat "$word" >> "$PIP_LOG"; fi; done
"""
# A venv: its bin/pip is the stub above, logging to pip.log in the venv's directory.
PYTHON_STUB = """#!/bin/bash
[ "$1 $2" = "-m venv" ] || exit 9
mkdir -p "$3/bin"
printf '#!/bin/bash\\nPIP_LOG=%s/pip.log exec %s "$@"\\n' "$3" "$(dirname "$0")/pip" > "$3/bin/pip"
chmod +x "$3/bin/pip"
"""


def upgrade_blocks() -> tuple[dict[str, Any], dict[str, Any]]:
    text = (REGSURVEY / "docs" / "ci.md").read_text()
    section = text.split("## Gating a Triton upgrade in CI\n", 1)[1].split("\n## ", 1)[0]
    github, gitlab = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    return yaml.safe_load(github), yaml.safe_load(gitlab)


def stubs(tmp_path: Path) -> dict[str, str]:
    """An environment whose python, python3 and pip are the stubs."""
    bin_dir = tmp_path / "stubs"
    bin_dir.mkdir()
    for name, body in (("pip", PIP_STUB), ("python", PYTHON_STUB), ("python3", PYTHON_STUB)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path), "PIP_LOG": str(tmp_path / "pip.log")}


def pinned_project(tmp_path: Path, head_pin: str) -> tuple[Path, str]:
    """A repository whose base pins Triton 3.6.0 and whose head pins ``head_pin``; its own origin."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "requirements.txt").write_text("triton==3.6.0\ntorch==2.13.0\nnumpy\n")
    base = commit_all(repo, "the pins")
    (repo / "requirements.txt").write_text(f"triton=={head_pin}\ntorch==2.13.0\nnumpy\n")
    (repo / "NOTES.md").write_text("a change\n")
    commit_all(repo, "the change")
    git(repo, "remote", "add", "origin", str(repo))
    return repo, base


@pytest.mark.parametrize("head_pin", ["3.9.0", "3.6.0"])
def test_the_github_recipe_builds_the_bases_venv_where_the_pin_changed(tmp_path: Path, head_pin: str) -> None:
    workflow, _ = upgrade_blocks()
    checkout, venv_step, action = workflow["steps"]
    assert checkout["uses"].startswith("actions/checkout@") and checkout["with"]["fetch-depth"] == 0
    assert checkout["with"]["persist-credentials"] is False
    declared = yaml.safe_load((REGSURVEY / "action.yml").read_text())["inputs"]
    assert action["uses"] == "<owner>/regsurvey@main" and set(action["with"]) <= set(declared)
    assert action["with"]["base-toolchain"] == "${{ steps." + venv_step["id"] + ".outputs.venv }}"
    assert venv_step["if"] == "github.event_name == 'pull_request'"
    assert venv_step["env"] == {"BASE": "${{ github.event.pull_request.base.sha }}"}
    repo, base = pinned_project(tmp_path, head_pin)
    output, temp = tmp_path / "github_output", tmp_path / "runner-temp"
    output.touch()
    temp.mkdir()
    env = {**stubs(tmp_path), "BASE": base, "RUNNER_TEMP": str(temp), "GITHUB_OUTPUT": str(output)}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", venv_step["run"]], cwd=repo,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    if head_pin == "3.6.0":  # the same pin: no venv, an empty output, the plain check
        assert output.read_text() == "" and not (temp / "venv-base").exists()
        return
    assert output.read_text() == f"venv={temp}/venv-base\n"
    assert (temp / "venv-base" / "pip.log").read_text() == (
        f"pip install --quiet -r {temp}/base-requirements.txt\ntriton==3.6.0\ntorch==2.13.0\nnumpy\n")


@pytest.mark.parametrize("pin_changed", [True, False])
def test_the_gitlab_recipe_builds_the_bases_venv_where_its_rule_says(tmp_path: Path, pin_changed: bool) -> None:
    _, pipeline = upgrade_blocks()
    job = pipeline["regsurvey-check"]
    template = yaml.safe_load((REGSURVEY / "ci" / "gitlab" / "regsurvey.gitlab-ci.yml").read_text())
    declared = template["regsurvey-check"]["variables"]
    assert declared["REGSURVEY_BASE_TOOLCHAIN"] == ""  # the template's default: the plain check
    assert set(job["variables"]) <= set(declared)
    changed, plain = job["rules"]
    assert changed["changes"] == ["requirements.txt"] and set(changed["variables"]) <= set(declared)
    assert changed["if"] == plain["if"] == template["regsurvey-check"]["rules"][0]["if"]
    venv = tmp_path / "venv-base"
    repo, base = pinned_project(tmp_path, "3.9.0")
    env = {**stubs(tmp_path), "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
           "REGSURVEY_BASE_TOOLCHAIN": str(venv) if pin_changed else ""}
    setup = job["variables"]["REGSURVEY_SETUP"].replace("/tmp/", f"{tmp_path}/")
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", setup], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    head_install = "pip install -r requirements.txt\ntriton==3.9.0\ntorch==2.13.0\nnumpy\n"
    assert (tmp_path / "pip.log").read_text() == head_install
    if not pin_changed:
        assert not venv.exists()
        return
    assert changed["variables"]["REGSURVEY_BASE_TOOLCHAIN"] == "/tmp/venv-base"
    assert (venv / "pip.log").read_text() == (f"pip install --quiet -r {tmp_path}/base-requirements.txt\n"
                                              "triton==3.6.0\ntorch==2.13.0\nnumpy\n")
