"""Print the corpus table of docs/keys.md's "Surveying an installed library" from the surveys the corpus kept.

    REGSURVEY_REALWORLD_OUT=/tmp/corpus python -m pytest -m realworld; python tests/realworld/summary.py /tmp/corpus
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from importlib.metadata import version
from pathlib import Path

DISTRIBUTIONS = {"liger_kernel": "liger-kernel", "fla": "fla-core", "gemlite": "gemlite", "flag_gems": "flag_gems",
                 "conch": "conch-triton-kernels", "triton_kernels": "tokenspeed-triton-kernels",
                 "torchao": "torchao"}


def main(out: Path) -> None:
    """One Markdown row per library surveyed into ``out``."""
    print("| library | version | kinds | keys per target | builds (ok / failing) | compile time | survey wall time |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for path in sorted(out.glob("*.json")):
        survey = json.loads(path.read_text())
        rows = survey["rows"]
        keys = Counter(r["target"] for r in {(r["key"], r["target"]): r for r in rows}.values())
        ok = sum(r["status"] == "ok" for r in rows)
        per_target = ", ".join(f"{t} {n}" for t, n in sorted(keys.items()))
        print(f"| {path.stem} | {version(DISTRIBUTIONS.get(path.stem, path.stem))} | "
              f"{len({r['kind'] for r in rows})} | {per_target} | {ok} / {len(rows) - ok} | "
              f"{survey['timing']['compile_s']:.0f} s | {survey['timing']['wall_s']:.0f} s |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
