"""The demo suite's kernarg lint on every target, as a user runs it (`regsurvey lint --commit HEAD`).

Slow (it surveys gfx942 and sm100 too, and disassembles every NVIDIA object): `pytest -m slow`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_suite_lints_clean_on_every_target(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "regsurvey", "lint", "--commit", "HEAD", "-q", "--format", "json",
                          "--target", "gfx942,gfx950,sm90,sm100", "--store", str(tmp_path / "store"), "-v"],
                         cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
    assert "lint:" in out.stderr  # --verbose reports the lint's own time and share
