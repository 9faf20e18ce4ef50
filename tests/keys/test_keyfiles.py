"""Where a kind body raised: the innermost frame of the project's own files."""

from __future__ import annotations

import dataclasses
import importlib.util
import traceback
from pathlib import Path

import pytest

from regsurvey.keys.keyfiles import where_raised


@dataclasses.dataclass(frozen=True)
class Layout:
    """A library's dataclass that checks its argument (as triton_kernels' layouts do)."""

    axis: int

    def __post_init__(self) -> None:
        assert self.axis in (-1, -2)


def test_code_made_at_run_time_is_not_a_file_of_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's launcher builds a library's dataclass with an argument it refuses. The dataclass's
    ``__init__`` is code made at run time (its file is ``<string>``) and the assertion is the library's,
    outside the project. Run from the project's root, as a worker is, ``<string>`` is not taken for a
    file there: the line named is the launcher's."""
    (tmp_path / "launcher.py").write_text(
        "from tests.keys.test_keyfiles import Layout\n\n\ndef make():\n    return Layout(axis=1)\n")
    spec = importlib.util.spec_from_file_location("launcher", tmp_path / "launcher.py")
    assert spec is not None and spec.loader is not None
    launcher = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(launcher)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AssertionError) as raised:
        launcher.make()
    frames = [f.filename for f in traceback.extract_tb(raised.value.__traceback__)]
    assert frames[-2:] == ["<string>", __file__]  # the dataclass's __init__, then its check
    assert where_raised(raised.value, tmp_path) == "launcher.py:5"
