"""regsurvey.secret_vars: which variables of a CI job's environment are secrets (the names GitLab, GitHub and
cloud tools give them; not regsurvey's own settings), the environment without them, and text with their
values replaced."""

from __future__ import annotations

import json

import pytest

from regsurvey.secret_vars import Scrubber, is_secret, secret_names, without_secrets

SECRET = ["CI_JOB_TOKEN", "REGSURVEY_GITLAB_TOKEN", "GITLAB_TOKEN", "GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
          "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_CACHE_URL", "CI_REGISTRY_PASSWORD", "CI_JOB_JWT_V2",
          "CI_REPOSITORY_URL", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SESSION_TOKEN", "HF_TOKEN",
          "OPENAI_API_KEY", "WANDB_APIKEY", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK", "GH_PAT",
          "NPM_AUTH", "TWINE_PASSWORD", "DOCKER_AUTH_CONFIG", "github_token", "my-api.key", "GHTOKEN",
          "DB_PASSPHRASE", "SESSION_COOKIE"]
NOT_SECRET = ["REGSURVEY_KEYS", "REGSURVEY_KINDS", "REGSURVEY_SECRET_VARS", "PATH", "PYTHONPATH", "HOME",
              "MAX_TOKENS", "TOKENIZERS_PARALLELISM", "GIT_AUTHOR_NAME", "CI_PROJECT_ID", "CI_JOB_URL",
              "GITHUB_STEP_SUMMARY", "TRITON_CACHE_DIR", "KEYS_DIR", "MONKEYPATCH", "CUDA_VISIBLE_DEVICES"]


@pytest.mark.parametrize("name", SECRET)
def test_secret_names(name: str) -> None:
    assert is_secret(name)


@pytest.mark.parametrize("name", NOT_SECRET)
def test_names_that_are_no_secret(name: str) -> None:
    assert not is_secret(name)


def test_regsurvey_secret_vars_adds_names_and_globs() -> None:
    env = {"REGSURVEY_SECRET_VARS": "DEPLOY_HOOK, vendor_*", "DEPLOY_HOOK": "https://hooks.example/abc",
           "VENDOR_LICENSE": "lic-0123456789", "PATH": "/usr/bin", "GITHUB_TOKEN": "ghs_0123456789"}
    assert secret_names(env) == ["DEPLOY_HOOK", "GITHUB_TOKEN", "VENDOR_LICENSE"]
    assert without_secrets(env) == {"REGSURVEY_SECRET_VARS": "DEPLOY_HOOK, vendor_*", "PATH": "/usr/bin"}


def test_scrubbing_replaces_each_form_of_a_secret_value() -> None:
    token = "glpat-Ab/c+d é"  # a slash, a plus, a space and a non-ASCII character: every form differs
    env = {"REGSURVEY_GITLAB_TOKEN": token, "CI_JOB_TOKEN": "job-0123456789", "SHORT_TOKEN": "true",
           "REGSURVEY_KEYS": "mla_decode/*"}
    scrub = Scrubber.of(env)
    text = (f"raw {token}; url https://x/{'glpat-Ab%2Fc%2Bd%20%C3%A9'}; path glpat-Ab/c%2Bd%20%C3%A9; "
            f"json {json.dumps(token)}; job-0123456789; true; mla_decode/*")
    assert scrub.text(text) == ("raw [secret REGSURVEY_GITLAB_TOKEN]; url https://x/[secret REGSURVEY_GITLAB_TOKEN]; "
                                "path [secret REGSURVEY_GITLAB_TOKEN]; json \"[secret REGSURVEY_GITLAB_TOKEN]\"; "
                                "[secret CI_JOB_TOKEN]; true; mla_decode/*")
    # In JSON data: every string, keys too; numbers as they are.
    data = {"message": {"text": f"leak {token}"}, token: [1, "job-0123456789"]}
    assert scrub.json(data) == {"message": {"text": "leak [secret REGSURVEY_GITLAB_TOKEN]"},
                                "[secret REGSURVEY_GITLAB_TOKEN]": [1, "[secret CI_JOB_TOKEN]"]}


def test_a_value_holding_another_is_replaced_whole_and_a_token_in_use_whatever_its_length() -> None:
    env = {"CI_JOB_TOKEN": "abcdefgh", "CI_REPOSITORY_URL": "https://gitlab-ci-token:abcdefgh@gitlab.example/p.git"}
    scrub = Scrubber.of(env, also={"GITHUB_TOKEN": "ghs"})
    assert scrub.text(f"{env['CI_REPOSITORY_URL']} abcdefgh ghs") == (
        "[secret CI_REPOSITORY_URL] [secret CI_JOB_TOKEN] [secret GITHUB_TOKEN]")
    assert not Scrubber.of({"PATH": "/usr/local/bin:/usr/bin"})


def test_the_rules_import_only_the_standard_library() -> None:
    """ci/secret_vars.py loads this file by its path where regsurvey is not installed (the note job)."""
    import ast
    import sys

    import regsurvey.secret_vars as module

    tree = ast.parse(open(module.__file__, encoding="utf-8").read())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level}
    assert imported and imported <= set(sys.stdlib_module_names) | {"__future__"}
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level]


def test_workers_keep_the_results_signing_key_and_no_other_secret() -> None:
    """Workers sign the results they store (REGSURVEY_CACHE_KEY, whose name makes it a secret): without it
    in their environment, a keyed cache would silently go unsigned. Every other secret stays out."""
    from regsurvey.engine.worker_start import worker_environment

    env = {"REGSURVEY_CACHE_KEY": "k" * 40, "CI_JOB_TOKEN": "glcbt-0123456789", "PATH": "/usr/bin"}
    assert worker_environment(env) == {"REGSURVEY_CACHE_KEY": "k" * 40, "PATH": "/usr/bin"}
    assert worker_environment({"REGSURVEY_CACHE_KEY": "", "PATH": "/usr/bin"}) == {"PATH": "/usr/bin"}
