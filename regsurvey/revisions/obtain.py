"""Getting the survey of a revision: from the store when one was made with this toolchain, else by
surveying it (in a temporary worktree) and storing the result. What diff, stack, lint and check use."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from ..engine.other_toolchain import local_only, probed
from ..engine.ray_address import ray_address
from ..engine.survey import survey_checkout
from ..engine.worker_start import start_workers_early
from ..errors import CorruptObjectError
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Survey, default_target_list
from ..model.targets import get_target
from ..model.toolchain_change import differing_parts, same_toolchain
from ..model.version import READER_REVISION
from ..model.words import ARROW, agree, count
from ..repo.checkout import (
    Checkout,
    CheckoutError,
    commit_checkout,
    repo_root,
    resolve_commit,
    revision_label,
    working_tree,
)
from ..store.files import WriteError
from ..store.store import Store, StoreError, target_part

T = TypeVar("T")


def default_store(start: Path) -> Store:
    """``.regsurvey/`` at the repository root containing ``start`` (or in ``start`` outside git)."""
    return open_store(None, start)


def open_store(store_dir: Path | None, start: Path) -> Store:
    """The store ``--store`` names, else the repository's default one; its objects and results of identical
    kernels in ``$REGSURVEY_RESULTS`` when set (``--results``: shared by several stores, e.g. CI jobs)."""
    results = os.environ.get("REGSURVEY_RESULTS")
    return Store(store_dir or (repo_root(start) or start) / ".regsurvey", Path(results) if results else None)


# Where the surveys made with another environment's toolchain (--toolchain) are kept, in the store: a store
# of their own per interpreter, sharing the objects and results, so that a survey of one commit with this
# environment's Triton and one with another's (``upgrade`` makes both) do not replace each other.
TOOLCHAINS_DIR = "toolchains"


def toolchain_store(store: Store, python: str | None) -> Store:
    """Where the surveys made with ``python``'s toolchain (``SurveyOptions.toolchain``) are kept: ``store``
    itself for this environment's (None), else ``toolchains/<id>/`` in it (``id``: a hash of the interpreter's
    path), sharing ``store``'s objects and results of identical kernels. ``store`` already that: itself."""
    if python is None:
        return store
    name = hashlib.sha256(python.encode()).hexdigest()[:16]
    if store.root.name == name and store.root.parent.name == TOOLCHAINS_DIR:
        return store
    return Store(store.root / TOOLCHAINS_DIR / name, store.objects.root.parent)


def current_toolchain(targets: list[str], python: str | None = None) -> dict[str, dict]:
    """The toolchain block a survey made now would record, per backend of ``targets``: with this
    environment's Triton, or (``python``: ``SurveyOptions.toolchain``) with that interpreter's."""
    backends = sorted({get_target(t).backend for t in targets})
    if python is not None:
        return {b: probed(python).toolchain[b] for b in backends}
    from ..compile.toolchain import toolchain_info

    return {b: toolchain_info(b) for b in backends}


def obtain_survey(start: Path, rev: str | None, store: Store, options: SurveyOptions,
                  progress: Progress | None = None, reuse: bool = True) -> Survey:
    """The survey of ``rev`` (None: the working tree) for ``options.targets`` (None: the matrices').

    A stored survey of the same commit serves each target it holds however the targets are named
    (:func:`lookup`): made with the toolchain in use (``options.toolchain``'s, else this environment's)
    and by the same revision of regsurvey's readers and lint (:data:`READER_REVISION`), of every key.
    Targets it cannot serve are surveyed (alone, where the others are served and that surveys the same
    keys), saying why on stderr. A working tree with
    uncommitted edits is always surveyed again (its unchanged kernels still come from the
    content-addressed result cache). What is surveyed is stored under the commit's short sha, not under
    the name this command gives it.
    """
    store = toolchain_store(store, options.toolchain)
    store.prepare()
    # The working tree is read once: its commit, label and checkout. A commit's label is the command's.
    tree: Checkout | None = None
    if rev is None:
        tree = working_tree(start)
        commit, label = tree.commit, tree.label
    else:
        commit = revision_commit(start, rev)
        label = revision_label(rev, commit)
    local_only(ray_address(options), options.toolchain)
    # On a Ray cluster no local worker starts; another toolchain's workers start under its interpreter.
    local = ray_address(options) is None and options.toolchain is None
    if local and (commit is None or not reuse or not store.has(commit)):
        start_workers_early()  # a survey is coming: the workers' imports overlap with what precedes it
    found: Stored | None = None
    if reuse and commit is not None and not (options.kinds or options.keys):
        found = lookup(store, commit, options)
        if found.complete:
            # Named as this command asked for it, not as the run that stored it did.
            return replace(found.survey(), label=label)
    if local:
        start_workers_early()  # (again, at once, if it is already running)
    alone = found.surveyed_alone(options) if found is not None else ()
    if found is not None and found.why:
        say_surveying_again(label, found.why, alone)
    asked = replace(options, targets=alone) if alone else options
    if tree is not None:
        survey = survey_checkout(tree, store.objects.root, asked, progress)
    else:
        assert rev is not None
        with commit_checkout(start, rev) as checkout:
            survey = survey_checkout(checkout, store.objects.root, asked, progress)
    try:
        kept = replace(survey, label=stored_label(survey))
        if options.kinds or options.keys:
            store.save(kept, partial=True, selection=selection_text(options))
        else:
            store.save(kept, default_targets=not asked.targets)
    except WriteError as exc:  # a full disk: the survey is still right, only not kept for the next run
        print(f"regsurvey: warning: the survey is not stored ({exc})", file=sys.stderr)
    if alone:
        assert found is not None
        return replace(found.with_surveyed(survey), label=label)
    return survey


