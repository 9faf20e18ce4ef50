"""The newcomer's first look: a throwaway two-commit repository made from the demo suite, diffed.

The first commit is the demo suite as shipped beside the package (``decode_layer/`` and
``keys/decode_layer.py``); the second makes one realistic kernel change, :data:`DEMO_CHANGE`: MLA
decode attention takes one 16-head block per program instead of up to 32 heads. At TP8 (16 heads per
GPU) nothing changes; at TP4 (32 heads) each program holds half the query and accumulator tiles, so
AMD register pressure and spills drop while NVIDIA, which halves its warps with the block, pays with
more registers and spills on the narrow widths. Both commits are surveyed and compared like
``regsurvey diff HEAD~1 HEAD``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..diff.core import compare
from ..model.comparison import Comparison
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..store.store import Store
from .obtain import obtain_survey


class DemoError(Exception):
    """The demo cannot run (suite missing, change no longer applies, git missing); one-line message."""


@dataclass(frozen=True)
class DemoChange:
    """One edit of one file of the demo suite, made by the demo's second commit."""

    path: str  # relative to the suite root
    pattern: str  # a regular expression matching exactly one line (MULTILINE)
    replacement: str
    message: str  # the commit message


DEMO_CHANGE = DemoChange(
    path="decode_layer/attention.py",
    pattern=r"^(?P<indent>[ \t]*)block_h = .*$",
    replacement=r"\g<indent>block_h = 16  # one 16-head block per program: half the q and accumulator tiles",
    message="mla_decode: one 16-head block per program (was up to 32 heads)",
)
# The commits between the suite and DEMO_CHANGE (``regsurvey history HEAD~20..HEAD`` draws them): notes,
# and one tuning of MLA's combine kernel tried and taken back. A string is a line added to NOTES.md.
DEMO_HISTORY: tuple[DemoChange | str, ...] = (
    "notes: what the decode layer is (the public DeepSeek-V3 shapes)",
    "notes: tensor parallel 4 and 8",
    "notes: batch widths 2, 4 and 8",
    "notes: the fp8 e4m3 KV cache",
    "notes: the stop flag",
    DemoChange("decode_layer/attention.py", r"^(?P<indent>[ \t]*)num_warps=4,$", r"\g<indent>num_warps=8,",
               "mla_decode: the split combine with 8 warps"),
    "notes: how the splits are combined",
    "notes: the MoE experts per GPU",
    "notes: the router's top-k",
    "notes: the absorbed projections",
    "notes: the rotary embedding",
    "notes: the KV write",
    DemoChange("decode_layer/attention.py", r"^(?P<indent>[ \t]*)num_warps=8,$", r"\g<indent>num_warps=4,",
               "mla_decode: the split combine back to 4 warps (8 bought nothing)"),
    "notes: paging",
    "notes: masks",
    "notes: targets",
    "notes: what a key is",
    "notes: reading a survey",
    "notes: next, fewer heads per program",
)
DEMO_KINDS = ("mla_decode",)  # the kind the change touches: keeps the demo to a minute or two
DEMO_TARGETS = ("gfx950", "sm90")


def suite_root() -> Path:
    """Where the demo suite lies: the directory above the installed ``regsurvey`` package (a clone
    installed with ``pip install -e .``)."""
    import regsurvey

    return Path(regsurvey.__file__).resolve().parent.parent


def _check_suite(root: Path) -> None:
    missing = [p for p in ("decode_layer/__init__.py", "keys/decode_layer.py") if not (root / p).is_file()]
    if missing:
        raise DemoError(f"the demo suite is not next to the installed regsurvey package ({root} lacks "
                        f"{', '.join(missing)}): run the demo from a clone installed with `pip install -e .`")


def _git(repo: Path, *args: str) -> str:
    # A fixed identity and dates: the demo's commits are the same on every machine.
    env = {**os.environ, "GIT_AUTHOR_NAME": "regsurvey demo", "GIT_AUTHOR_EMAIL": "demo@regsurvey",
           "GIT_COMMITTER_NAME": "regsurvey demo", "GIT_COMMITTER_EMAIL": "demo@regsurvey",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00"}
    try:
        out = subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args], capture_output=True,
                             text=True, env=env, check=False)
    except FileNotFoundError:
        raise DemoError("the demo needs git on PATH") from None
    if out.returncode != 0:
        raise DemoError(f"git {args[0]} failed in the demo repository: {out.stderr.strip()}")
    return out.stdout.strip()


def apply_change(repo: Path, change: DemoChange = DEMO_CHANGE) -> None:
    """Make the demo's kernel change in ``repo``; DemoError when the suite no longer has the line."""
    path = repo / change.path
    text = path.read_text()
    new, count = re.subn(change.pattern, change.replacement, text, flags=re.MULTILINE)
    if count != 1:
        raise DemoError(f"the demo's change no longer applies: {change.path} has {count} lines matching "
                        f"{change.pattern!r} (expected one)")
    path.write_text(new)


def build_demo_repo(dest: Path, source: Path | None = None) -> tuple[str, str]:
    """A repository at ``dest`` of 21 commits: the demo suite, :data:`DEMO_HISTORY`, then
    :data:`DEMO_CHANGE`. Returns the shas of the last two (``HEAD~1``, ``HEAD``)."""
    root = source or suite_root()
    _check_suite(root)
    dest.mkdir(parents=True)
    shutil.copytree(root / "decode_layer", dest / "decode_layer", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "keys").mkdir()
    shutil.copy2(root / "keys" / "decode_layer.py", dest / "keys" / "decode_layer.py")
    (dest / ".gitignore").write_text("__pycache__/\n.regsurvey/\n")
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "decode layer: the demo suite")
    for step in DEMO_HISTORY:
        if isinstance(step, DemoChange):
            apply_change(dest, step)
            _git(dest, "commit", "-q", "-am", step.message)
        else:
            with (dest / "NOTES.md").open("a") as notes:
                notes.write(f"- {step.removeprefix('notes: ')}\n")
            _git(dest, "add", "NOTES.md")
            _git(dest, "commit", "-q", "-m", step)
    base = _git(dest, "rev-parse", "HEAD")
    apply_change(dest, DEMO_CHANGE)
    _git(dest, "commit", "-q", "-am", DEMO_CHANGE.message)
    return base, _git(dest, "rev-parse", "HEAD")


def run_demo(workdir: Path, options: SurveyOptions, progress: Progress | None = None) -> Comparison:
    """Build the demo repository under ``workdir``, survey both commits (stored in its own
    ``.regsurvey/``) and compare them, as ``regsurvey diff HEAD~1 HEAD`` would there."""
    repo = workdir / "decode-layer-demo"
    build_demo_repo(repo)
    store = Store(repo / ".regsurvey")
    progress = progress or Progress()
    before = obtain_survey(repo, "HEAD~1", store, options, progress.numbered(1, 2))
    after = obtain_survey(repo, "HEAD", store, options, progress.numbered(2, 2))
    return compare(before, after)
