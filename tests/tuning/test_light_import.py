"""``regsurvey.tuning`` runs inside a project's serving process: importing it imports neither torch nor
Triton nor anything of regsurvey's compile side (checked in a fresh interpreter, whose ``sys.modules`` is
the truth)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "triton", "numpy", "click", "jinja2")
COMPILE_SIDE = ("compile", "engine", "capture", "revisions", "commands", "objects", "store", "analysis", "output",
                "coverage", "lint", "pressure", "repo")


def test_importing_the_helper_imports_nothing_heavy() -> None:
    code = ("import json, sys\n"
            "from regsurvey.tuning import prune_by_survey, PruneTable\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    modules = json.loads(out.stdout)
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []
    ours = {m.split(".")[1] for m in modules if m.startswith("regsurvey.")}
    assert ours & set(COMPILE_SIDE) == set()
    assert "regsurvey.tuning.autotune" in modules and "regsurvey.tuning.select" not in modules
