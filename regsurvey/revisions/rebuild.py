"""Determinism: does every key build the same object twice, each time from a cold Triton cache?

:func:`rebuild_check` surveys a revision twice in one checkout, each time with a fresh, empty
``TRITON_CACHE_DIR`` (so nothing comes from an earlier compile), and compares the two builds of every
row by object hash; for each object that differs it names the first differing ELF section
(:mod:`regsurvey.objects.object_sections`).

Both builds come from the same checkout on purpose: the objects' debug sections record the source
path, and every commit survey has its own temporary worktree, so a stored survey's objects differ from
any rebuild's in ``.debug_str``/``.debug_line`` whatever the compiler does (and a warm cache may hand
back an object compiled from yet another path). The objects go to the store (content-addressed); the
two surveys are not stored.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from ..engine.survey import survey_checkout
from ..errors import CorruptObjectError
from ..model.options import SurveyOptions
from ..model.progress import Progress
from ..model.rebuild import RebuildCheck, RebuildDifference
from ..model.results import Survey
from ..objects.object_sections import first_difference
from ..repo.checkout import Checkout, commit_checkout, working_tree
from ..store.objectstore import ObjectStore
from ..store.store import Store


def compare_builds(first: Survey, second: Survey, objects: ObjectStore) -> RebuildCheck:
    """Compare two surveys of the same tree row by row, reading differing objects from ``objects``."""
    second_rows = {(r.target, r.row_id): r for r in second.rows}
    differences = []
    seen = set()
    for a in first.rows:
        ref = (a.target, a.row_id)
        seen.add(ref)
        b = second_rows.get(ref)
        sha_a = a.object.sha256 if a.object else None
        if b is None:
            differences.append(RebuildDifference(a.target, a.row_id, a.key, a.kernel, sha_a, None, "<status>",
                                                 "not built the second time"))
            continue
        sha_b = b.object.sha256 if b.object else None
        if a.ok != b.ok:
            which = "first" if a.ok else "second"
            error = (b.error_line if a.ok else a.error_line) or "error"
            differences.append(RebuildDifference(a.target, a.row_id, a.key, a.kernel, sha_a, sha_b, "<status>",
                                                 f"built only the {which} time: {error}"))
        elif a.object and b.object and sha_a != sha_b:
            try:
                found = first_difference(objects.get(a.object.path, a.object.sha256),
                                         objects.get(b.object.path, b.object.sha256))
            except CorruptObjectError as exc:
                differences.append(RebuildDifference(a.target, a.row_id, a.key, a.kernel, sha_a, sha_b,
                                                     "<unreadable>", str(exc)))
                continue
            section, detail = (found.section, found.detail) if found else ("<none>", "hashes differ")
            differences.append(RebuildDifference(a.target, a.row_id, a.key, a.kernel, sha_a, sha_b,
                                                 section, detail))
    for b in second.rows:
        if (b.target, b.row_id) not in seen:
            differences.append(RebuildDifference(b.target, b.row_id, b.key, b.kernel, None,
                                                 b.object.sha256 if b.object else None, "<status>",
                                                 "built only the second time"))
    return RebuildCheck(label=first.label, commit=first.commit, builds=len(first.rows),
                        differences=tuple(differences))


def rebuild_check(start: Path, rev: str | None, store: Store, options: SurveyOptions,
                  progress: Progress | None = None) -> RebuildCheck:
    """Survey ``rev`` (None: the working tree) twice from cold caches in one checkout and compare."""
    context = contextlib.nullcontext(working_tree(start)) if rev is None else commit_checkout(start, rev)
    progress = progress or Progress()
    with context as checkout:
        first = _cold_survey(checkout, store, options, progress.numbered(1, 2, "cold build"))
        # The first survey's targets, so the second builds exactly the same rows.
        second = _cold_survey(checkout, store, replace(options, targets=first.targets),
                              progress.numbered(2, 2, "cold build"))
    return compare_builds(first, second, store.objects)


def _cold_survey(checkout: Checkout, store: Store, options: SurveyOptions, progress: Progress | None) -> Survey:
    cold = Path(tempfile.mkdtemp(prefix="regsurvey-cold-cache-"))
    try:
        # Compile for real: neither Triton's cache nor regsurvey's result cache may answer.
        again = replace(options, triton_cache_dir=str(cold), reuse_results=False)
        return survey_checkout(checkout, store.objects.root, again, progress)
    finally:
        shutil.rmtree(cold, ignore_errors=True)
