"""ci/secret_vars.py: the CI's setup command run without the secret variables (it may install the merge
request's code), with regsurvey's own rules, which the CI scripts load by path where regsurvey is not
installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "ci" / "secret_vars.py"


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # -I: isolated, as where regsurvey is not installed (the script finds the rules beside it).
    return subprocess.run([sys.executable, "-I", str(SCRIPT), *args], env={"PATH": "/usr/bin:/bin", **env},
                          capture_output=True, text=True, timeout=60)


def test_the_command_runs_without_the_secret_variables() -> None:
    env = {"CI_JOB_TOKEN": "job-0123456789", "REGSURVEY_GITLAB_TOKEN": "glpat-0123456789",
           "AWS_SECRET_ACCESS_KEY": "aws-0123456789", "REGSURVEY_SECRET_VARS": "LICENSE_*",
           "LICENSE_SERVER": "lic.example:27000", "PIP_INDEX_URL": "https://pypi.example/simple",
           "REGSURVEY_KEYS": "mla/*"}
    done = run(["--", "bash", "-c", 'env | sort; echo "exit next"; exit 3'], env)
    assert done.returncode == 3, done.stderr
    names = [line.split("=", 1)[0] for line in done.stdout.splitlines() if "=" in line]
    assert "CI_JOB_TOKEN" not in names and "REGSURVEY_GITLAB_TOKEN" not in names
    assert "AWS_SECRET_ACCESS_KEY" not in names and "LICENSE_SERVER" not in names
    assert {"PIP_INDEX_URL", "REGSURVEY_KEYS", "REGSURVEY_SECRET_VARS", "PATH"} <= set(names)
    assert done.stdout.endswith("exit next\n")


def test_no_command_or_one_that_cannot_run_is_one_line() -> None:
    done = run([], {})
    assert (done.returncode, done.stderr) == (2, "secret_vars: error: usage: secret_vars.py -- COMMAND [ARG...]\n")
    done = run(["--", "/nonexistent/setup"], {})
    assert (done.returncode, done.stderr) == (2, "secret_vars: error: cannot run /nonexistent/setup: "
                                                 "No such file or directory\n")
