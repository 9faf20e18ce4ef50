"""Regenerate the pictures docs/commands.md shows: ``python docs/screenshots.py`` (a clone installed with
``pip install -e '.[test]'``, Debian's chromium at /usr/bin/chromium; a few minutes from a cold Triton cache).

It builds the demo repository (``regsurvey demo --keep`` builds the same), then
- ``docs/history.png``: ``regsurvey history HEAD~20..HEAD --kind mla_decode -t gfx950,sm90``;
- ``docs/diff.png``: ``regsurvey diff HEAD~1 HEAD --kind mla_decode -t gfx950,sm90 --format html``, the
  top of the page (the verdict and the summary; the keys laid out by their axes follow);
each page opened in headless Chromium (tests/output/chromium.py) 1400 px wide and captured.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from regsurvey.revisions.demo import build_demo_repo  # noqa: E402
from tests.output.chromium import Chromium  # noqa: E402

SELECTION = ["--kind", "mla_decode", "-t", "gfx950,sm90", "-q"]


def regsurvey(repo: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "regsurvey", *args, *SELECTION], cwd=repo, check=True)


def shoot(page: Path, picture: Path, width: int, height: int, full: bool) -> None:
    with tempfile.TemporaryDirectory() as profile:
        browser = Chromium(Path(profile))
        try:
            tab = browser.new_page()
            tab.open(page.as_uri(), width=width, height=height)
            errors = tab.errors()
            if errors:
                raise SystemExit(f"{page}: console errors: {errors}")
            tab.screenshot(picture, full_page=full)
        finally:
            browser.close()
    print(f"wrote {picture}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "decode-layer-demo"
        build_demo_repo(repo)
        history, diff = Path(tmp) / "history.html", Path(tmp) / "diff.html"
        regsurvey(repo, "history", "HEAD~20..HEAD", "-o", str(history))
        shoot(history, HERE / "history.png", 1400, 900, full=False)
        regsurvey(repo, "diff", "HEAD~1", "HEAD", "--format", "html", "-o", str(diff))
        shoot(diff, HERE / "diff.png", 1400, 1000, full=False)


if __name__ == "__main__":
    main()
