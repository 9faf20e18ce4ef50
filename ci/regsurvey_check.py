#!/usr/bin/env python3
"""Run ``regsurvey check`` as the CI job's gate, configured by environment variables.

    REGSURVEY_BASE=$BASE_SHA python ci/regsurvey_check.py

What the GitHub Action (``action.yml``) and the GitLab template (``ci/gitlab/regsurvey.gitlab-ci.yml``)
both run. It builds the command line from the variables below (so no input is ever pasted into a shell),
fetches the base commit when a shallow checkout lacks it, writes the Markdown report to a file (and shows
it in the log and, when ``$GITHUB_STEP_SUMMARY`` is set, in the job's summary), and exits with
``regsurvey check``'s own status: 0 passed, 1 failed, 2 could not judge. When regsurvey could not judge
the change (status 2, or it did not start), the report says why, in words the pull-request comment can
carry.

What the merge request's code can reach: ``regsurvey check`` runs with the environment's secret
variables removed (``secret_vars.py``: names with a word ``TOKEN``, ``SECRET``, ``PASSWORD``, ``KEY``
..., ``ACTIONS_*``, ``CI_REPOSITORY_URL``, and those ``REGSURVEY_SECRET_VARS`` names), and what it says
leaves scrubbed: the report, the SARIF, the job summary and the log have each secret's value replaced by
``[secret NAME]``, also where the project's code found one outside its environment (a parent process's).
A revision starting with ``-`` is refused (git would read it as an option), and git is given revisions
after ``--end-of-options``. The check refuses to run on GitHub's ``pull_request_target`` and
``workflow_run`` events, whose jobs hold the base repository's write token and secrets.

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
    REGSURVEY_BASE_TOOLCHAIN  another Python environment (a venv's directory or its interpreter) to survey
                         the base with: ``--base-toolchain``, a Triton upgrade gated (the base on the Triton it
                         pins, the head on this environment's); empty: both with this environment's

A pull request that changes the Triton pin is gated across the two toolchains by building the base's
environment from the base commit's pin file in an earlier step and naming it in REGSURVEY_BASE_TOOLCHAIN
(docs/ci.md, "Gating a Triton upgrade in CI"). The check's job then runs the request's code and the base
environment's packages, and holds no write token, as always.
"""

from __future__ import annotations

import json
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

from secret_vars import Scrubber, load_beside, without_secrets

EXIT_ERROR = 2
# GitHub events whose jobs hold the base repository's write token and secrets: the pull request's code
# (which a survey imports) must not run in them. Run the check on pull_request instead.
PRIVILEGED_EVENTS = ("pull_request_target", "workflow_run")


