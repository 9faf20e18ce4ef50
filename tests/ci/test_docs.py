"""docs/ci.md's "CI: GitHub Actions and GitLab": the workflow and the include it shows are valid YAML that use
only what action.yml and the GitLab template declare, with the permissions the action's steps need, on
the events where a pull request's code may run."""

from __future__ import annotations

import re

import yaml

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
