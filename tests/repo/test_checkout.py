"""Which tree a survey reads (regsurvey.repo.checkout): another commit in a temporary git worktree that
is removed afterwards (also when the body raises, on Ctrl-C and on SIGTERM), or the working tree as it
is, dirty when anything git does not ignore differs from HEAD; revisions git does not know are one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from regsurvey.repo.checkout import (
    Checkout,
    CheckoutError,
    commit_checkout,
    prune_abandoned,
    repo_root,
    resolve_commit,
    working_tree,
)

from ..conftest import commit_all, git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Three commits of one file: ``v = 1``, ``v = 2``, ``v = 3``; the working tree at the third."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "origin.txt").write_text(f"{root}\n")  # shas of this test's own, whatever else runs alongside
    for v in (1, 2, 3):
        (root / "pkg" / "mod.py").write_text(f"v = {v}\n")
        commit_all(root, f"v{v}")
    return root


def worktrees(repo: Path) -> list[str]:
    """The worktrees git knows of besides the main one."""
    lines = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [line.split(" ", 1)[1] for line in lines if line.startswith("worktree ")][1:]


def our_temp_dirs(sha: str) -> list[Path]:
    return sorted(Path(tempfile.gettempdir()).glob(f"regsurvey-{sha[:10]}-*"))


def test_repo_root(repo: Path, tmp_path: Path) -> None:
    assert repo_root(repo) == repo
    assert repo_root(repo / "pkg") == repo
    outside = tmp_path / "plain"
    outside.mkdir()
    assert repo_root(outside) is None


def test_resolve_commit(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    first = git(repo, "rev-parse", "HEAD~2")
    assert resolve_commit(repo, "HEAD") == head
    assert resolve_commit(repo, "main") == head
    assert resolve_commit(repo, "HEAD~2") == first
    assert resolve_commit(repo, first[:8]) == first
    git(repo, "tag", "-a", "-m", "annotated", "v1", first)
    assert git(repo, "rev-parse", "v1") != first  # the tag object ...
    assert resolve_commit(repo, "v1") == first  # ... resolves to its commit
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    with pytest.raises(CheckoutError):
        resolve_commit(repo, tree)  # an object that is not a commit


@pytest.mark.parametrize("rev", ["nosuchbranch", "HEAD~9", "0123456789abcdef", "main..HEAD"])
def test_an_unknown_revision_is_a_one_line_error(repo: Path, rev: str) -> None:
    with pytest.raises(CheckoutError) as raised:
        resolve_commit(repo, rev)
    assert str(raised.value).startswith(f"unknown revision {rev!r}")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(("rev", "problem"), [
    ("--all", "starts with '-': git would read it as an option"),
    ("-h", "starts with '-': git would read it as an option"),
    ("--output=/tmp/x", "starts with '-': git would read it as an option"),
    ("HEAD\n--all", "holds a control character"),
])
def test_a_revision_git_would_misread_is_refused_in_one_line(repo: Path, rev: str, problem: str) -> None:
    with pytest.raises(CheckoutError) as raised:
        resolve_commit(repo, rev)
    assert str(raised.value) == f"revision {rev!r} {problem}"


def test_a_commit_is_checked_out_apart_and_removed_afterwards(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD~2")
    (repo / "pkg" / "mod.py").write_text("v = 'edited'\n")  # uncommitted edits of the user's
    (repo / "new.py").write_text("new = True\n")
    with commit_checkout(repo / "pkg", "HEAD~2") as checkout:
        assert isinstance(checkout, Checkout)
        assert (checkout.commit, checkout.repo, checkout.dirty) == (first, repo, False)
        assert checkout.label == f"HEAD~2 ({first[:10]})"
        assert checkout.root != repo and checkout.root.is_dir()
        assert (checkout.root / "pkg" / "mod.py").read_text() == "v = 1\n"
        assert not (checkout.root / "new.py").exists()
        assert git(checkout.root, "rev-parse", "HEAD") == first
        assert worktrees(repo) == [str(checkout.root)]
        # The user's tree and branch are as they were.
        assert (repo / "pkg" / "mod.py").read_text() == "v = 'edited'\n"
        assert git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"
        root = checkout.root
    assert not root.exists() and not root.parent.exists()
    assert worktrees(repo) == [] and our_temp_dirs(first) == []
    assert (repo / "pkg" / "mod.py").read_text() == "v = 'edited'\n" and (repo / "new.py").exists()


def test_a_sha_is_its_own_label(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    with commit_checkout(repo, head[:12]) as checkout:
        assert checkout.label == head[:12] and checkout.commit == head
    with commit_checkout(repo, "main") as checkout:
        assert checkout.label == f"main ({head[:10]})"


@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_the_worktree_is_removed_when_the_body_raises(repo: Path, error: type[BaseException]) -> None:
    first = git(repo, "rev-parse", "HEAD~2")
    with pytest.raises(error), commit_checkout(repo, "HEAD~2") as checkout:
        root = checkout.root
        raise error("the survey stopped")
    assert not root.parent.exists() and worktrees(repo) == [] and our_temp_dirs(first) == []


def test_sigterm_unwinds_and_removes_the_worktree(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD~2")
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), commit_checkout(repo, "HEAD~2") as checkout:
        root = checkout.root
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)  # the handler raises as soon as the signal is taken
        raise AssertionError("SIGTERM did not interrupt the body")
    assert not root.parent.exists() and worktrees(repo) == [] and our_temp_dirs(first) == []
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is the caller's again


KILLED_MID_CHECKOUT = """
import sys, time
from pathlib import Path
from regsurvey.repo.checkout import commit_checkout
with commit_checkout(Path(sys.argv[1]), "HEAD~2") as checkout:
    print(checkout.root, flush=True)
    time.sleep(600)
