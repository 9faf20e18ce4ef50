"""Loading a checkout's ``keys/*.py`` files into kinds and keys.

Runs inside a worker process whose import path starts at the surveyed checkout, so the kind bodies
and the project kernels they import are that checkout's.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import traceback
from pathlib import Path

from ..model.keys import Key
from ..source_names import site_name
from .matrix import Kind, Matrix, key_sort_token


class KeysFileError(Exception):
    """A keys file that cannot be loaded. The message's first line names file, line and cause; when the
    cause was raised deeper (in a library the keys file imports), the lines after it are the frames from
    the keys file's line down to the raising one (:func:`raised_frames`). ``traceback``: Python's whole
    traceback, when the keys file raised."""

    def __init__(self, message: str, traceback: str | None = None):
        super().__init__(message)
        self.traceback = traceback


# A compact traceback shows at most this many frames: the keys file's (or kind body's) line, the raising
# line, and those between (past it, the first two and the last ones, with how many were left out).
MAX_FRAMES = 6
_SOURCE_WIDTH = 100  # of a frame's source line in a compact traceback


def where_raised(exc: BaseException, root: Path) -> str:
    """``file:line`` of the innermost traceback frame inside ``root`` (else the innermost frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if _is_under(f.filename, root)]
    if not (inside or frames):
        return "?"
    frame = (inside or frames)[-1]
    return f"{_shown(Path(frame.filename), root)}:{frame.lineno}"


