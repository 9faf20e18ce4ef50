"""ci/regsurvey_check.py's command line from the REGSURVEY_* variables, built as the CI scripts build it (the
module loaded from ci/, standard library only, in a process of its own): each variable its option, empty
ones none, REGSURVEY_ARGS last."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import REGSURVEY

BUILD = ("import json, sys; sys.path.insert(0, sys.argv[1]); import regsurvey_check; "
         "print(json.dumps(regsurvey_check.command(json.loads(sys.argv[2]))))")
BASE = "a" * 40


def command(**variables: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", BUILD, str(REGSURVEY / "ci"), json.dumps(variables)],
                          capture_output=True, text=True, check=True)
    args: list[str] = json.loads(done.stdout)
    assert args[:3] == [variables.get("REGSURVEY_PYTHON") or sys.executable, "-m", "regsurvey"]
    return args[3:]


def test_the_base_toolchain_variable_is_the_checks_base_toolchain() -> None:
    """A Triton upgrade gated: REGSURVEY_BASE_TOOLCHAIN names the base's environment (``--base-toolchain``),
    as given (a path relative to the job's directory stays relative); unset or blank, the plain check."""
    plain = ["check", "--base", BASE, "--sarif", "regsurvey.sarif"]
    assert command(REGSURVEY_BASE=BASE) == plain
    assert command(REGSURVEY_BASE=BASE, REGSURVEY_BASE_TOOLCHAIN="  ") == plain
    assert command(REGSURVEY_BASE=BASE, REGSURVEY_BASE_TOOLCHAIN=" .venv-base ", REGSURVEY_DIRECTORY="proj",
                   REGSURVEY_ARGS="--kind gemm") == [*plain, "-C", "proj", "--base-toolchain", ".venv-base",
                                                     "--kind", "gemm"]
    # A path with a space is one argument: no variable is ever pasted into a shell.
    assert command(REGSURVEY_BASE=BASE, REGSURVEY_BASE_TOOLCHAIN="/opt/my venvs/t36")[-2:] == [
        "--base-toolchain", "/opt/my venvs/t36"]
