"""Which tree a survey reads: the working tree as it is, or a commit checked out in a temporary
git worktree that is removed afterwards (also on Ctrl-C or SIGTERM; after ``kill -9``, by the next
run in the repository: :func:`prune_abandoned`). The user's working tree is never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..processes import ProcessId

# Beside a temporary worktree (in the directory made for it): the process that made it, so that a later
# run can tell a worktree whose survey was killed outright from one a running survey reads.
OWNER = "owner"

class CheckoutError(Exception):
    """A revision or repository problem, with a one-line message."""


@dataclass(frozen=True)
class Checkout:
    """A tree to survey."""

    root: Path  # where keys/ and the project's kernels are
    repo: Path  # the repository's top level (where .regsurvey/ lives)
    commit: str | None  # full sha; None when the working tree has uncommitted changes or no git
    label: str  # "HEAD~1 (abc1234)" or "working tree"
    dirty: bool


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=check)


def _git_to_the_end(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """Run a git command that adds or removes a worktree, and let it finish even on Ctrl-C or SIGTERM.

    Killed midway, ``git worktree add`` leaves its administrative entry locked as "initializing",
    which ``git worktree prune`` then keeps for good. So git runs in a session of its own (a
    terminal's Ctrl-C, sent to the whole foreground group, does not reach it), and an interrupt that
    arrives while it runs is raised once it has exited."""
    proc = subprocess.Popen(["git", "-C", str(repo), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    interrupted: KeyboardInterrupt | None = None
    while True:
        try:
            out, err = proc.communicate()
            break
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (see _Terminated): after git is done
            interrupted = exc
    if interrupted is not None:
        raise interrupted
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def repo_root(start: Path) -> Path | None:
    """The git top level containing ``start``, or None outside a repository."""
    try:
        out = _git(start, "rev-parse", "--show-toplevel", check=False)
    except FileNotFoundError:
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 else None


def check_revision(rev: str) -> str:
    """``rev`` if git can only read it as a revision; CheckoutError for one starting with ``-`` (git would
    read ``--upload-pack=...`` or ``--output=...`` as an option) or holding a control character."""
    if rev.startswith("-"):
        raise CheckoutError(f"revision {rev!r} starts with '-': git would read it as an option")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in rev):
        raise CheckoutError(f"revision {rev!r} holds a control character")
    return rev


def resolve_commit(repo: Path, rev: str) -> str:
    """Full sha of ``rev``; CheckoutError naming the revision when git does not know it, or when it is
    not one (:func:`check_revision`). Every git command given a revision gets it after
    ``--end-of-options``, whatever its source (a stored survey's commit too)."""
    check_revision(rev)
    out = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
    if out.returncode != 0:
        raise CheckoutError(f"unknown revision {rev!r} in {repo}")
    return out.stdout.strip()


def file_at(repo: Path, commit: str | None, path: str) -> str | None:
    """The text of ``path`` (relative to the repository) at ``commit`` (None: as it is in the working
    tree), or None when there is no such file."""
    if commit is None:
        try:
            return (repo / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    out = subprocess.run(["git", "-C", str(repo), "show", "--end-of-options", f"{commit}:{path}"],
                         capture_output=True, check=False)
    return out.stdout.decode("utf-8", errors="replace") if out.returncode == 0 else None


def working_tree(start: Path) -> Checkout:
    """The working tree containing ``start``, as it is (uncommitted edits included)."""
    repo = repo_root(start)
    if repo is None:
        return Checkout(root=start.resolve(), repo=start.resolve(), commit=None,
                        label="working tree", dirty=True)
    prune_abandoned(repo)
    head = _git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False).stdout.strip() or None
    dirty = _modified(repo)
    return Checkout(root=repo, repo=repo, commit=None if dirty else head,
                    label="working tree" + (" (uncommitted changes)" if dirty else ""), dirty=dirty)


def _modified(repo: Path) -> bool:
    """True when the working tree differs from HEAD: a tracked file changed, or an untracked file that
    git does not ignore (a new keys file, a tuned-config JSON a launcher reads). Python's bytecode
    caches are not inputs: importing the project writes them."""
    out = _git(repo, "status", "--porcelain", "-z", "--untracked-files=all").stdout
    for entry in out.split("\0"):
        if not entry:
            continue
        status, path = entry[:2], entry[3:]
        if status == "??" and ("__pycache__" in path.split("/") or path.endswith((".pyc", ".pyo"))):
            continue
        return True
    return False


class _Terminated(KeyboardInterrupt):
    """SIGTERM during a checkout: unwinds like Ctrl-C so the worktree is removed."""


def commit_message(repo: Path, sha: str) -> str:
    """The whole message of commit ``sha`` (its first line is the subject), or "" if git cannot say."""
    return _git(repo, "log", "-1", "--format=%B", "--end-of-options", sha, check=False).stdout.strip()


def revision_label(rev: str, sha: str) -> str:
    """How reports name a survey of ``rev`` (resolved to ``sha``): ``HEAD~1 (abc1234567)``, or the sha."""
    return rev if rev.startswith(sha[:7]) else f"{rev} ({sha[:10]})"


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    try:
        previous = signal.getsignal(signal.SIGTERM)

        def handler(signum: int, frame: object) -> None:
            raise _Terminated()

        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: nothing to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def commit_checkout(start: Path, rev: str) -> Iterator[Checkout]:
    """Check ``rev`` out in a temporary worktree for the duration of the block, then remove it."""
    repo = repo_root(start)
    if repo is None:
        raise CheckoutError(f"--commit needs a git repository, and {start} is not in one")
    sha = resolve_commit(repo, rev)
    prune_abandoned(repo)
    tmp = Path(tempfile.mkdtemp(prefix=f"regsurvey-{sha[:10]}-"))
    worktree = tmp / "tree"
    with _sigterm_unwinds():
        try:
            (tmp / OWNER).write_text(ProcessId.this().to_json())
            out = _git_to_the_end(repo, "worktree", "add", "--detach", "--quiet", "--end-of-options", str(worktree),
                                  sha)
            if out.returncode != 0:
                said = out.stderr.strip().splitlines()
                raise CheckoutError(f"git worktree add failed for {rev}: {said[-1] if said else 'no message'}")
            yield Checkout(root=worktree, repo=repo, commit=sha, label=revision_label(rev, sha), dirty=False)
        finally:
            _remove_worktree(repo, worktree, tmp)


def _remove_worktree(repo: Path, worktree: Path, tmp: Path) -> None:
    """Remove a temporary worktree, its directory and git's entry for it: every step, even when an
    interrupt arrives during one. Also after a failed add: whatever git left there is ours (the
    directory was new), so it goes even if git left it locked."""
    try:
        _git_to_the_end(repo, "worktree", "remove", "--force", "--force", str(worktree))
    finally:
        try:
            shutil.rmtree(tmp, ignore_errors=True)
        finally:
            _git_to_the_end(repo, "worktree", "prune")


def prune_abandoned(repo: Path) -> list[Path]:
    """Remove the temporary worktrees of ``repo`` whose survey was killed outright (``kill -9``, the OOM
    killer: none of its cleanup ran), and git's entries for them; the worktrees removed. A worktree is
    abandoned when the process named beside it (:data:`OWNER`) has ended on this host; one without that
    name, or not in a directory of this user's, is left alone."""
    out = _git(repo, "worktree", "list", "--porcelain", check=False)
    removed = []
    for line in out.stdout.splitlines() if out.returncode == 0 else ():
        if not line.startswith("worktree "):
            continue
        worktree = Path(line[len("worktree "):])
        tmp = worktree.parent
        if worktree.name != "tree" or not tmp.name.startswith("regsurvey-") or not _ours(tmp):
            continue
        try:
            owner = ProcessId.from_json((tmp / OWNER).read_text())
        except (OSError, UnicodeDecodeError):
            continue
        if owner is not None and owner.gone():
            _remove_worktree(repo, worktree, tmp)
            removed.append(worktree)
    return removed


def _ours(directory: Path) -> bool:
    """Whether ``directory`` is a directory (not a link to one) of this user's: only those are removed."""
    try:
        st = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
