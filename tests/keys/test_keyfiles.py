"""Where a kind body raised: the innermost frame of the project's own files; a compact traceback from the
keys file's line down to the raising one."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import traceback
from pathlib import Path

import pytest

from regsurvey.keys.keyfiles import MAX_FRAMES, raised_frames, where_raised


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
    # The compact traceback: the launcher's line, the dataclass's __init__, the library's check.
    frames = raised_frames(raised.value, tmp_path, tmp_path / "launcher.py")
    assert frames[0] == "  launcher.py:5 in make: return Layout(axis=1)"
    assert frames[1].startswith("  <string>:") and " in __init__" in frames[1]
    assert frames[2].startswith(f"  {__file__}:")
    assert frames[2].endswith("in __post_init__: assert self.axis in (-1, -2)")
    assert len(frames) == 3


def test_a_compact_traceback_keeps_both_ends_of_a_long_chain(tmp_path: Path) -> None:
    """A keys file calling into a library ten calls deep (eleven frames): its own line and the next, how many
    frames are left out, then the last ones down to the raising line."""
    (tmp_path / "deep.py").write_text(
        "def down(n):\n    if n == 0:\n        raise ValueError('bottom')\n    return down(n - 1)\n")
    (tmp_path / "keys.py").write_text("import deep\n\n\ndef load():\n    deep.down(9)\n")
    sys.path.insert(0, str(tmp_path))
    try:
        spec = importlib.util.spec_from_file_location("keys_of_test", tmp_path / "keys.py")
        assert spec is not None and spec.loader is not None
        keys = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(keys)
        with pytest.raises(ValueError) as raised:
            keys.load()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("deep", None)
    frames = raised_frames(raised.value, tmp_path, tmp_path / "keys.py")
    assert len(frames) == MAX_FRAMES
    assert frames[:3] == ["  keys.py:5 in load: deep.down(9)", "  deep.py:4 in down: return down(n - 1)",
                          "  ... 6 frames ..."]
    assert frames[3:] == ["  deep.py:4 in down: return down(n - 1)"] * 2 + [
        "  deep.py:3 in down: raise ValueError('bottom')"]
