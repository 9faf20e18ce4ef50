"""Source texts for a kept pressure's paths (repo.sources): read from the repository at the surveyed
revision, or from an installed package, and from nowhere else, whatever path the store names (issue 31: a
planted ``<sha>.pressure.gz`` naming any file made ``explain`` and ``diff`` embed that file's lines)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from regsurvey.repo.sources import SourcePaths

from ..conftest import commit_all, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one kernel file, a tracked link to a file outside it, and a secret beside it."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "kern.py").write_text("def kern():\n    return 1\n")
    (tmp_path / "secret.py").write_text("TOKEN = 'glpat-secret'\n")
    (root / "pkg" / "link.py").symlink_to(tmp_path / "secret.py")
    git(root, "init", "-q", "-b", "main")
    commit_all(root, "kernels")
    return root


def test_the_repositorys_own_files_are_read(repo: Path) -> None:
    for commit in (None, git(repo, "rev-parse", "HEAD")):
        paths = SourcePaths(repo, commit)
        assert paths.read(str(repo / "pkg" / "kern.py")) == ["def kern():", "    return 1"]
        # As a survey of a commit names it: its temporary worktree.
        assert paths.read("/tmp/regsurvey-0123456789-ab/tree/pkg/kern.py") == ["def kern():", "    return 1"]


@pytest.mark.parametrize("named", ["/etc/passwd", "{tmp}/secret.py", "../secret.py", "{repo}/../secret.py",
                                   "{repo}/pkg/../../secret.py", "/proc/self/environ"])
def test_a_path_out_of_the_repository_is_not_read(repo: Path, named: str) -> None:
    path = named.format(tmp=repo.parent, repo=repo)
    for commit in (None, git(repo, "rev-parse", "HEAD")):
        assert SourcePaths(repo, commit).read(path) is None


def test_a_link_out_of_the_working_tree_is_not_followed(repo: Path) -> None:
    """The tracked ``pkg/link.py`` points at the secret: the working tree's file is not read through it
    (a commit's is the link's own text, which git stores)."""
    assert SourcePaths(repo, None).read(str(repo / "pkg" / "link.py")) is None
    at_commit = SourcePaths(repo, git(repo, "rev-parse", "HEAD")).read(str(repo / "pkg" / "link.py"))
    assert at_commit == [str(repo.parent / "secret.py")]


def test_a_fifo_is_not_opened_for_reading(repo: Path) -> None:
    """An untracked (not ignored) FIFO named like a source: reading it would wait for a writer for ever."""
    os.mkfifo(repo / "pkg" / "fifo.py")
    assert SourcePaths(repo, None).read(str(repo / "pkg" / "fifo.py")) is None


def test_an_installed_packages_file_is_read_and_nothing_beside_it(repo: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    (site / "outsidelib").mkdir(parents=True)
    (site / "outsidelib" / "__init__.py").write_text("def fill():\n    pass\n")
    (tmp_path / "venv" / "key.py").write_text("KEY = 1\n")  # in the environment, not a package
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    paths = SourcePaths(repo, None)
    assert paths.read(str(site / "outsidelib" / "__init__.py")) == ["def fill():", "    pass"]
    assert paths.name(str(site / "outsidelib" / "__init__.py")) == "outsidelib/__init__.py"
    assert paths.read(str(tmp_path / "venv" / "key.py")) is None
    assert paths.read(str(site / ".." / ".." / ".." / "key.py")) is None
    assert paths.read("/usr/lib/python3/site-packages/../../../../etc/passwd") is None


def test_outside_a_repository_the_surveyed_directory_is_read(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "kern.py").write_text("x = 1\n")
    (tmp_path / "secret.py").write_text("TOKEN = 1\n")
    paths = SourcePaths(None, None, checkout=plain)
    assert paths.read(str(plain / "kern.py")) == ["x = 1"]
    assert paths.read(str(tmp_path / "secret.py")) is None
    assert SourcePaths(None, None).read(str(plain / "kern.py")) is None
