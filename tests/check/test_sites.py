"""Where a build is located for code scanning: its launch site mapped back into the repository."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from regsurvey.check.sites import Site, build_site, library_frame, repository_path
from regsurvey.diff.core import compare

from ..lint_surveys import fixture_row, lint_survey


def make_repo(root: Path) -> Path:
    (root / "toykernels").mkdir(parents=True)
    (root / "toykernels" / "ops.py").write_text("# kernels\n")
    (root / "keys").mkdir()
    (root / "keys" / "toy.py").write_text('@matrix.kind(axes=["width"])\ndef gemm(width):\n    pass\n'
                                          '@matrix.kind(name="buffers")\ndef other(width):\n    pass\n')
    (root / "keys" / "more.py").write_text("# more keys\n")
    return root


def test_repository_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    assert repository_path(str(repo / "toykernels" / "ops.py"), repo) == "toykernels/ops.py"
    assert repository_path("toykernels/ops.py", repo) == "toykernels/ops.py"
    # A commit's survey ran in a temporary worktree, removed since.
    assert repository_path("/tmp/regsurvey-0123456789-abc/tree/toykernels/ops.py", repo) == "toykernels/ops.py"
    assert repository_path("/usr/lib/python3/site-packages/other.py", repo) is None


def test_build_site_falls_back_to_the_keys_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    row = fixture_row("matmul-gfx950", [])  # kind gemm
    launched = replace(row, where="/tmp/regsurvey-x/tree/toykernels/ops.py:53")
    survey = lint_survey([launched], "a" * 40, "a")
    (compared,) = compare(survey, survey).rows
    assert build_site(compared, repo) == Site("toykernels/ops.py", 53)
    elsewhere = lint_survey([replace(row, where="/nowhere/else.py:3")], "a" * 40, "a")
    (compared,) = compare(elsewhere, elsewhere).rows
    assert build_site(compared, repo) == Site("keys/toy.py")  # defines `def gemm(`
    raised = replace(row, status="error", resources={}, where=None, kernel=None,
                     error="kind body raised at keys/more.py:1: ValueError: no")
    (compared,) = compare(survey, lint_survey([raised], "b" * 40, "b")).rows
    assert build_site(compared, repo) == Site("keys/more.py", 1)
    named = lint_survey([replace(fixture_row("many_buffers-gfx950", []), where=None)], "a" * 40, "a")
    (compared,) = compare(named, named).rows
    assert build_site(compared, repo) == Site("keys/toy.py")  # kind(name="buffers")


def test_a_library_frame_is_named_from_where_the_library_was_imported(tmp_path: Path) -> None:
    """The same frame whether the library lay in a site-packages directory or in another (a PYTHONPATH or
    ``.pth`` directory, here or gone): what code scanning says of one machine's run, it says of another's."""
    for libs in (tmp_path / "venv" / "lib" / "python3.12" / "site-packages", tmp_path / "libs-from"):
        (libs / "outsidelib" / "ops").mkdir(parents=True)
        for name in ("__init__.py", "ops/__init__.py", "ops/fill.py"):
            (libs / "outsidelib" / name).write_text("")
        assert library_frame(f"{libs}/outsidelib/ops/fill.py:12") == "outsidelib/ops/fill.py:12"
    assert library_frame("/home/ci/.venv/lib/python3.12/site-packages/outsidelib/ops/fill.py:12") == \
        "outsidelib/ops/fill.py:12"
    assert library_frame("outsidelib/ops/fill.py:12") == "outsidelib/ops/fill.py:12"  # a new survey's row
    assert library_frame("/tmp/regsurvey-0123456789-abc/tree/toykernels/ops.py") == "toykernels/ops.py"