def surveyed_and_used(start: Path, rev: str | None, store: Store, options: SurveyOptions,
                      use: Callable[[Survey], T],
                      progress: Callable[[], AbstractContextManager[Progress | None]] = contextlib.nullcontext,
                      ) -> tuple[Survey, T]:
    """The survey of ``rev`` (:func:`obtain_survey`, a stored one reused) and what ``use`` makes of it.

    The one policy for a stored object damaged since its survey: where ``use`` meets one (it raises
    CorruptObjectError), the revision is surveyed again on the spot, compiling past the store's results
    (the result cache verifies each object too), said on stderr, and ``use`` runs again on that survey; a
    second CorruptObjectError is raised. Each survey runs in a ``progress()`` of its own."""
    with progress() as shown:
        survey = obtain_survey(start, rev, store, options, shown, reuse=True)
    try:
        return survey, use(survey)
    except CorruptObjectError as exc:
        print(f"regsurvey: warning: {exc}; surveying {survey.label} again", file=sys.stderr)
    with progress() as shown:
        survey = obtain_survey(start, rev, store, options, shown, reuse=False)
    return survey, use(survey)


def stored_label(survey: Survey) -> str:
    """The name a survey is stored under: its commit's short sha (each command names what it shows as it
    was asked for), or the working tree's label."""
    return survey.commit[:10] if survey.commit else survey.label


def say_surveying_again(label: str, why: str, targets: tuple[str, ...] = ()) -> None:
    """One line on stderr: ``label`` (on ``targets`` only, when given) is surveyed again, and why."""
    named = "the working tree" if label == "working tree" else label
    on = f" on {', '.join(targets)}" if targets else ""
    print(f"regsurvey: surveying {named} again{on}: {why}", file=sys.stderr)


def selection_text(options: SurveyOptions) -> str:
    """The selection of kinds and keys of ``options`` as one text (the same for the same selection)."""
    return f"kinds={' '.join(sorted(options.kinds))} keys={' '.join(sorted(options.keys))}"


@dataclass(frozen=True)
class Stored:
    """What the store holds of one commit for a request: the survey of each target asked for that serves
    it (narrowed to the keys the request covers), and why the others do not serve."""

    targets: tuple[str, ...]  # the targets asked for (or the matrices' own), in order; () when not known
    served: dict[str, Survey]
    reasons: dict[str, str]  # target -> why its stored survey does not serve ("": none is stored)
    unknown: str = ""  # why the targets are not known, when they are not and something is stored
    every_kind: frozenset[str] = frozenset()  # the targets every kind declares (either scope serves them)

    @property
    def complete(self) -> bool:
        """Whether the store serves every target asked for."""
        return bool(self.targets) and all(t in self.served for t in self.targets)

    @property
    def why(self) -> str:
        """Why the store does not serve the request, in one line: the first target's reason that there is
        ("" when nothing of the commit is stored, or when it serves)."""
        return self.unknown or next((self.reasons[t] for t in self.targets if self.reasons.get(t)), "")

    def survey(self) -> Survey:
        """The stored surveys of every target asked for, as one (:attr:`complete` only)."""
        return functools.reduce(Survey.merge, (self.served[t] for t in self.targets))

    def surveyed_alone(self, options: SurveyOptions) -> tuple[str, ...]:
        """The targets to survey by themselves, where the store serves the others and a survey of just those
        (``--target``: every kind) covers what ``options`` asks of them; else () (survey the whole request)."""
        missing = tuple(t for t in self.targets if t not in self.served)
        if not self.served or not missing or (not options.targets and not set(missing) <= self.every_kind):
            return ()
        return missing

    def with_surveyed(self, survey: Survey) -> Survey:
        """The stored targets and ``survey`` of the others as one survey, in the order asked for (its
        ``created`` and timing are the new survey's)."""
        parts = [self.served[t] if t in self.served else target_part(survey, t) for t in self.targets]
        merged = functools.reduce(Survey.merge, parts)
        return replace(merged, created=survey.created, timing=survey.timing)


