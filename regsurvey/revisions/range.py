"""The surveys a comparison needs: of two revisions (``diff``) or of every commit of a range (``stack``).

Each revision's survey comes from :func:`regsurvey.revisions.obtain.obtain_survey`, which reuses a stored survey
made with the toolchain in use and surveys (and stores) any other. Decided here: a survey of some kinds
or keys only (``--kind``/``--key``) is made in a temporary store, so that it never replaces a stored
survey of every key.

A revision may also be a survey JSON file (``regsurvey run --format json``): compare surveys made
elsewhere, e.g. on another toolchain (its rows are then "not comparable", unless judged across
toolchains). One revision under two toolchains (``upgrade``), or under a list of them (``history
--toolchains``): :func:`upgrade_surveys`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..engine.other_toolchain import toolchain_name
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.results import Row, Survey, SurveyFormatError
from ..repo.checkout import CheckoutError, repo_root, resolve_commit
from ..store.store import Store, StoreError
from .obtain import lookup, obtain_survey, revision_commit, say_surveying_again

WORKING_TREE = None  # the revision value meaning "the working tree as it is"


@dataclass(frozen=True)
class RangeCommit:
    """One commit of a range."""

    sha: str
    subject: str


def is_survey_file(rev: str | None) -> bool:
    """True when ``rev`` names a survey JSON file rather than a git revision."""
    return rev is not None and rev.endswith(".json") and Path(rev).is_file()


def load_survey_file(path: str, options: SurveyOptions | None = None) -> Survey:
    """A survey saved by ``regsurvey run --format json``, narrowed to the selection of ``options``
    (targets, kinds, keys) as a survey made now would be; StoreError naming the problem otherwise."""
    try:
        survey = Survey.from_json(Path(path).read_text())
    except (OSError, UnicodeDecodeError, SurveyFormatError) as exc:
        raise StoreError(f"survey file {path} is unusable: {exc}") from None
    if options is None:
        return survey
    return narrowed(survey, options)


def narrowed(survey: Survey, options: SurveyOptions) -> Survey:
    """``survey`` narrowed to the selection of ``options`` (targets, kinds, keys) as a survey made now
    would be."""

    def selected(row: Row) -> bool:
        return ((not options.targets or row.target in options.targets)
                and (not options.kinds or any(fnmatch.fnmatchcase(row.kind, p) for p in options.kinds))
                and (not options.keys or any(fnmatch.fnmatchcase(row.key, p) for p in options.keys)))

    rows = tuple(r for r in survey.rows if selected(r))
    targets = tuple(t for t in survey.targets if not options.targets or t in options.targets)
    return survey.narrowed_to(rows, targets)


def selection_survey(start: Path, commit: str, store: Store, options: SurveyOptions,
                     progress: Progress | None = None) -> tuple[Survey, bool]:
    """The survey of ``commit`` for ``options``' selection, and whether it had to be made: a stored survey
    of every key narrowed when one serves, else a stored survey of the same selection, else a survey of
    the selected keys only (its unchanged kernels from the store's results; kept under the store's
    ``partial/``, where it never stands in for a survey of every key). Named by the commit's short sha.
    For ``history`` and ``bisect``, which visit many commits."""
    name = commit[:10]
    whole = lookup(store, commit, options)
    if whole.complete:
        return replace(narrowed(whole.survey(), options), label=name), False
    part = lookup(store, commit, options, selection=True) if options.kinds or options.keys else None
    if part is not None and part.complete:
        return replace(part.survey(), label=name), False
    why = (part.why if part is not None else "") or whole.why
    if why:
        say_surveying_again(name, why)
    # (reuse=False: the stored surveys it could reuse were just found unusable, and it said why)
    return replace(obtain_survey(start, commit, store, options, progress, reuse=False), label=name), True


def commit_range(start: Path, spec: str) -> tuple[str, list[RangeCommit]]:
    """``BASE..HEAD``: the base's sha and the range's commits, oldest first, first parents only."""
    if spec.count("..") != 1 or "..." in spec:
        raise CheckoutError(f"expected a range BASE..HEAD, got {spec!r}")
    repo = repo_root(start)
    if repo is None:
        raise CheckoutError(f"a commit range needs a git repository, and {start} is not in one")
    base_rev, head_rev = spec.split("..")
    base = resolve_commit(repo, base_rev or "HEAD")
    head = resolve_commit(repo, head_rev or "HEAD")
    # One NUL-terminated record per commit, sha and subject: a commit with an empty message has an empty
    # subject (rev-list's own --format would print no line for it and shift every later pair).
    out = subprocess.run(["git", "-C", str(repo), "log", "--reverse", "--first-parent", "-z", "--format=%H %s",
                          "--end-of-options", f"{base}..{head}"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise CheckoutError(f"git log {spec} failed: {out.stderr.strip()}")
    commits = []
    for record in filter(None, out.stdout.split("\0")):
        sha, _, subject = record.partition(" ")
        commits.append(RangeCommit(sha, subject))
    if not commits:
        raise CheckoutError(f"the range {spec} holds no commit ({head_rev or 'HEAD'} is not ahead of "
                            f"{base_rev or 'HEAD'} along its first parents)")
    return base, commits


@contextlib.contextmanager
def survey_store(store: Store, options: SurveyOptions) -> Iterator[Store]:
    """``store`` itself, or a temporary one for a selection of kinds or keys (see the module docstring),
    which shares the store's objects and results."""
    if not (options.kinds or options.keys):
        yield store
        return
    with tempfile.TemporaryDirectory(prefix="regsurvey-selection-") as tmp:
        # Its own surveys; the store's objects and results of identical kernels (content-addressed: shared
        # safely), so a selection compiles only what the store has not.
        yield Store(Path(tmp) / "store", store.objects.root.parent)


