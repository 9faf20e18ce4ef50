"""Shared fixtures: throwaway git repositories made from the toy project in tests/fixtures/toy, and the
real survey the comparison, report and gate tests start from (tests/layer_survey.py)."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.results import Survey

# Surveys the tests make (in this process and in the CLIs they run) start their own forkserver rather
# than a background worker server that would outlive the test run; tests/engine/test_server.py opts in.
os.environ["REGSURVEY_SERVER"] = "off"
# Stores and caches in tests are signed only where a test sets a key.
os.environ.pop("REGSURVEY_CACHE_KEY", None)
# A Triton cache of the test run's own (unless one is named): Triton keys it without the source's path, and an
# object carries the path it was compiled from in its debug sections, so another run on the machine (a second
# pytest, a survey) compiling the same kernel from its own copy of the toy project would hand this run objects
# of other sha256s halfway through.
if "TRITON_CACHE_DIR" not in os.environ:
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="regsurvey-tests-triton-")
    atexit.register(shutil.rmtree, os.environ["TRITON_CACHE_DIR"], True)

FIXTURES = Path(__file__).parent / "fixtures"
TOY = FIXTURES / "toy"


def privileged_or_skip(why_not: str | None) -> None:
    """Skip a test that needs root (a tmpfs, network namespaces) where ``why_not`` says it cannot run;
    fail instead under ``REGSURVEY_PRIVILEGED_TESTS`` (``.ci/run`` sets it when CI runs as root, so that
    these tests never go unrun unseen)."""
    if why_not is None:
        return
    if os.environ.get("REGSURVEY_PRIVILEGED_TESTS"):
        pytest.fail(f"{why_not}, and REGSURVEY_PRIVILEGED_TESTS is set")
    pytest.skip(why_not)


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a fixed identity; return stdout."""
    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=tests@regsurvey", "-c", "user.name=tests", *args],
        capture_output=True, text=True, check=True)
    return out.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    """Commit everything in ``repo``; return the new sha."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def reseal(path: Path) -> None:
    """Recompute the sha256 in a stored survey's seal (``<name>.sha256`` beside it), as anyone who can write
    the store can; what it answers, and any signature, left as they are. What a test damaging a survey
    does to reach the survey's own checks."""
    seal = path.with_name(path.name + ".sha256")
    data = json.loads(seal.read_text())
    data["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    seal.write_text(json.dumps(data))


@contextlib.contextmanager
def own_server_environ() -> Iterator[dict[str, str]]:
    """An environment whose surveys use a worker server of its own (in a socket directory of its own,
    stopped at the end), and never start one unless asked to."""
    import tempfile

    directory = tempfile.mkdtemp(prefix="rs-", dir="/tmp")  # short: a Unix socket's path is under ~100 bytes
    environ = {**os.environ, "REGSURVEY_SERVER_DIR": directory, "REGSURVEY_SERVER": "use"}
    for name in ("REGSURVEY_WORKER_START", "CI"):
        environ.pop(name, None)
    try:
        yield environ
    finally:
        subprocess.run([sys.executable, "-m", "regsurvey", "server", "stop"], env=environ, capture_output=True,
                       timeout=120)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def server_env() -> Iterator[dict[str, str]]:
    """:func:`own_server_environ` for one test."""
    with own_server_environ() as environ:
        yield environ


@pytest.fixture
def toy_repo(tmp_path: Path) -> Path:
    """A one-commit git repository holding the toy project."""
    repo = tmp_path / "toy"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "toy project")
    return repo


@pytest.fixture(scope="session")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Survey:
    """The toy layer's survey, surveyed once per session."""
    from .layer_survey import layer_survey  # it imports this module

    return layer_survey(tmp_path_factory.mktemp("layer"))[0]


@pytest.fixture(scope="session")
def layer_store(layer: Survey) -> Path:
    """The root of the store holding the layer survey's objects."""
    from .layer_survey import layer_survey

    return layer_survey(Path("unused"))[1]


@pytest.fixture(scope="session")
def layer_readings(layer: Survey, layer_store: Path) -> dict[tuple[str, str], dict[str, int]]:
    """Every figure of every layer row as read without regsurvey (tests/readings.independent_reading), by
    (row id, target): the figures the comparison and report tests expect, whatever the toolchain."""
    from .readings import independent_reading

    by_object: dict[str, dict[str, int]] = {}
    for row in layer.rows:
        assert row.object is not None, row
        if row.object.sha256 not in by_object:
            by_object[row.object.sha256] = independent_reading(layer_store, row.to_dict())
    return {(row.row_id, row.target): by_object[row.object.sha256] for row in layer.rows if row.object}


@pytest.fixture(scope="module")
def ops() -> Iterator[Any]:
    """The toy project's ``toykernels.ops`` module (its kernels), imported from tests/fixtures/toy."""
    sys.path.insert(0, str(TOY))
    try:
        from toykernels import ops as module

        yield module
    finally:
        sys.path.remove(str(TOY))


# Another environment's Python, with a Triton of its own (CI: .ci/compat-triton36's Triton 3.6 venv):
# what the --toolchain and upgrade tests survey with besides this environment.
OTHER_TOOLCHAIN_VAR = "REGSURVEY_OTHER_TOOLCHAIN"


