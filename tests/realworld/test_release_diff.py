"""``regsurvey diff`` and ``bisect`` over releases of a library nobody here wrote: conch 1.1.0 to 1.3.

The wheels (``pip download``; the test skips where the package index cannot be reached) are unpacked
into a git repository, one commit and tag each, with ``tests/realworld/conch/keys`` beside them; the keys
then import the package of the revision surveyed. Along these releases conch retuned its mixed-precision
GEMM: up to 1.2.0 it chose tiles by device name (``"H100"``, ``"MI300X"``, else a default), later ones
have one set. What each release's ``_get_tuning_parameters`` returns on each target is read here
independently (the release's own function called under the target's stand-in device, one process per
release and target), and:

- the diff of 1.2.0 and 1.3 reports, as the GEMM rows' build changes, exactly those differences, and
  every row carries the figures of the two surveys;
- ``bisect`` of the GEMM's registers on sm90 from 1.1.0 names the first release whose tuning there
  differs from 1.1.0's.

Run with ``python -m pytest -m realworld tests/realworld/test_release_diff.py`` (about two minutes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.realworld]

HERE = Path(__file__).parent
RELEASES = ("1.1.0", "1.2.0", "1.2.1", "1.3")
TARGETS = ("gfx942", "sm90")
GEMM_KIND = "w4a16_down"
_TARGET_ARGS = tuple(a for t in TARGETS for a in ("-t", t))

# A release's tuning on a target, with Triton's own defaults for the launch options it leaves out
# (1.2.0's default tiles name no num_warps or num_stages).
_TUNING = """
import json, sys
from triton.backends.amd.compiler import HIPOptions
from triton.backends.nvidia.compiler import CUDAOptions
from regsurvey.compile.toolchain import device_as
from regsurvey.model.targets import get_target
target = get_target(sys.argv[1])
options = HIPOptions if target.is_amd else CUDAOptions
with device_as(target):
    from conch.kernels.quantization.gemm import _get_tuning_parameters
    tuned = _get_tuning_parameters()
print(json.dumps({"num_warps": options.num_warps, "num_stages": options.num_stages} | tuned))
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True,
                   capture_output=True)


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose tags ``v<release>`` hold those releases of conch and the keys, oldest first."""
    work = tmp_path_factory.mktemp("conch-releases")
    wheels = work / "wheels"
    for version in RELEASES:
        got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels),
                              f"conch-triton-kernels=={version}"], capture_output=True, text=True)
        if got.returncode != 0:
            pytest.skip(f"cannot download conch-triton-kernels {version}: {got.stderr.strip()[-300:]}")
    repo = work / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copytree(HERE / "conch" / "keys", repo / "keys", ignore=shutil.ignore_patterns("__pycache__"))
    for version in RELEASES:
        shutil.rmtree(repo / "conch", ignore_errors=True)
        (wheel,) = wheels.glob(f"conch_triton_kernels-{version}-*.whl")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(repo, [n for n in z.namelist() if n.startswith("conch/")])
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"conch {version}")
        _git(repo, "tag", f"v{version}")
    return repo


def _tuning(repo: Path, version: str, target: str, scratch: Path) -> dict[str, int]:
    """What release ``version``'s ``_get_tuning_parameters`` returns on ``target`` (Triton's defaults for
    the launch options it does not set)."""
    tree = scratch / f"conch-{version}"
    if not tree.exists():
        _git(repo, "worktree", "add", "-q", "--detach", str(tree), f"v{version}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _TUNING, target], cwd=tree, env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _regsurvey(repo: Path, *args: str) -> Any:
    """``regsurvey ARGS -q --format json`` in ``repo`` (workers of its own, no server): the JSON it prints."""
    out = subprocess.run([sys.executable, "-m", "regsurvey", *args, "-q", "--format", "json"], cwd=repo,
                         capture_output=True, text=True, timeout=1800, env={**os.environ, "REGSURVEY_SERVER": "off"})
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def _diff(repo: Path, store: Path) -> dict[str, Any]:
    return _regsurvey(repo, "diff", "v1.2.0", "v1.3", "--store", str(store), *_TARGET_ARGS)


def test_the_diff_names_the_releases_own_retuning(releases: Path, tmp_path: Path) -> None:
    diff = _diff(releases, tmp_path / "store")
    gemm_rows = [r for r in diff["rows"] if r["kind"] == GEMM_KIND]
    assert {r["target"] for r in gemm_rows} == set(TARGETS)
    for target in TARGETS:
        before, after = (_tuning(releases, v, target, tmp_path) for v in ("1.2.0", "1.3"))
        expected = {name: (before[name], after[name]) for name in before if before[name] != after[name]}
        assert expected, f"the releases tune {GEMM_KIND} alike on {target}: nothing to check"
        for row in (r for r in gemm_rows if r["target"] == target):
            reported = {c["name"]: (c["before"], c["after"]) for c in row["build_changes"]}
            # The launcher passes the M tile on as the activation scales' block too.
            m_tile = expected.get("cxpr_block_size_m")
            derived = {"cxpr_block_size_scale_a": m_tile} if m_tile else {}
            assert reported == expected | derived, f"{row['key']} {target}"


def test_every_row_reports_the_two_surveys_figures(releases: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    diff = _diff(releases, store)
    surveys = {}
    for side in ("base", "head"):
        survey = _regsurvey(releases, "run", "--commit", diff[side]["commit"], "--store", str(store), *_TARGET_ARGS)
        surveys[side] = {(r["key"], r["target"], r["launch"]): r for r in survey["rows"]}
    assert len(diff["rows"]) == len(surveys["head"])
    for row in diff["rows"]:
        ident = (row["key"], row["target"], row["launch"])
        for side in ("base", "head"):
            figures = {name: pair[0 if side == "base" else 1] for name, pair in _figure_pairs(row).items()}
            surveyed = surveys[side][ident]["resources"]
            assert figures == {name: surveyed.get(name) for name in figures}, f"{ident} {side}"


def test_bisect_finds_the_release_that_retuned_the_gemm(releases: Path, tmp_path: Path) -> None:
    tunings = [_tuning(releases, v, "sm90", tmp_path) for v in RELEASES]
    expected = next(v for v, tuning in zip(RELEASES, tunings) if tuning != tunings[0])
    found = _regsurvey(releases, "bisect", f"v{RELEASES[0]}", f"v{RELEASES[-1]}", "--key", f"{GEMM_KIND}/*",
                       "--figure", "regs", "-t", "sm90", "--store", str(tmp_path / "store"))
    assert found["subject"] == f"conch {expected}"


def _figure_pairs(row: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Each figure of a diff row as (before, after)."""
    return {figure["name"]: (figure["before"], figure["after"]) for figure in row["figures"]}
