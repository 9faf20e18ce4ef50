"""``regsurvey capture -- COMMAND`` in this process: a program's one launch recorded offline into a keys
file (exit 0), a program's own exit status passed on, and bad input in one line (exit 2)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ..conftest import TOY
from .runner import UNKNOWN_TARGET, assert_one_line_error, assert_usage_error, invoke

USAGE = "Usage: regsurvey capture [OPTIONS] COMMAND..."
ONE_LAUNCH = '''
import torch
from toykernels import ops

ops.scale(torch.randn(2, 4096, dtype=torch.bfloat16), 0.5)
'''


def test_a_program_launching_one_kernel_offline(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(TOY / "toykernels", project / "toykernels", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "prog.py").write_text(ONE_LAUNCH)
    keys = project / "keys" / "captured.py"
    result = invoke("capture", "--offline", "sm90", "-o", keys, "--", sys.executable, project / "prog.py")
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == f"captured 1 launch: 1 distinct, 1 kernel → {keys}\n"
    text = keys.read_text()
    assert "TARGETS = ['sm90']" in text and "'kernel': 'toykernels.ops:scale_rows'" in text
    compile(text, str(keys), "exec")  # a Python keys file


def test_the_program_s_exit_status_is_passed_on(tmp_path: Path) -> None:
    keys = tmp_path / "keys" / "captured.py"
    result = invoke("capture", "-o", keys, "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert (result.exit_code, result.stdout) == (3, "")
    assert result.stderr == ("captured no Triton launch; no keys file written\n"
                             "regsurvey: the program exited with status 3\n")
    assert not keys.exists()


@pytest.mark.parametrize("option", ["--target", "--offline"])
def test_an_unknown_target_is_one_line(tmp_path: Path, option: str) -> None:
    keys = tmp_path / "captured.py"
    assert_one_line_error(invoke("capture", option, "gfx999", "-o", keys, "--", sys.executable, "-c", "pass"),
                          UNKNOWN_TARGET)
    assert not keys.exists()


def test_a_program_that_does_not_exist_is_one_line(tmp_path: Path) -> None:
    keys = tmp_path / "captured.py"
    assert_one_line_error(invoke("capture", "-o", keys, "--", "no-such-program-regsurvey"),
                          "cannot run 'no-such-program-regsurvey': no such program")
    assert not keys.exists()


def test_a_program_is_required() -> None:
    assert_usage_error(invoke("capture"), USAGE, "Missing argument 'COMMAND...'.")
    assert_usage_error(invoke("capture", "-o", "keys.py"), USAGE, "Missing argument 'COMMAND...'.")
