"""The first compiler stage that differs, for every build both sides of a comparison built
(``RowComparison.first_difference``): TTIR, TTGIR, LLVM IR, AMDGCN or PTX, the object; or the same object.

The texts kept beside each object (``engine.worker.KEPT_TEXTS``) are normalized and hashed once per
object (:mod:`regsurvey.diff.stages`); where every text agrees and the objects do not, their ELF sections
say whether the code differs (the assembler or linker changed) or only the debug information (the build
moved on its source lines, or was compiled from another path). A build whose objects or texts the store
does not hold (a survey read from a file made elsewhere, one stored before the texts were kept) is left
without.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from .diff.stages import Fingerprint, fingerprint
from .errors import CorruptObjectError
from .model.comparison import Comparison, RowComparison
from .model.results import Row
from .model.stages import Stage
from .model.targets import TARGETS
from .objects.object_sections import code_differs
from .store.objectstore import ObjectStore


def first_differences(comparison: Comparison, objects: ObjectStore) -> Comparison:
    """``comparison`` with the ``first_difference`` of every build both sides built, where ``objects``
    holds what it needs."""
    rows = tuple(_with_stage(r, objects) for r in comparison.rows)
    return replace(comparison, rows=rows)


def _with_stage(r: RowComparison, objects: ObjectStore) -> RowComparison:
    if r.before is None or r.after is None:
        return r
    stage = first_difference(r.before, r.after, objects)
    return r if stage is None else replace(r, first_difference=stage)


def first_difference(before: Row, after: Row, objects: ObjectStore) -> Stage | None:
    """The first stage whose output differs between two builds of one kernel; None when either did not
    build, or ``objects`` lacks an object or a text it needs (the texts are read in the compiler's order,
    up to the first that differs)."""
    if not (before.ok and after.ok and before.object is not None and after.object is not None):
        return None
    if before.object.sha256 == after.object.sha256:
        return Stage.IDENTICAL
    target = TARGETS.get(after.target)
    if target is None:
        return None
    for stage in (Stage.TTIR, Stage.TTGIR, Stage.LLIR, Stage.AMDGCN if target.is_amd else Stage.PTX):
        was = _fingerprint(objects.root, before.object.path, stage)
        now = _fingerprint(objects.root, after.object.path, stage)
        if was is None or now is None:
            return None
        if not was.same(now):
            return stage
    try:
        differs = code_differs(objects.get(before.object.path, before.object.sha256),
                               objects.get(after.object.path, after.object.sha256))
    except CorruptObjectError:
        return None
    if differs is None:
        return None
    return Stage.OBJECT if differs else Stage.LOCATIONS


@lru_cache(maxsize=16384)
def _fingerprint(root: Path, path: str, stage: Stage) -> Fingerprint | None:
    """The fingerprint of ``stage``'s text kept beside the object ``path`` of the store at ``root``, once per
    object (a stack compares most objects more than once; a store's path names its object's sha256); None
    when the text is missing or damaged."""
    try:
        text = ObjectStore(root).text(path, stage.value)  # a text stage's value names its text
    except CorruptObjectError:
        return None
    return None if text is None else fingerprint(stage, text)


__all__ = ["first_difference", "first_differences"]
