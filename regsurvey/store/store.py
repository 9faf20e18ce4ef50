"""The survey store: ``.regsurvey/`` at the repository root (or ``--store DIR``).

Layout::

    surveys/<commit sha>/<target>.json   one survey per commit and target (schema-versioned JSON)
    surveys/<commit sha>/index.json      each kind's own targets (what a survey without --target covers)
    surveys/<commit sha>/partial/...     the latest survey of only some kinds/keys (--kind, --key)
    surveys/worktree/<target>.json       the latest survey of a working tree with uncommitted edits
    objects/<sha[:2]>/<sha>.<ext>        compiled objects, content-addressed (see ObjectStore)
    toolchains/<id>/surveys/...          the surveys made with another environment's toolchain (--toolchain),
                                         a store of their own per interpreter sharing these objects
                                         (regsurvey.revisions.obtain.toolchain_store)

Beside each survey and index, ``<name>.json.sha256`` is its seal: what the file answers (``survey <commit>
<target>``, with the selection of a partial survey; ``index <commit>``), the file's sha256 and, with
``REGSURVEY_CACHE_KEY`` set, its HMAC (:mod:`.signing`). A file without a seal, with another file's seal
(a folder moved or swapped), that does not match it, or unsigned while a key is set is not believed:
surveyed again. A survey must also say inside itself the commit and target it is read for.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import replace
from pathlib import Path

from ..model.results import Survey, SurveyFormatError, default_target_list
from ..model.targets import get_target
from ..model.toolchain_change import same_toolchain
from .files import MiB, WriteError, atomic_write, read_regular
from .objectstore import ObjectStore
from .signing import CACHE_KEY_VAR, cache_key, sign, signature_holds

MAX_SURVEY_BYTES = 1024 * MiB  # a stored file larger than this (or not a regular file) was not written here


class StoreError(Exception):
    """A stored survey that cannot be used; one-line message."""


class Store:
    """Stored surveys and objects under one directory."""

    def __init__(self, root: Path, results: Path | None = None):
        """``results``: where objects, the results of identical kernels and their compile costs are kept, when
        not in the store itself (``<results>/objects``; a directory several stores share, as CI jobs do:
        every entry is content-addressed and written atomically, so concurrent writers are safe)."""
        # Absolute from the start: a survey of another commit runs its workers in a temporary worktree,
        # where a relative path would put the objects (and lose them with the worktree).
        self.root = Path(root).absolute()
        self.objects = ObjectStore((Path(results).absolute() if results else self.root) / "objects")
        self.key = cache_key()  # SigningKeyError for one that cannot be used

    def _dir(self, commit: str | None) -> Path:
        return self.root / "surveys" / (commit or "worktree")

    def save(self, survey: Survey, default_targets: bool = False, partial: bool = False,
             selection: str = "") -> list[Path]:
        """Store each target's rows of ``survey`` as its own file, with that target's toolchain only; return
        the paths written.

        A stored target is replaced only by a survey of at least its scope: one that lacks some of its
        kinds (``run --force`` without ``--target`` after ``--target`` surveyed every kind there) leaves it
        as it is while it is of the same toolchain and readers and has no build failed for a cause of the
        moment.

        ``survey.declared`` (each kind's own targets) is kept for the commit: what a later survey without
        ``--target`` covers, and what it needs of a target stored by ``--target``. ``default_targets``: a
        survey without that record covers every key on the matrices' own targets (which later runs without
        ``--target`` may then reuse). ``partial``: only some kinds or keys were surveyed (``selection``
        says which: see :func:`selection_name`); kept under ``partial/<selection>/`` so it never stands in
        for (or replaces) a whole survey, and a later survey of the same selection may reuse it (:meth:`load`
        with the same ``selection``).
        """
        self.prepare()
        paths = []
        folder = self._partial_dir(survey.commit, selection) if partial else self._dir(survey.commit)
        if survey.commit is not None and (survey.declared or default_targets):
            index = ({"default_targets": list(default_target_list(survey.declared)),
                      "declared": {kind: list(targets) for kind, targets in survey.declared.items()}}
                     if survey.declared else {"default_targets": list(survey.targets)})
            self._write_sealed(self._dir(survey.commit) / "index.json", json.dumps(index).encode(),
                               _index_question(survey.commit))
        for target in survey.targets:
            part = target_part(survey, target)
            path = folder / f"{target}.json"
            question = _survey_question(survey.commit, target, selection if partial else None)
            if survey.commit is not None and self._wider_kept(path, question, part):
                continue
            self._write_sealed(path, part.to_json(indent=None).encode(), question)
            paths.append(path)
        return paths

    def _write_sealed(self, path: Path, data: bytes, question: str) -> None:
        """Write ``data`` to ``path`` and its seal beside it, after it: a file cut or altered later (or a
        pair left unmatched by a crash between the two writes) is reported and made again."""
        seal = {"answers": question, "sha256": hashlib.sha256(data).hexdigest()}
        if self.key is not None:
            seal["hmac"] = sign(self.key, question, data)
        try:
            atomic_write(path, data)
            atomic_write(_checksum_path(path), json.dumps(seal).encode())
        except WriteError:
            # (a full disk): neither is kept, rather than a file an older seal calls damaged
            for written in (path, _checksum_path(path)):
                with contextlib.suppress(OSError):
                    written.unlink()
            raise

    def _read_sealed(self, path: Path, question: str) -> bytes:
        """The bytes of ``path`` once its seal vouches for them as the answer to ``question``;
        SurveyFormatError naming what is wrong (OSError when the file cannot be read)."""
        data = read_regular(path, MAX_SURVEY_BYTES)
        try:
            seal = json.loads(read_regular(_checksum_path(path), MiB))
        except FileNotFoundError:
            raise SurveyFormatError(f"no checksum file beside it ({_checksum_path(path).name}): not trusted") from None
        except OSError as exc:
            raise SurveyFormatError(f"its checksum file is unreadable ({exc.strerror or exc})") from None
        except ValueError:
            seal = None
        if not isinstance(seal, dict) or not isinstance(seal.get("answers"), str):
            raise SurveyFormatError("its checksum file is not one this regsurvey writes (an older regsurvey's?)")
        if seal["answers"] != question:
            raise SurveyFormatError(f"its checksum file is that of {seal['answers'][:120]!r}, not of "
                                    f"{question!r} (moved or swapped from another folder)")
        if hashlib.sha256(data).hexdigest() != seal.get("sha256"):
            raise SurveyFormatError("checksum mismatch (cut, altered, or left half-written)")
        if self.key is not None and not signature_holds(self.key, question, data, seal.get("hmac")):
            raise SurveyFormatError(f"{'signed with another key or altered since' if 'hmac' in seal else 'unsigned'}"
                                    f" ({CACHE_KEY_VAR} is set)")
        return data

    def has(self, commit: str) -> bool:
        """Whether any survey of ``commit`` is stored (cheap: no file is read)."""
        return self._dir(commit).is_dir()

    def prepare(self) -> None:
        """Create the store; like .pytest_cache it ignores itself, so `git status` stays clean."""
        marker = self.root / ".gitignore"
        if not marker.exists():
            atomic_write(marker, b"# created by regsurvey\n*\n")

    def has_targets(self, commit: str) -> bool:
        """Whether a survey of every key of ``commit`` is stored for some target (not only a partial one)."""
        return any(p.name != "index.json" for p in self._dir(commit).glob("*.json"))

    def has_selection(self, commit: str, selection: str) -> bool:
        """Whether a survey of ``selection`` of ``commit``'s kinds and keys is stored for some target."""
        return any(self._partial_dir(commit, selection).glob("*.json"))

    def default_targets(self, commit: str) -> list[str] | None:
        """The matrices' targets of ``commit`` (what a survey without ``--target`` covers), if a survey of
        it said them."""
        try:
            data = self._index(commit)
            return [str(t) for t in data["default_targets"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def declared(self, commit: str) -> dict[str, tuple[str, ...]]:
        """Each kind's own targets at ``commit`` (see ``Survey.declared``), if a survey of it recorded them;
        else {}."""
        try:
            data = self._index(commit)
            return {str(kind): tuple(str(t) for t in targets) for kind, targets in data["declared"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    def _index(self, commit: str) -> dict:
        """The commit's index, once its seal vouches for it (else OSError or ValueError: as if absent, so
        a survey without --target is made again and writes a good one)."""
        data = json.loads(self._read_sealed(self._dir(commit) / "index.json", _index_question(commit)))
        if not isinstance(data, dict):
            raise ValueError("not an index")
        return data

    def _partial_dir(self, commit: str | None, selection: str) -> Path:
        return self._dir(commit) / "partial" / selection_name(selection)

    def load(self, commit: str | None, targets: list[str], selection: str | None = None) -> Survey | None:
        """The stored survey of ``commit`` for all ``targets`` (of the ``selection`` of kinds and keys, when
        given), or None if any target is missing."""
        merged: Survey | None = None
        for target in targets:
            part = self.load_target(commit, target, selection)
            if part is None:
                return None
            merged = part if merged is None else merged.merge(part)
        return merged

    def load_target(self, commit: str | None, target: str, selection: str | None = None) -> Survey | None:
        """The stored survey of ``commit`` on ``target`` (of the ``selection`` of kinds and keys, when given),
        or None; StoreError when it is damaged."""
        folder = self._dir(commit) if selection is None else self._partial_dir(commit, selection)
        path = folder / f"{target}.json"
        if not path.exists():
            return None
        try:
            return self._read(path, _survey_question(commit, target, selection), commit, target)
        except (SurveyFormatError, UnicodeDecodeError) as exc:
            raise StoreError(f"stored survey {path} is unusable: {exc}") from None
        except OSError as exc:
            raise StoreError(f"stored survey {path} is unusable: unreadable ({exc.strerror or exc})") from None

    def _read(self, path: Path, question: str, commit: str | None, target: str) -> Survey:
        """The survey at ``path``, once its seal vouches for it and it says it is ``commit``'s on ``target``
        (SurveyFormatError otherwise)."""
        survey = Survey.from_json(self._read_sealed(path, question).decode())
        # (A row on a target its survey does not list is refused by Survey.from_json itself.)
        if survey.commit != commit or survey.targets != (target,):
            raise SurveyFormatError(
                f"it holds the survey of {survey.commit or 'a working tree'} on {', '.join(survey.targets)}, "
                f"not of {commit or 'the working tree'} on {target}")
        return survey

    def _wider_kept(self, path: Path, question: str, part: Survey) -> bool:
        """True when the survey stored at ``path`` is to stay rather than be replaced by ``part``: one that
        holds, made with the same toolchain and readers, no build failed for a cause of the moment, and of
        kinds ``part`` lacks."""
        target = part.targets[0]
        try:
            stored = self._read(path, question, part.commit, target)
        except (OSError, SurveyFormatError, UnicodeDecodeError):
            return False
        backend = get_target(target).backend
        return (stored.reader == part.reader
                and same_toolchain(stored.toolchain.get(backend), part.toolchain.get(backend))
                and not any(r.passing_failure for r in stored.rows)
                and {r.kind for r in stored.rows} > {r.kind for r in part.rows})


def target_part(survey: Survey, target: str) -> Survey:
    """``survey``'s rows on ``target``, with the toolchain of its backend only (what the store keeps: a
    target stored with another target's toolchain would seem made with another toolchain)."""
    backend = get_target(target).backend
    part = survey.narrowed_to(tuple(r for r in survey.rows if r.target == target), (target,))
    return replace(part, toolchain={b: block for b, block in survey.toolchain.items() if b == backend})


def selection_name(selection: str) -> str:
    """The folder name of a selection of kinds and keys (its text, e.g. ``kinds=mla_* keys=*/tp4/*``,
    hashed: globs hold characters a file name should not)."""
    return hashlib.sha256(selection.encode()).hexdigest()[:16]


def _checksum_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.sha256")


def _survey_question(commit: str | None, target: str, selection: str | None) -> str:
    """What a stored survey answers, as its seal names it."""
    question = f"survey {commit or 'worktree'} {target}"
    return question if selection is None else f"{question} selection {selection}"


def _index_question(commit: str | None) -> str:
    return f"index {commit or 'worktree'}"
