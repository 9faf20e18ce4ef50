"""Atomic writes (``regsurvey.store.files``): the mode of what they write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_WRITE = """
import os, sys
from pathlib import Path
os.umask(int(sys.argv[1], 8))
from regsurvey.store.files import write_text
write_text(Path(sys.argv[2]), "x")
"""


@pytest.mark.parametrize(("umask", "mode"), [("022", 0o644), ("002", 0o664), ("077", 0o600)])
def test_a_written_file_has_the_mode_open_would_give_it(tmp_path: Path, umask: str, mode: int) -> None:
    """mkstemp makes 0600 files; a store, a shared results directory or a report must be readable by
    whom the user's umask lets read what they create."""
    path = tmp_path / "sub" / "file.json"
    subprocess.run([sys.executable, "-c", _WRITE, umask, str(path)], check=True)
    assert path.read_text() == "x"
    assert path.stat().st_mode & 0o777 == mode
    assert [p.name for p in path.parent.iterdir()] == ["file.json"]  # no temporary file left