@pytest.fixture(scope="session")
def other_python() -> str:
    """The interpreter ``REGSURVEY_OTHER_TOOLCHAIN`` names; the test skips where it is unset (fails under
    ``REGSURVEY_CORPUS_REQUIRED``, as CI sets it: there the other toolchain is installed first)."""
    python = os.environ.get(OTHER_TOOLCHAIN_VAR, "").strip()
    if not python:
        why = f"{OTHER_TOOLCHAIN_VAR} names no other environment's Python (e.g. a Triton 3.6 venv's bin/python)"
        if os.environ.get("REGSURVEY_CORPUS_REQUIRED"):
            pytest.fail(f"{why}, and REGSURVEY_CORPUS_REQUIRED is set")
        pytest.skip(why)
    return python


# A third environment's Python, with a Triton other than both of the above (e.g. a Triton 3.8 venv): the
# history across three toolchains (tests/commands/test_history_toolchains.py) runs only where it is named.
THIRD_TOOLCHAIN_VAR = "REGSURVEY_THIRD_TOOLCHAIN"


@pytest.fixture(scope="session")
def third_python() -> str:
    """The interpreter ``REGSURVEY_THIRD_TOOLCHAIN`` names; the test skips where it is unset (fails under
    ``REGSURVEY_CORPUS_REQUIRED``, as CI sets it: .ci/run makes a Triton 3.8 venv first)."""
    python = os.environ.get(THIRD_TOOLCHAIN_VAR, "").strip()
    if not python:
        why = f"{THIRD_TOOLCHAIN_VAR} names no third environment's Python (e.g. a Triton 3.8 venv's bin/python)"
        if os.environ.get("REGSURVEY_CORPUS_REQUIRED"):
            pytest.fail(f"{why}, and REGSURVEY_CORPUS_REQUIRED is set")
        pytest.skip(why)
    return python


# Two kinds on one AMD and one NVIDIA target, a key each: four builds, compiled in seconds under any
# toolchain (tests/engine/test_other_toolchain.py, tests/commands/test_upgrade.py).
TWO_TOOLCHAIN_KEYS = '''"""Four builds: a row scale and a small GEMM on gfx950 and sm90."""

from toykernels import ops

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950", "sm90"], width=[2])


@matrix.kind(axes=["width"])
def scale(width):
    ops.scale(rs.tensor((width, 4096), "bf16"), 0.5)


@matrix.kind(axes=["width"])
def gemm(width):
    ops.gemm(rs.tensor((width, 512), "bf16"), rs.tensor((512, 256), "bf16"))
'''


@pytest.fixture(scope="session")
def upgrade_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A one-commit repository of :data:`TWO_TOOLCHAIN_KEYS` and the store its surveys go to (shared by the
    --toolchain and upgrade tests: a survey one stores, the other reuses)."""
    root = tmp_path_factory.mktemp("upgrade")
    repo = root / "project"
    shutil.copytree(TOY, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "keys" / "toy.py").write_text(TWO_TOOLCHAIN_KEYS)
    git(repo, "init", "-q", "-b", "main")
    commit_all(repo, "two kinds")
    return repo.resolve(), root / "store"


# A target this Triton cannot build for: a record regsurvey does not have (gfx1250's with an arch no LLVM knows),
# which Triton 3.11 is said to build first. What a survey naming it says, in one line.
MADE_UP_TARGET = "gfx9999"


@pytest.fixture
def made_up_target(monkeypatch: pytest.MonkeyPatch) -> str:
    """:data:`MADE_UP_TARGET` among the targets (in this process) for the test; the line that refuses a survey of
    it, as compile.toolchain's probe finds this Triton unable to build for it (for real: a compile of it)."""
    import dataclasses

    import triton

    from regsurvey.compile import triton_facts
    from regsurvey.model import targets

    record = dataclasses.replace(targets.TARGETS["gfx1250"], name=MADE_UP_TARGET, arch=MADE_UP_TARGET)
    monkeypatch.setitem(targets.TARGETS, MADE_UP_TARGET, record)
    monkeypatch.setitem(triton_facts.FIRST_BUILDING_RELEASE, MADE_UP_TARGET, (3, 11))
    return (f"target {MADE_UP_TARGET}: Triton {triton.__version__} cannot build for it (its AMD backend does not "
            f"know {MADE_UP_TARGET}); Triton 3.11 or newer can")


# A ptxas that is none: says it is CUDA {release}'s, refuses the --gpu-name values {refuses} names as ptxas does,
# and otherwise writes an empty cubin. What the probe of what a Triton builds is given to find an older ptxas.
STAND_IN_PTXAS = """#!/bin/sh
case "$*" in *--version*) echo "Cuda compilation tools, release {release}, V{release}.0"; exit 0;; esac
for arg in "$@"; do case "$arg" in --gpu-name=*) name="${{arg#--gpu-name=}}";; esac; done
case " {refuses} " in *" $name "*) echo "ptxas fatal   : Value '$name' is not defined for option 'gpu-name'" >&2
    exit 255;; esac
while [ $# -gt 0 ]; do if [ "$1" = -o ]; then : > "$2"; fi; shift; done
"""
# The variables naming the ptxas Triton runs (below sm_90 and from it on; Triton 3.6 to 3.9 alike).
PTXAS_VARIABLES = ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH")


def write_stand_in_ptxas(where: Path, release: str, refuses: tuple[str, ...] = ()) -> Path:
    """:data:`STAND_IN_PTXAS` of CUDA ``release``, refusing ``refuses`` (``sm_103a`` ...), at ``where``."""
    where.write_text(STAND_IN_PTXAS.format(release=release, refuses=" ".join(refuses)))
    where.chmod(0o755)
    return where
