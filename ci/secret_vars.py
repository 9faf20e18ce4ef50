#!/usr/bin/env python3
"""regsurvey's rules for secret variables, for the CI scripts; and a command run without them.

    python ci/secret_vars.py -- bash -eo pipefail -c "$REGSURVEY_SETUP"

As a module (``import secret_vars`` from a script beside it): :mod:`regsurvey.secret_vars`, loaded from
this checkout by its path, so that the comment job, which installs nothing, scrubs with the same rules as
the survey. As a script: runs the command after ``--`` with the environment's secret variables removed
(the CI's setup step, which may install the merge request's code), and exits with its status; 2 with one
line when there is no command or it cannot be run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1] / "regsurvey"


def load_beside(path: str, name: str):  # type: ignore[no-untyped-def]
    """The module ``regsurvey/<path>`` of this checkout, loaded by its path as ``name`` (a module that
    imports nothing of regsurvey's: the CI scripts install nothing)."""
    spec = importlib.util.spec_from_file_location(name, _PACKAGE / path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {_PACKAGE / path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


_rules = load_beside("secret_vars.py", "regsurvey_secret_vars")
Scrubber = _rules.Scrubber
is_secret = _rules.is_secret
secret_names = _rules.secret_names
without_secrets = _rules.without_secrets
EXTRA_VARIABLE = _rules.EXTRA_VARIABLE


def main(argv: list[str]) -> int:
    if argv[:1] != ["--"] or len(argv) < 2:
        print("secret_vars: error: usage: secret_vars.py -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    command = argv[1:]
    try:
        os.execvpe(command[0], command, without_secrets(os.environ))
    except OSError as exc:
        print(f"secret_vars: error: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