def _get(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def _split(value: str) -> list[str]:
    return [part for part in re.split(r"[,\s]+", value) if part]


def revision(env: Mapping[str, str], name: str) -> str:
    """The revision in variable ``name`` (may be empty); ValueError for one git would misread: an option
    (``--upload-pack=...``), or with spaces or control characters."""
    value = _get(env, name)
    if value.startswith("-"):
        raise ValueError(f"{name} {value!r} is not a revision: it starts with '-' (git would read it as an option)")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError(f"{name} {value!r} is not a revision: it holds a space or a control character")
    return value


def refuse_privileged_event(env: Mapping[str, str]) -> None:
    """ValueError on a GitHub event whose job holds write tokens and secrets (``PRIVILEGED_EVENTS``)."""
    event = _get(env, "GITHUB_EVENT_NAME")
    if event in PRIVILEGED_EVENTS:
        raise ValueError(f"refusing to run on {event}: its job holds the base repository's write token and "
                         "secrets, and the check runs the pull request's code; run it on pull_request "
                         "(docs/ci.md, \"CI: GitHub Actions and GitLab\")")


def command(env: Mapping[str, str]) -> list[str]:
    """``python -m regsurvey check ...`` from the variables; ValueError for a missing or unsafe base, an
    unsafe head, or a privileged event."""
    refuse_privileged_event(env)
    base = revision(env, "REGSURVEY_BASE")
    head = revision(env, "REGSURVEY_HEAD")
    if not base or set(base) == {"0"}:  # a push that created its branch has an all-zero "before"
        raise ValueError("REGSURVEY_BASE is not set: the revision to judge the change against "
                         "(the action's base input; GitLab: CI_MERGE_REQUEST_DIFF_BASE_SHA)")
    args = [_get(env, "REGSURVEY_PYTHON") or sys.executable, "-m", "regsurvey", "check", "--base", base,
            "--sarif", sarif_path(env)]  # not --quiet: its progress lines keep the job's log alive
    if head:
        args += ["--head", head]
    targets = _split(_get(env, "REGSURVEY_TARGETS"))
    if targets:
        args += ["--target", ",".join(targets)]
    for name, option in (("REGSURVEY_KINDS", "--kind"), ("REGSURVEY_KEYS", "--key")):
        for glob in _split(_get(env, name)):
            args += [option, glob]
    for name, option in (("REGSURVEY_BASELINE", "--baseline"), ("REGSURVEY_STORE", "--store"),
                         ("REGSURVEY_JOBS", "--jobs"), ("REGSURVEY_DIRECTORY", "-C"),
                         ("REGSURVEY_BASE_TOOLCHAIN", "--base-toolchain")):
        if _get(env, name):
            args += [option, _get(env, name)]
    return args + shlex.split(_get(env, "REGSURVEY_ARGS"))


def sarif_path(env: Mapping[str, str]) -> str:
    return _get(env, "REGSURVEY_SARIF") or "regsurvey.sarif"


def fetch_base(env: Mapping[str, str]) -> None:
    """Fetch the base commit from ``origin`` when the checkout lacks it (a shallow clone); quietly
    nothing when it is there or cannot be fetched (regsurvey then says the revision is unknown). The
    base is a checked revision (:func:`revision`), given after ``--end-of-options``."""
    base = revision(env, "REGSURVEY_BASE")
    where = _get(env, "REGSURVEY_DIRECTORY") or "."
    have = subprocess.run(["git", "-C", where, "cat-file", "-e", "--end-of-options", f"{base}^{{commit}}"],
                          capture_output=True)
    if have.returncode != 0:
        print(f"regsurvey_check: fetching the base {base} from origin", file=sys.stderr)
        subprocess.run(["git", "-C", where, "fetch", "--quiet", "--no-tags", "--depth=1", "--end-of-options",
                        "origin", base], capture_output=True)


# regsurvey's progress lines outside a terminal (regsurvey/output/progress_lines.py, loaded by its path: their
# shapes are made and recognised there): the log shows them; the report of a check that could not judge keeps
# what was said besides them.
is_progress_line = load_beside("output/progress_lines.py", "regsurvey_progress_lines").is_progress_line


def _tee(stream: IO[str], out: IO[str], tail: deque[str], scrub: Scrubber) -> None:
    for line in stream:
        line = scrub.text(line)
        out.write(line)
        out.flush()
        if not is_progress_line(line):
            tail.append(line)


def check_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What ``regsurvey check`` runs with: ``env`` without its secrets, and without the job summary
    (this script writes the scrubbed report there itself)."""
    clean = without_secrets(env)
    clean.pop("GITHUB_STEP_SUMMARY", None)
    return clean


def scrub_sarif(path: Path, scrub: Scrubber) -> None:
    """Replace the secret values in the SARIF file at ``path`` (in every string of its JSON)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    try:
        scrubbed = json.dumps(scrub.json(json.loads(text)), indent=1) + "\n"
    except ValueError:  # not JSON: as text
        scrubbed = scrub.text(text)
    if scrubbed != text:
        path.write_text(scrubbed, encoding="utf-8")


def run_check(args: list[str], env: Mapping[str, str], markdown: Path) -> int:
    """Run the check, its report into ``markdown``, the log and the job summary; its stderr into the log
    as it comes, all scrubbed of ``env``'s secrets. When it cannot judge, the report says why."""
    scrub = Scrubber.of(env)
    tail: deque[str] = deque(maxlen=20)
    try:
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   env=check_environment(env))
    except OSError as exc:
        status, report = EXIT_ERROR, ""
        tail.append(f"cannot run {args[0]}: {exc.strerror or exc}\n")
    else:
        assert process.stdout is not None and process.stderr is not None
        reader = threading.Thread(target=_tee, args=(process.stderr, sys.stderr, tail, scrub), daemon=True)
        reader.start()
        report = scrub.text(process.stdout.read())
        status = process.wait()
        reader.join()
    scrub_sarif(Path(sarif_path(env)), scrub)
    sys.stdout.write(report)
    if not (status in (0, 1) and report.strip()):
        said = "".join(tail).strip() or f"regsurvey check exited with status {status} and said nothing"
        report = (f"### regsurvey check could not judge this change (exit status {status})\n\n"
                  f"```\n{said}\n```\n")
        status = status if status not in (0, 1) else EXIT_ERROR
    markdown.write_text(report, encoding="utf-8")
    summary = _get(env, "GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(report + "\n")
    return status


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
    print("regsurvey_check: " + Scrubber.of(env).text(shlex.join(args)), file=sys.stderr)
    return run_check(args, env, markdown)


if __name__ == "__main__":
    sys.exit(main())
