"""Launches made by a library installed outside the surveyed repository, and a build that fails in several
keys (gfx950, real compiles; the library's kernel fails Triton's front end, so nothing reaches LLVM):

- the row records the library's frame (``where``, named from the directory the library was imported from,
  as every report names a source file) and the project's call into it (``project_where``), and code
  scanning locates a problem at that call, the kind body's line, naming the library's frame;
- every row of one failed build carries its Triton hash, the key that compiled it and those that took its
  recorded failure alike.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from regsurvey.check.baseline import Baseline
from regsurvey.check.gate import NEWLY_FAILING, judge
from regsurvey.check.sites import Site, build_site
from regsurvey.diff.core import compare
from regsurvey.engine.worker import Worker
from regsurvey.keys.keyfiles import expand_keys
from regsurvey.model.results import Row, Survey
from regsurvey.output.gate_text import problem_message
from regsurvey.output.sarif import sarif_log

# An installed package: under a site-packages directory outside the repository.
LIBRARY = '''"""A library's launcher (installed, not the project's)."""

import triton
import triton.language as tl


@triton.jit
def lib_never_builds(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK < 0, "BLOCK must be negative")
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def fill(x):
    lib_never_builds[(x.shape[0],)](x, BLOCK=64)
'''

KEYS = '''"""Keys calling the installed library; the row count only sizes the grid: one build for every key."""

import outsidelib

import regsurvey as rs

matrix = rs.Matrix(targets=["gfx950"], width=[1, 2, 3], labels={"width": "w"})


@matrix.kind(axes=["width"])
def filled(width):
    x = rs.tensor((width, 64), "fp32")
    outsidelib.fill(x)
'''

AMD = "gfx950"


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, list[Row]]]:
    """The repository, the library's file, and the rows of the three keys (one worker, in this process)."""
    top = tmp_path_factory.mktemp("library")
    site = top / "venv" / "lib" / "python3" / "site-packages"
    (site / "outsidelib").mkdir(parents=True)
    library = site / "outsidelib" / "__init__.py"
    library.write_text(LIBRARY)
    repo = top / "repo"
    (repo / "keys").mkdir(parents=True)
    (repo / "keys" / "lib.py").write_text(KEYS)
    sys.path.insert(0, str(site))
    try:
        worker = Worker(repo, repo / "keys", top / "store" / "objects", AMD)
        keys = expand_keys(list(worker.kinds().values()), [AMD])
        yield repo, library, [row for key in keys for row in worker.survey_key(key)]
    finally:
        sys.path.remove(str(site))


def line_of(path: Path, text: str) -> int:
    (number,) = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    return number


def test_every_row_of_a_failed_build_carries_its_hash(surveyed: tuple[Path, Path, list[Row]]) -> None:
    """The first key compiled the build and failed; the other two took its recorded failure without
    compiling. All three are the same build: the same Triton hash."""
    _, _, rows = surveyed
    assert [(r.key, r.status.value) for r in rows] == [("filled/w1", "error"), ("filled/w2", "error"),
                                                       ("filled/w3", "error")]
    assert all("BLOCK must be negative" in (r.error or "") for r in rows)
    assert [bool(r.compile_s) for r in rows] == [True, False, False]  # one compile
    hashes = {r.triton_hash for r in rows}
    assert len(hashes) == 1 and None not in hashes and len(hashes.pop() or "") == 64


def test_a_launch_in_a_library_is_located_at_the_kind_bodys_call(surveyed: tuple[Path, Path, list[Row]]) -> None:
    repo, library, rows = surveyed
    launch, call = line_of(library, "lib_never_builds[("), line_of(repo / "keys" / "lib.py", "outsidelib.fill(x)")
    first = rows[0]
    assert (first.where, first.project_where) == (f"outsidelib/__init__.py:{launch}", f"keys/lib.py:{call}")
    assert Survey.from_json(Survey(commit=None, label="x", targets=(AMD,), toolchain={},
                                   rows=tuple(rows)).to_json()).rows == tuple(rows)
    # The check: new builds that fail, each located at the kind body's line, the library's frame said.
    head = Survey(commit="b" * 40, label="head", targets=(AMD,), toolchain={}, rows=tuple(rows))
    base = Survey(commit="a" * 40, label="base", targets=(AMD,), toolchain={}, rows=())
    result = judge(compare(base, head), Baseline())
    assert [p.rule for p in result.problems] == [NEWLY_FAILING] * 3
    sites = {p.row.ref: build_site(p.row, repo) for p in result.problems}
    results = sarif_log(result, sites)["runs"][0]["results"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "keys/lib.py"}, "region": {"startLine": call}}
    below = f"outsidelib/__init__.py:{launch}"  # the path below site-packages
    assert set(sites.values()) == {Site("keys/lib.py", call, below)}
    # A survey made before rows named the library so (its full path): located the same.
    recorded = [replace(p.row, after=replace(p.row.after, where=f"{library}:{launch}")) for p in result.problems]
    assert {build_site(r, repo) for r in recorded} == {Site("keys/lib.py", call, below)}
    said = problem_message(result.problems[0])
    assert said.startswith("filled/w1 on gfx950 (lib_never_builds) is new and fails to build: ")
    assert results[0]["message"]["text"] == f"{said}; launched in the library at {below}"
    assert results[0]["properties"]["launched_in"] == below