def _is_under(filename: str, root: Path) -> bool:
    # Code made at run time names no file ("<string>" for exec'd source and dataclass methods): resolved, such
    # a name would land in the working directory, which is often the root.
    if filename.startswith("<"):
        return False
    try:
        Path(filename).resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def raised_frames(exc: BaseException, root: Path, start: Path | None = None) -> list[str]:
    """A compact traceback of ``exc``, one indented line a frame (``file:line in function: source``), from
    the last frame in ``start`` (the keys file; else the first frame) down to the raising frame, without
    regsurvey's own frames and the import system's; files inside ``root`` relative to it."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not (f.filename.startswith("<frozen ") or _is_under(f.filename, _PACKAGE))]
    own = [i for i, f in enumerate(frames) if start is not None and _same_file(f.filename, start)]
    frames = frames[own[-1]:] if own else frames
    lines = [_frame_line(f, root) for f in frames]
    if len(lines) > MAX_FRAMES:
        left_out = len(lines) - (MAX_FRAMES - 1)
        lines = [*lines[:2], f"  ... {left_out} frames ...", *lines[-(MAX_FRAMES - 3):]]
    return lines


def _frame_line(frame: traceback.FrameSummary, root: Path) -> str:
    source = (frame.line or "").strip()
    if len(source) > _SOURCE_WIDTH:
        source = source[: _SOURCE_WIDTH - 1] + "…"
    # Code made at run time ("<string>": a dataclass's __init__) names no file to show relative to root.
    file = frame.filename if frame.filename.startswith("<") else _shown(Path(frame.filename), root)
    where = f"  {file}:{frame.lineno} in {frame.name}"
    return f"{where}: {source}" if source else where


def full_traceback(exc: BaseException, root: Path) -> str:
    """Python's whole traceback of ``exc`` (its chain included) from the first frame that is not
    regsurvey's or the import system's, paths inside ``root`` relative to it (a temporary worktree's
    path changes on every run)."""
    tb = exc.__traceback__
    while tb is not None and _is_ours(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return relative_to_checkout(text, root)


def _is_ours(filename: str) -> bool:
    return filename.startswith("<frozen ") or _is_under(filename, _PACKAGE)


def checkout_prefixes(root: Path) -> tuple[str, ...]:
    """``root`` as the project's modules name it (the import path holds it as given) and resolved (a
    temporary directory behind a symbolic link), each with its separator: what follows is relative."""
    absolute = root.absolute()
    return tuple(dict.fromkeys(f"{path}{os.sep}" for path in (absolute, absolute.resolve())))


def relative_to_checkout(text: str, root: Path) -> str:
    """``text`` with the paths inside the checkout ``root`` relative to it."""
    for prefix in checkout_prefixes(root):
        text = text.replace(prefix, "")
    return text


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def import_failure(exc: BaseException, keys_file: Path, root: Path) -> str:
    """What to say of a keys file whose import raised: one line naming the keys file and its line, then
    (when the exception came from deeper, e.g. a library the keys file imports) the innermost frame, then
    the exception; in that case the frames from the keys file's line down to the raising one follow, a
    line each (:func:`raised_frames`)."""
    if isinstance(exc, SyntaxError):
        # Raised by the compiler, not by a frame: the file and line are the exception's own (a keys
        # file, or a module it imports), and the message is without its "(file, line N)" suffix.
        where = f"{_shown(Path(exc.filename), root)}:{exc.lineno}" if exc.filename else _shown(keys_file, root)
        what = f"{type(exc).__name__}: {exc.msg}"
        if exc.filename and not _same_file(exc.filename, keys_file):
            return f"keys file {_shown(keys_file, root)} raised {what} (in {where})"
        return f"keys file {where} raised {what}"
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if _same_file(f.filename, keys_file)]
    where = f"{_shown(keys_file, root)}:{own[-1].lineno}" if own else _shown(keys_file, root)
    # The innermost frame of the project or a library (regsurvey's own checks say what is wrong in
    # their message: their frame would only point into regsurvey).
    outside = [f for f in frames if not _is_under(f.filename, _PACKAGE)]
    if outside and not _same_file(outside[-1].filename, keys_file):
        inner = outside[-1]
        first = (f"keys file {where} raised {one_line(exc)} "
                 f"(in {_shown(Path(inner.filename), root)}:{inner.lineno}, {inner.name})")
        return "\n".join([first, *raised_frames(exc, root, keys_file)])
    return f"keys file {where} raised {one_line(exc)}"


_PACKAGE = Path(__file__).resolve().parents[1]  # regsurvey itself


def _same_file(filename: str, path: Path) -> bool:
    try:
        return Path(filename).resolve() == path.resolve()
    except OSError:
        return False


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def shown_site(site: str | None, root: Path) -> str | None:
    """A ``file:line`` as reports show it (``source_names.source_name``): relative to the checkout ``root``
    when inside it (a survey of another commit runs in a temporary worktree, gone afterwards), a library's
    relative to the directory this process imported it from (its ``site-packages``, a ``PYTHONPATH``
    directory: another survey's may be elsewhere), else as it is."""
    return site_name(site, root, sys.path) if site else None


def load_kinds(root: Path, keys_dir: Path) -> list[Kind]:
    """Import every ``keys/*.py`` (sorted, ``_``-prefixed skipped) and return their kinds in order."""
    if not keys_dir.is_dir():
        raise KeysFileError(f"no keys/ directory in {root}: nothing to survey")
    files = sorted(p for p in keys_dir.glob("*.py") if not p.name.startswith("_"))
    if not files:
        raise KeysFileError(f"{keys_dir} has no keys files (*.py)")
    kinds: list[Kind] = []
    seen: dict[str, str] = {}
    for path in files:
        module_name = f"regsurvey_keys_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException as exc:  # a keys file may raise anything, SystemExit included
            raise KeysFileError(import_failure(exc, path, root), full_traceback(exc, root)) from None
        # The same Matrix may be bound to several names: each counts once.
        matrices = list({id(v): v for v in vars(module).values() if isinstance(v, Matrix)}.values())
        for matrix in matrices:
            for kind in matrix.kinds.values():
                if kind.name in seen:
                    raise KeysFileError(
                        f"kind {kind.name!r} is defined in both {seen[kind.name]} and {path.name}")
                seen[kind.name] = path.name
                kinds.append(kind)
    if not kinds:
        raise KeysFileError(f"the keys files in {keys_dir} define no kinds (no rs.Matrix with @matrix.kind)")
    return kinds


def declared_targets(keys_dir: Path) -> list[str]:
    """The targets the keys files name literally (``Matrix(targets=[...])``, ``@matrix.kind(targets=
    [...])``), in the order first named, read without importing them; [] when any such ``targets`` is not
    a literal list of strings (computed: only an import can tell) or a file cannot be parsed.

    A guess made before the keys are listed, so that workers for every target can start importing
    while the first lists them: a wrong guess costs a worker replaced, not a key."""
    from ..model.targets import UnknownTargetError, get_target

    found: dict[str, None] = {}
    for path in sorted(p for p in keys_dir.glob("*.py") if not p.name.startswith("_")):
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            return []
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg != "targets":
                    continue
                value = keyword.value
                if not (isinstance(value, (ast.List, ast.Tuple))
                        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts)):
                    return []
                for element in value.elts:
                    try:
                        found[get_target(element.value).name] = None  # type: ignore[attr-defined]
                    except UnknownTargetError:
                        return []
    return list(found)


def expand_keys(kinds: list[Kind], targets: list[str] | None) -> list[Key]:
    """Every key of every kind, sorted by kind order, then axis values, then target."""
    order = {k.name: i for i, k in enumerate(kinds)}
    keys = [key for kind in kinds for key in kind.keys(targets)]
    return sorted(keys, key=lambda k: key_sort_token(order[k.kind], k.axes, k.target))
