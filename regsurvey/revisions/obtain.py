"""Getting the survey of a revision: from the store when one was made with this toolchain, else by
surveying it (in a temporary worktree) and storing the result. What diff, stack, lint and check use."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from ..engine.ray_executor import ray_address
from ..engine.survey import start_workers_early, survey_checkout
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Survey
from ..model.targets import get_target
from ..model.version import READER_REVISION
from ..store.files import WriteError
from ..store.store import Store, StoreError
from .checkout import Checkout, CheckoutError, commit_checkout, repo_root, resolve_commit, revision_label, working_tree


def default_store(start: Path) -> Store:
    """``.regsurvey/`` at the repository root containing ``start`` (or in ``start`` outside git)."""
    return open_store(None, start)


def open_store(store_dir: Path | None, start: Path) -> Store:
    """The store ``--store`` names, else the repository's default one; its objects and results of identical
    kernels in ``$REGSURVEY_RESULTS`` when set (``--results``: shared by several stores, e.g. CI jobs)."""
    results = os.environ.get("REGSURVEY_RESULTS")
    return Store(store_dir or (repo_root(start) or start) / ".regsurvey", Path(results) if results else None)


def current_toolchain(targets: list[str]) -> dict[str, dict]:
    """The toolchain block a survey made now would record, per backend of ``targets``."""
    from ..compile.toolchain import toolchain_info

    return {b: toolchain_info(b) for b in sorted({get_target(t).backend for t in targets})}


def obtain_survey(start: Path, rev: str | None, store: Store, options: SurveyOptions,
                  progress: Progress | None = None, reuse: bool = True) -> Survey:
    """The survey of ``rev`` (None: the working tree) for ``options.targets`` (None: the matrices').

    A stored survey of the same commit is reused when it covers every requested target (or the
    matrices' own targets, when none is requested), was made with the same toolchain and by the same
    revision of regsurvey's readers and lint (:data:`READER_REVISION`), and selects every key. A
    working tree with uncommitted edits is always surveyed again (its unchanged kernels still come
    from the content-addressed result cache). A damaged stored survey is reported and redone.
    """
    store.prepare()
    # The working tree is read once: its commit, label and checkout. A commit's label is the command's.
    tree: Checkout | None = None
    if rev is None:
        tree = working_tree(start)
        commit, label = tree.commit, tree.label
    else:
        commit = revision_commit(start, rev)
        label = revision_label(rev, commit)
    local = ray_address(options) is None  # on a Ray cluster, no local worker starts
    if local and (commit is None or not reuse or not store.has(commit)):
        start_workers_early()  # a survey is coming: the workers' imports overlap with what precedes it
    if reuse and commit is not None and not (options.kinds or options.keys):
        stored = stored_survey(store, commit, options)
        if stored is not None:
            # Named as this command asked for it, not as the run that stored it did.
            return replace(stored, label=label)
    if local:
        start_workers_early()  # (again, at once, if it is already running)
    if tree is not None:
        survey = survey_checkout(tree, store.objects.root, options, progress)
    else:
        assert rev is not None
        with commit_checkout(start, rev) as checkout:
            survey = survey_checkout(checkout, store.objects.root, options, progress)
    try:
        if options.kinds or options.keys:
            store.save(survey, partial=True, selection=selection_text(options))
        else:
            store.save(survey, default_targets=not options.targets)
    except WriteError as exc:  # a full disk: the survey is still right, only not kept for the next run
        print(f"regsurvey: warning: the survey is not stored ({exc})", file=sys.stderr)
    return survey


def selection_text(options: SurveyOptions) -> str:
    """The selection of kinds and keys of ``options`` as one text (the same for the same selection)."""
    return f"kinds={' '.join(sorted(options.kinds))} keys={' '.join(sorted(options.keys))}"


def stored_survey(store: Store, commit: str, options: SurveyOptions, selection: bool = False) -> Survey | None:
    """The stored survey of every key of ``commit`` (``selection``: of ``options``' selection of kinds and
    keys, which a survey of that selection stored) that serves ``options``' targets (or the matrices' own),
    made with the toolchain in use, by these readers and with no build failed for a cause of the moment;
    else None (saying why on stderr where one is stored but unusable). A survey of every key is not
    narrowed here: the caller narrows (:func:`regsurvey.revisions.range.narrowed`)."""
    targets = list(options.targets) if options.targets else store.default_targets(commit)
    stored = None
    if targets:
        try:
            stored = store.load(commit, targets, selection_text(options) if selection else None)
        except StoreError as exc:
            print(f"regsurvey: warning: {exc}; surveying again", file=sys.stderr)
    if stored is not None and stored.reader != READER_REVISION:
        print(f"regsurvey: the stored survey of {commit[:12]} was made by regsurvey readers "
              f"{stored.reader or 'of an unknown revision'} (these are {READER_REVISION}); surveying again",
              file=sys.stderr)
    elif stored is not None and stored.schema_version < 3:  # a diff could not say which constexprs changed
        print(f"regsurvey: the stored survey of {commit[:12]} was made before builds' constexprs were recorded; "
              "surveying again", file=sys.stderr)
    elif stored is not None and (passing := sum(r.passing_failure for r in stored.rows)):
        print(f"regsurvey: the stored survey of {commit[:12]} has {passing} build(s) that failed for a "
              "cause of the moment (a time-out, a lost worker, an intermittent toolchain failure); "
              "surveying again", file=sys.stderr)
    elif stored is not None and stored.toolchain == current_toolchain(targets or []):
        return stored
    return None


def revision_commit(start: Path, rev: str) -> str:
    """The full sha of git revision ``rev`` in the repository holding ``start``; CheckoutError naming the
    problem (no repository there, an unknown revision)."""
    repo = repo_root(start)
    if repo is None:
        raise CheckoutError(f"{rev!r} names a git revision, and {start} is not in a git repository")
    return resolve_commit(repo, rev)
