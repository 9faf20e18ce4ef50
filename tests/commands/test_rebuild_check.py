"""``regsurvey rebuild-check`` in this process: the tiny project's one building key compiled twice from
cold Triton caches (identical: exit 0), and bad input in one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import Tiny
from .runner import NO_KEY_MATCHES, UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke


def test_one_key_builds_the_same_object_twice(tiny: Tiny, tiny_survey: dict[str, Any]) -> None:
    result = invoke("rebuild-check", *tiny.survey_args(), "--kind", "scale", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"label": "working tree", "commit": tiny.sha, "builds": 1,
                                         "deterministic": True, "differences": []}


@pytest.mark.parametrize(("args", "message"), [
    (("--commit", "no-such-rev"), "unknown revision 'no-such-rev' in {repo}"),
    (("--target", "gfx999"), UNKNOWN_TARGET),
    (("--kind", "no_such_kind"), NO_KEY_MATCHES),
])
def test_bad_input_is_one_line(tiny: Tiny, args: tuple[str, ...], message: str) -> None:
    assert_one_line_error(invoke("rebuild-check", *args, *tiny.survey_args()), message.format(repo=tiny.repo))


def test_a_commit_needs_a_git_repository(outside_git: Path) -> None:
    assert_one_line_error(invoke("rebuild-check", "--commit", "HEAD", "-C", outside_git, "-q"),
                          f"--commit needs a git repository, and {outside_git} is not in one")


def test_a_bad_format_is_a_usage_error() -> None:
    assert_usage_error(invoke("rebuild-check", "--format", "markdown"), "Usage: regsurvey rebuild-check [OPTIONS]",
                       "Invalid value for '--format': 'markdown' is not one of 'table', 'json', 'csv'.")