def obtain_surveys(start: Path, revs: list[str | None], store: Store, options: SurveyOptions,
                   progress: Progress | None = None,
                   toolchains: list[str | None] | None = None) -> list[Survey]:
    """The survey of each revision (None: the working tree; a ``.json`` path: that survey file).

    ``store`` must be the one :func:`survey_store` gave for ``options``. ``toolchains``: each revision's
    own (``SurveyOptions.toolchain``: another environment's interpreter, None this one's), in place of
    ``options.toolchain``; each survey is then announced with its Triton (``HEAD, triton 3.6.0, revision 1
    of 2``).
    """
    # Every revision is checked before any is surveyed: a typo in the last is refused at once.
    for rev in revs:
        if rev is None or is_survey_file(rev):
            continue
        try:
            revision_commit(start, rev)
        except CheckoutError:
            if rev.endswith(".json"):  # meant as a survey file
                raise CheckoutError(f"no survey file {rev}, and no git revision of that name") from None
            raise
    surveys = []
    for number, rev in enumerate(revs, start=1):
        if is_survey_file(rev):
            assert rev is not None
            surveys.append(load_survey_file(rev, options))
            continue
        asked, what = options, "revision"
        if toolchains is not None:
            asked = replace(options, toolchain=toolchains[number - 1])
            what = f"{toolchain_name(asked.toolchain)}, revision"
        surveys.append(obtain_survey(start, rev, store, asked, _numbered(progress, rev, number, len(revs), what),
                                     reuse=True))
    return surveys


def upgrade_surveys(start: Path, rev: str | None, store: Store, options: SurveyOptions,
                    toolchains: Sequence[str | None], progress: Progress | None = None,
                    command: str = "upgrade") -> list[Survey]:
    """The survey of ``rev`` (None: the working tree) under each of ``toolchains`` (``upgrade``'s from and
    to, or ``history --toolchains``' list: ``SurveyOptions.toolchain``'s, None this environment's), in that
    order, each named for it: ``HEAD with triton 3.6.0``. ``store`` as :func:`obtain_surveys` wants it;
    CheckoutError for a survey file (it cannot be surveyed under another toolchain), naming ``command``."""
    if is_survey_file(rev):
        raise CheckoutError(f"{rev} is a survey file: {command} surveys a revision under "
                            f"{'both toolchains' if len(toolchains) == 2 else 'each toolchain'} (a git revision, or "
                            "none for the working tree); diff --across-toolchains compares two files")
    revs = [rev] * len(toolchains)
    surveys = obtain_surveys(start, revs, store, options, progress, toolchains=list(toolchains))
    return named_with_toolchains(surveys, revs, list(toolchains))


def named_with_toolchains(surveys: list[Survey], revs: list[str | None],
                          toolchains: list[str | None]) -> list[Survey]:
    """``surveys`` (of ``revs``, made with ``toolchains``) each named for its revision as asked for and the
    Triton it recorded: ``HEAD with triton 3.6.0``, ``working tree with triton 3.9.0`` (by where each
    environment is, where both have the same Triton)."""
    names = toolchain_names(surveys, toolchains)
    return [replace(survey, label=f"{_shown(rev)} with {name}") for survey, rev, name in zip(surveys, revs, names)]


def _shown(rev: str | None) -> str:
    """A revision as a survey's name says it: as asked for, a full sha by its first 10 characters (CI's base),
    ``working tree`` for None."""
    if rev is None:
        return "working tree"
    return rev[:10] if len(rev) == 40 and all(c in "0123456789abcdef" for c in rev) else rev


def toolchain_names(surveys: list[Survey], toolchains: list[str | None]) -> list[str]:
    """What reports call the toolchain each of ``surveys`` was made with (``toolchains``: its interpreter,
    None this environment's): the Triton it recorded, ``triton 3.6.0``; where two have the same Triton, each
    also by where its environment is (``triton 3.6.0 at /venvs/a/bin/python``)."""
    names = [_recorded_triton(survey) or toolchain_name(t) for survey, t in zip(surveys, toolchains)]
    if len(set(names)) < len(names):  # the same Triton, otherwise set up: told apart by where each is
        names = [f"{name} at {python or 'this environment'}" if names.count(name) > 1 else name
                 for name, python in zip(names, toolchains)]
    return names


def _recorded_triton(survey: Survey) -> str | None:
    """``triton 3.6.0``: the Triton ``survey``'s toolchain block records (None: none recorded)."""
    version = next((block["triton"] for block in survey.toolchain.values()
                    if isinstance(block, dict) and block.get("triton")), None)
    return f"triton {version}" if version else None


def _numbered(progress: Progress | None, rev: str | None, number: int, count: int,
              what: str = "revision") -> Progress | None:
    """``progress`` announcing the survey of ``rev`` as the ``number``-th ``what`` of ``count`` (a full sha
    by its first 10 characters), so that a command surveying several says which one it is on."""
    if progress is None or count < 2:
        return progress
    numbered = progress.numbered(number, count, what)
    if rev is not None and len(rev) == 40 and all(c in "0123456789abcdef" for c in rev):
        return numbered.named(rev[:10])
    return numbered
