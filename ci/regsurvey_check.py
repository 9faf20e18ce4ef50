#!/usr/bin/env python3
"""Run ``regsurvey check`` as the CI job's gate, configured by environment variables.

    REGSURVEY_BASE=$BASE_SHA python ci/regsurvey_check.py

What the GitHub Action (``action.yml``) and the GitLab template (``ci/gitlab/regsurvey.gitlab-ci.yml``)
both run. It builds the command line from the variables below (so no input is ever pasted into a shell),
fetches the base commit when a shallow checkout lacks it, writes the Markdown report to a file (and shows
it in the log), and exits with ``regsurvey check``'s own status: 0 passed, 1 failed, 2 could not judge.
When regsurvey could not judge the change (status 2, or it did not start), the report file says why, in
words the pull-request comment can carry, and is appended to ``$GITHUB_STEP_SUMMARY`` when set
(``regsurvey check`` appends its own report there otherwise).

Variables (empty means unset):
    REGSURVEY_BASE       the base revision (required), e.g. the pull request's base sha
    REGSURVEY_HEAD       the revision judged (default: the working tree, i.e. the checked-out commit)
    REGSURVEY_TARGETS    targets, comma or space separated (default: the keys' matrices)
    REGSURVEY_KINDS      kind globs, comma or space separated
    REGSURVEY_KEYS       key globs, comma or space separated
    REGSURVEY_BASELINE   the baseline file (default: regsurvey.baseline.toml at the repository root)
    REGSURVEY_STORE      the store, cached between runs (default: .regsurvey at the repository root)
    REGSURVEY_DIRECTORY  the repository to judge (default: the current directory)
    REGSURVEY_JOBS       worker processes (default: the usable cores)
    REGSURVEY_SARIF      the SARIF file written (default: regsurvey.sarif)
    REGSURVEY_MARKDOWN   the Markdown report written (default: regsurvey.md)
    REGSURVEY_ARGS       further arguments to ``regsurvey check``, split as a shell would
    REGSURVEY_PYTHON     the interpreter that has regsurvey installed (default: this one)
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import IO

EXIT_ERROR = 2


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _split(value: str) -> list[str]:
    return [part for part in re.split(r"[,\s]+", value) if part]


def command(env: Mapping[str, str]) -> list[str]:
    """``python -m regsurvey check ...`` from the variables; ValueError for a missing base."""
    base = _get(env, "REGSURVEY_BASE")
    if not base or set(base) == {"0"}:  # a push that created its branch has an all-zero "before"
        raise ValueError("REGSURVEY_BASE is not set: the revision to judge the change against "
                         "(the action's base input; GitLab: CI_MERGE_REQUEST_DIFF_BASE_SHA)")
    args = [_get(env, "REGSURVEY_PYTHON") or sys.executable, "-m", "regsurvey", "check", "--base", base,
            "--sarif", _get(env, "REGSURVEY_SARIF") or "regsurvey.sarif", "--quiet"]
    if _get(env, "REGSURVEY_HEAD"):
        args += ["--head", _get(env, "REGSURVEY_HEAD")]
    targets = _split(_get(env, "REGSURVEY_TARGETS"))
    if targets:
        args += ["--target", ",".join(targets)]
    for name, option in (("REGSURVEY_KINDS", "--kind"), ("REGSURVEY_KEYS", "--key")):
        for glob in _split(_get(env, name)):
            args += [option, glob]
    for name, option in (("REGSURVEY_BASELINE", "--baseline"), ("REGSURVEY_STORE", "--store"),
                         ("REGSURVEY_JOBS", "--jobs"), ("REGSURVEY_DIRECTORY", "-C")):
        if _get(env, name):
            args += [option, _get(env, name)]
    return args + shlex.split(_get(env, "REGSURVEY_ARGS"))


def fetch_base(env: Mapping[str, str]) -> None:
    """Fetch the base commit from ``origin`` when the checkout lacks it (a shallow clone); quietly
    nothing when it is there or cannot be fetched (regsurvey then says the revision is unknown)."""
    base = _get(env, "REGSURVEY_BASE")
    where = _get(env, "REGSURVEY_DIRECTORY") or "."
    have = subprocess.run(["git", "-C", where, "cat-file", "-e", f"{base}^{{commit}}"], capture_output=True)
    if have.returncode != 0:
        print(f"regsurvey_check: fetching the base {base} from origin", file=sys.stderr)
        subprocess.run(["git", "-C", where, "fetch", "--quiet", "--no-tags", "--depth=1", "origin", base],
                       capture_output=True)


def _tee(stream: IO[str], out: IO[str], tail: deque[str]) -> None:
    for line in stream:
        out.write(line)
        out.flush()
        tail.append(line)


def run_check(args: list[str], env: Mapping[str, str], markdown: Path) -> int:
    """Run the check, its report into ``markdown`` and the log; its stderr into the log as it comes. When
    it cannot judge, the report says why."""
    tail: deque[str] = deque(maxlen=20)
    try:
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=dict(env))
    except OSError as exc:
        status, report = EXIT_ERROR, ""
        tail.append(f"cannot run {args[0]}: {exc.strerror or exc}\n")
    else:
        assert process.stdout is not None and process.stderr is not None
        reader = threading.Thread(target=_tee, args=(process.stderr, sys.stderr, tail), daemon=True)
        reader.start()
        report = process.stdout.read()
        status = process.wait()
        reader.join()
    sys.stdout.write(report)
    if status in (0, 1) and report.strip():
        markdown.write_text(report, encoding="utf-8")
        return status
    said = "".join(tail).strip() or f"regsurvey check exited with status {status} and said nothing"
    report = (f"### regsurvey check could not judge this change (exit status {status})\n\n"
              f"```\n{said}\n```\n")
    markdown.write_text(report, encoding="utf-8")
    summary = _get(env, "GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(report + "\n")
    return status if status not in (0, 1) else EXIT_ERROR


def main(env: Mapping[str, str] | None = None) -> int:
    env = dict(os.environ if env is None else env)
    markdown = Path(_get(env, "REGSURVEY_MARKDOWN") or "regsurvey.md")
    try:
        args = command(env)
    except ValueError as exc:
        print(f"regsurvey_check: error: {exc}", file=sys.stderr)
        markdown.write_text(f"### regsurvey check could not run\n\n{exc}\n", encoding="utf-8")
        return EXIT_ERROR
    fetch_base(env)
    print("regsurvey_check: " + shlex.join(args), file=sys.stderr)
    return run_check(args, env, markdown)


if __name__ == "__main__":
    sys.exit(main())