def lookup(store: Store, commit: str, options: SurveyOptions, selection: bool = False) -> Stored:
    """What the store holds of ``commit`` for ``options``' targets (or the matrices' own), of every key
    (``selection``: of ``options``' selection of kinds and keys, which a survey of that selection stored).

    A stored target serves when it was made with the toolchain in use, by these readers, with no build
    failed for a cause of the moment, and holds the keys asked for: without ``--target`` the kinds that
    declare the target (a target stored by ``--target``, which surveys every kind there, is narrowed to
    them), with ``--target`` every kind (a target stored without it lacks the kinds that do not declare
    it, where there are such kinds). How the targets were named does not matter otherwise. A survey of
    every key is not narrowed to a selection of kinds or keys here: the caller narrows
    (:func:`regsurvey.revisions.range.narrowed`). With another environment's toolchain, the store's part
    that keeps its surveys (:func:`toolchain_store`)."""
    store = toolchain_store(store, options.toolchain)
    declared = store.declared(commit)
    forced = bool(options.targets)
    targets = tuple(options.targets or default_target_list(declared) or store.default_targets(commit) or ())
    every_kind = frozenset(t for t in default_target_list(declared) if all(t in ts for ts in declared.values()))
    selected = selection_text(options) if selection else None
    stored_any = store.has_targets(commit) if selected is None else store.has_selection(commit, selected)
    if not targets:
        unknown = ("its stored survey does not say which targets the keys files declare (its index is missing, "
                   "damaged or unsigned, or a --target survey was stored by an older regsurvey)") if stored_any else ""
        return Stored((), {}, {}, unknown)
    served: dict[str, Survey] = {}
    reasons: dict[str, str] = {}
    for target in targets:
        try:
            part = store.load_target(commit, target, selected)
        except StoreError as exc:
            reasons[target] = str(exc)
            continue
        if part is None:
            reasons[target] = f"the stored survey lacks target {target}" if stored_any else ""
            continue
        why = _unusable(part, target, options.toolchain) or (_lacking(part, target, declared or part.declared)
                                          if forced and selected is None else "")
        if why:
            reasons[target] = why
        elif forced:
            served[target] = part
        else:
            served[target] = _declared_kinds_only(part, target, declared or part.declared)
    return Stored(targets, served, reasons, every_kind=every_kind)


def _unusable(part: Survey, target: str, python: str | None) -> str:
    """Why the stored survey of ``target`` cannot serve whichever keys are asked of it ("" when it can), with
    the toolchain of ``python`` (None: this environment's)."""
    if part.reader != READER_REVISION:
        return (f"the stored survey of {target} was made by regsurvey readers {part.reader or 'of an unknown revision'}"
                f" (these are {READER_REVISION})")
    if part.schema_version < 3:  # a diff could not say which constexprs changed
        return f"the stored survey of {target} was made before builds' constexprs were recorded"
    if passing := sum(r.passing_failure for r in part.rows):
        return (f"the stored survey of {target} has {count(passing, 'build')} that failed for a cause of the moment "
                "(a time-out, a lost worker, an intermittent toolchain failure)")
    backend = get_target(target).backend
    now = current_toolchain([target], python)[backend]
    if not same_toolchain(part.toolchain.get(backend), now):
        return f"the toolchain changed since the stored survey of {target} ({_change(backend, part.toolchain, now)})"
    return ""


def _change(backend: str, stored: dict[str, Any], now: dict[str, Any]) -> str:
    """The first entry of ``backend``'s toolchain block that differs, as ``cuda ptxas: A → B``."""
    was = stored.get(backend)
    if not isinstance(was, dict):
        return f"none recorded for {backend}"
    name = differing_parts(was, now)[0]

    def shown(value: Any) -> str:
        text = json.dumps(value, sort_keys=True) if value is not None else "none"
        return text if len(text) <= 40 else text[:37] + "..."

    return f"{backend} {name}: {shown(was.get(name))} {ARROW} {shown(now.get(name))}"


def _lacking(part: Survey, target: str, declared: dict[str, tuple[str, ...]]) -> str:
    """Why the stored survey of ``target`` cannot serve ``--target``, which surveys every kind there: the
    kinds it lacks (stored by a survey without ``--target``, of the kinds that declare it); "" when it has
    every kind (or the kinds are not known: a survey stored before they were recorded)."""
    present = {r.kind for r in part.rows}
    lacking = [kind for kind in declared if kind not in present]
    if not lacking:
        return ""
    named = ", ".join(lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
    return (f"the stored survey of {target} lacks {agree(len(lacking), 'kind')} {named}, which the "
            f"keys files do not declare for {target} and --target surveys there too")


def _declared_kinds_only(part: Survey, target: str, declared: dict[str, tuple[str, ...]]) -> Survey:
    """The stored survey of ``target`` as a survey without ``--target`` makes it: the rows of the kinds
    that declare it (one stored by ``--target`` also holds the others)."""
    if not declared:
        return part
    return replace(part, rows=tuple(r for r in part.rows if target in declared.get(r.kind, (target,))))


def revision_commit(start: Path, rev: str) -> str:
    """The full sha of git revision ``rev`` in the repository holding ``start``; CheckoutError naming the
    problem (no repository there, an unknown revision)."""
    repo = repo_root(start)
    if repo is None:
        raise CheckoutError(f"{rev!r} names a git revision, and {start} is not in a git repository")
    return resolve_commit(repo, rev)
