"""What a survey through Ray costs over the local pool: the same keys, the same number of workers, one node.

    python benchmarks/ray_overhead.py [REPO] [--jobs N] [--rounds R]

REPO defaults to a copy of the toy project (tests/fixtures/toy). Each round surveys the working tree twice
into fresh stores, compiling every key (no results reused; Triton's own cache stays warm, so compiles are
short and the overhead shows): once with the local pool (``-j N``), once on a Ray instance of N CPUs
started here (its start is not counted; the actors' imports are, as the local workers' are). Prints the
wall times, their difference per build, and the overhead per build the Ray survey measured itself
(``ray_overhead_per_build_ms``: the time a call took, seen from the survey, less the time the actor spent
on it). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def toy_repo(where: Path) -> Path:
    repo = where / "toy"
    shutil.copytree(Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "toy", repo,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.email=b@regsurvey", "-c", "user.name=bench", "commit", "-q", "-m", "toy"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    return repo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", type=Path)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("REGSURVEY_SERVER", "off")

    import ray

    from regsurvey.engine.survey import survey_checkout
    from regsurvey.model.options import SurveyOptions
    from regsurvey.repo.checkout import working_tree

    with tempfile.TemporaryDirectory(prefix="regsurvey-bench-") as tmp:
        repo = args.repo or toy_repo(Path(tmp))
        checkout = working_tree(repo)
        ray.init(num_cpus=args.jobs, log_to_driver=False, logging_level="ERROR")
        try:
            for i in range(args.rounds):
                walls, lists, started = {}, {}, {}
                builds = 0
                overhead = float("nan")
                for name, address in (("local", None), ("ray", "local")):
                    options = SurveyOptions(jobs=args.jobs, reuse_results=False, ray_address=address)
                    survey = survey_checkout(checkout, Path(tmp) / f"{name}{i}" / "objects", options)
                    walls[name] = survey.timing["wall_s"]
                    lists[name] = survey.timing["list_s"]
                    started[name] = int(survey.timing["workers_started"])
                    builds = len(survey.rows)
                    if address:
                        overhead = survey.timing.get("ray_overhead_per_build_ms", float("nan"))
                per_build = 1000 * (walls["ray"] - walls["local"]) / max(1, builds)
                print(f"round {i + 1}: {builds} builds on {args.jobs} workers: local pool {walls['local']:.2f} s, "
                      f"Ray (one node) {walls['ray']:.2f} s: {per_build:+.0f} ms per build of wall time; "
                      f"overhead per build measured by the Ray survey {overhead:.1f} ms\n"
                      f"    (keys listed after: local {lists['local']:.2f} s, Ray {lists['ray']:.2f} s; "
                      f"workers started, "
                      f"each importing the project: local {started['local']}, Ray {started['ray']})")
        finally:
            ray.shutdown()


if __name__ == "__main__":
    main()
