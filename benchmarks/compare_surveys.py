"""Two sets of survey JSON files compared row by row: the same builds, figures, objects and findings?

For a change of regsurvey's own code checked on projects nobody here wrote: survey the real-world corpus
before and after (``REGSURVEY_REALWORLD_OUT=DIR python -m pytest -m realworld tests/realworld`` writes one
``<library>.json`` per library into DIR), then

    python benchmarks/compare_surveys.py OLD_DIR NEW_DIR

prints, per file, how many rows were compared and every difference, grouped as
``benchmarks/before_after.py`` groups them (rows, identity, figures, lint null vs [], lint).
A benchmark's companion, not a test: it asserts nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from before_after import classified_differences  # noqa: E402


def main() -> int:
    old_dir, new_dir = (Path(a) for a in sys.argv[1:3])
    total = 0
    for old_file in sorted(old_dir.glob("*.json")):
        new_file = new_dir / old_file.name
        if not new_file.is_file():
            print(f"{old_file.name}: not in {new_dir}")
            continue
        old, new = json.loads(old_file.read_text()), json.loads(new_file.read_text())
        groups = classified_differences(old, new)
        counts = ", ".join(f"{name} {len(lines)}" for name, lines in groups.items())
        print(f"{old_file.name}: {len(old['rows'])} rows old, {len(new['rows'])} new; differences: {counts}")
        for name, lines in groups.items():
            for line in lines:
                print(f"  [{name}] {line}")
        total += sum(len(lines) for name, lines in groups.items() if name != "lint null vs []")
    print(f"differences other than builds linted now and not before: {total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
