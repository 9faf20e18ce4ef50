"""Getting the survey of a revision: from the store when one was made with this toolchain, else by
surveying it (in a temporary worktree) and storing the result. What diff, stack, lint and check use."""

from __future__ import annotations

from pathlib import Path

from .checkout import commit_checkout, repo_root, resolve_commit, working_tree
from .results import Survey
from .store import Store
from .survey import Progress, SurveyOptions, survey_checkout
from .targets import get_target


def default_store(start: Path) -> Store:
    """``.regsurvey/`` at the repository root containing ``start`` (or in ``start`` outside git)."""
    return Store((repo_root(start) or start) / ".regsurvey")


def current_toolchain(targets: list[str]) -> dict[str, dict]:
    """The toolchain block a survey made now would record, per backend of ``targets``."""
    from .toolchain import toolchain_info

    return {b: toolchain_info(b) for b in sorted({get_target(t).backend for t in targets})}


def obtain_survey(start: Path, rev: str | None, store: Store, options: SurveyOptions,
                  progress: Progress | None = None, reuse: bool = True) -> Survey:
    """The survey of ``rev`` (None: the working tree) for ``options.targets``.

    A stored survey is reused when it covers every requested target, was made with the same
    toolchain and selects the same keys; anything else is surveyed now and stored.
    """
    store.prepare()
    if rev is not None and reuse and options.targets and not (options.kinds or options.keys):
        repo = repo_root(start)
        if repo is not None:
            stored = store.load(resolve_commit(repo, rev), list(options.targets))
            if stored is not None and stored.toolchain == current_toolchain(list(options.targets)):
                return stored
    if rev is not None:
        with commit_checkout(start, rev) as checkout:
            survey = survey_checkout(checkout, store.objects.root, options, progress)
    else:
        survey = survey_checkout(working_tree(start), store.objects.root, options, progress)
    store.save(survey)
    return survey