"""


def test_the_worktree_of_a_process_killed_outright_is_removed_by_the_next(repo: Path, tmp_path: Path) -> None:
    """kill -9 runs no cleanup: the worktree stays registered until a later checkout (or a survey of the
    working tree) in the repository finds its owner gone. One whose owner runs, and one that names no
    owner (not a survey's), are left alone."""
    first = git(repo, "rev-parse", "HEAD~2")
    killed = subprocess.Popen([sys.executable, "-c", KILLED_MID_CHECKOUT, str(repo)], stdout=subprocess.PIPE,
                              text=True)
    assert killed.stdout is not None
    abandoned = Path(killed.stdout.readline().strip())
    killed.kill()
    killed.wait()
    unowned = Path(tempfile.mkdtemp(prefix=f"regsurvey-{first[:10]}-")) / "tree"
    git(repo, "worktree", "add", "--detach", "--quiet", str(unowned), first)
    try:
        assert sorted(worktrees(repo)) == sorted([str(abandoned), str(unowned)])
        assert working_tree(repo).root == repo  # a survey of the working tree prunes (a checkout too)
        assert worktrees(repo) == [str(unowned)] and not abandoned.parent.exists()
        with commit_checkout(repo, "HEAD~1") as running:
            assert prune_abandoned(repo) == []
            assert sorted(worktrees(repo)) == sorted([str(unowned), str(running.root)])
        assert worktrees(repo) == [str(unowned)]
    finally:
        git(repo, "worktree", "remove", "--force", str(unowned))
        unowned.parent.rmdir()


def test_an_unknown_commit_makes_no_worktree(repo: Path) -> None:
    with pytest.raises(CheckoutError) as raised, commit_checkout(repo, "nosuchbranch"):
        raise AssertionError("the body ran")
    assert str(raised.value) == f"unknown revision 'nosuchbranch' in {repo}"
    assert worktrees(repo) == []


def test_a_checkout_outside_git_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(CheckoutError) as raised, commit_checkout(tmp_path, "HEAD"):
        raise AssertionError("the body ran")
    assert str(raised.value) == f"--commit needs a git repository, and {tmp_path} is not in one"


def test_a_failed_worktree_add_is_an_error_and_leaves_nothing(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    (repo / ".git" / "worktrees").write_text("")  # git cannot make its entry for the worktree
    with pytest.raises(CheckoutError) as raised, commit_checkout(repo, "HEAD"):
        raise AssertionError("the body ran")
    assert str(raised.value).startswith("git worktree add failed for HEAD: ")
    assert "\n" not in str(raised.value)
    assert our_temp_dirs(head) == []


def test_a_failed_worktree_add_quotes_git_plainly(repo: Path) -> None:
    (repo / ".git" / "worktrees").write_text("")
    with pytest.raises(CheckoutError) as raised, commit_checkout(repo, "HEAD"):
        pass
    assert str(raised.value).startswith("git worktree add failed for HEAD: fatal: ")


def test_a_clean_working_tree_is_its_commit(repo: Path) -> None:
    tree = working_tree(repo / "pkg")
    assert tree == Checkout(root=repo, repo=repo, commit=git(repo, "rev-parse", "HEAD"), label="working tree",
                            dirty=False)


@pytest.mark.parametrize("change", ["edit", "stage", "delete", "untracked", "untracked in a new folder"])
def test_a_working_tree_with_changes_is_dirty(repo: Path, change: str) -> None:
    mod = repo / "pkg" / "mod.py"
    if change == "edit":
        mod.write_text("v = 4\n")
    elif change == "stage":
        mod.write_text("v = 4\n")
        git(repo, "add", "pkg/mod.py")
    elif change == "delete":
        mod.unlink()
    elif change == "untracked":
        (repo / "pkg" / "tuned.json").write_text("{}")  # a config a launcher reads
    else:
        (repo / "keys" / "more").mkdir(parents=True)
        (repo / "keys" / "more" / "extra.py").write_text("")
    tree = working_tree(repo)
    assert tree == Checkout(root=repo, repo=repo, commit=None, label="working tree (uncommitted changes)",
                            dirty=True)


def test_bytecode_and_ignored_files_are_not_changes(repo: Path) -> None:
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\x00")
    (repo / "pkg" / "__pycache__" / "notes.txt").write_text("in a bytecode cache")
    (repo / "stray.pyc").write_bytes(b"\x00")
    (repo / "build.log").write_text("")
    (repo / ".git" / "info" / "exclude").write_text("*.log\n")
    assert not working_tree(repo).dirty
    (repo / "pkg" / "data.bin").write_bytes(b"\x00")
    assert working_tree(repo).dirty


def test_a_tracked_bytecode_file_that_changes_is_a_change(repo: Path) -> None:
    (repo / "compiled.pyc").write_bytes(b"\x00")
    commit_all(repo, "tracked bytecode")
    assert not working_tree(repo).dirty
    (repo / "compiled.pyc").write_bytes(b"\x01")
    assert working_tree(repo).dirty


def test_the_working_tree_outside_git(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    tree = working_tree(tmp_path / "keys" / ".." / "keys")
    assert tree == Checkout(root=tmp_path / "keys", repo=tmp_path / "keys", commit=None, label="working tree",
                            dirty=True)


def test_a_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    assert working_tree(tmp_path) == Checkout(root=tmp_path, repo=tmp_path, commit=None, label="working tree",
                                              dirty=False)
    (tmp_path / "kernels.py").write_text("")
    assert working_tree(tmp_path).dirty
    with pytest.raises(CheckoutError, match="unknown revision 'HEAD'"):
        resolve_commit(tmp_path, "HEAD")
