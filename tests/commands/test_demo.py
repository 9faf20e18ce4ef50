"""``regsurvey demo`` in this process: bad input in one line (exit 2), and the throwaway repository gone
afterwards, --keep or not. (A whole demo surveys a kind of the decode layer twice: tests/demo/test_demo.py.)"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from regsurvey.revisions.demo import DEMO_CHANGE

from .runner import NO_KEY_MATCHES, UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the demo makes its throwaway repository (Python's temporary directory, here)."""
    directory = tmp_path / "scratch"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def throwaways(scratch: Path) -> list[Path]:
    """The demo's throwaway repositories there (multiprocessing keeps a folder of its own beside them)."""
    return sorted(scratch.glob("regsurvey-demo-*"))


def test_an_unknown_target_is_one_line(scratch: Path, tmp_path: Path) -> None:
    report = tmp_path / "demo.html"
    assert_one_line_error(invoke("demo", "-q", "-t", "sm90,gfx999", "-o", report), UNKNOWN_TARGET)
    assert not report.exists() and throwaways(scratch) == []


@pytest.mark.parametrize("keep", [False, True])
def test_a_selection_of_no_key_is_one_line_and_leaves_nothing(scratch: Path, tmp_path: Path, keep: bool) -> None:
    report = tmp_path / "demo.html"
    result = invoke("demo", "-q", "-t", "sm90", "--kind", "no_such_kind", "-o", report, *(["--keep"] if keep else []))
    assert_one_line_error(result, NO_KEY_MATCHES, before=(
        f'demo: the decode-layer suite, then "{DEMO_CHANGE.message}"; surveying no_such_kind on sm90 for both '
        "commits\n"))
    # The throwaway repository goes when the demo did not finish, even with --keep.
    assert not report.exists() and throwaways(scratch) == []


@pytest.mark.parametrize(("args", "error"), [
    (("extra",), "Got unexpected extra argument (extra)"),
    (("--timeout", "0.5"), "Invalid value for '--timeout': 0.5 is not in the range x>=1."),
    (("--commit", "HEAD"), "No such option '--commit'."),
])
def test_bad_arguments_are_usage_errors(args: tuple[str, ...], error: str) -> None:
    assert_usage_error(invoke("demo", *args), "Usage: regsurvey demo [OPTIONS]", error)
