"""What a key's kind body read while it ran, so that a later survey can tell it would run the same way.

A kind body's launches are a function of what it read: the code that ran (the project's launchers, a
library's), the kernels it launched and the ``@triton.jit`` functions they call, files it opened (a tuned
config), environment variables, the state the project's modules set up when imported, and the toolchain
(the interpreter, regsurvey, Triton, torch: :func:`namespace`). While the body runs, :class:`Recorder`
notes the source file of every code object that runs (``sys.monitoring`` on Python 3.12, else
``sys.settrace``: call events only), the variables
read from ``os.environ``, and the files opened for reading (an audit hook); afterwards :func:`key_reads`
hashes them (:class:`KeyReads`). A later survey checks each against its own checkout and environment
(:func:`still_holds`): where all hold, the key's rows are taken as they were (``engine.key_records``).

What is not seen: a file's absence tested with ``os.stat``/``os.path.exists`` (no audit event), state kept
between keys in one process, and environment variables read by C code. The module state is covered
otherwise: every module of the project imported by then is held by its *skeleton* (its source with every
function body left out, so that an edit inside a function no key ran changes nothing), and every other
module imported (a library's) by its size and modification time.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import stat
import sys
import sysconfig
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REUSE_VAR = "REGSURVEY_KEY_REUSE"  # "off": no key is recorded or taken from its record (benchmarks, a way out)


def enabled() -> bool:
    """Whether kind bodies' reads are recorded and keys taken from their records (``REGSURVEY_KEY_REUSE``)."""
    return os.environ.get(REUSE_VAR, "").strip().lower() not in ("off", "0", "no", "false")


# Variables a survey sets per run or that only say where temporary files go: never a reason to run again.
IGNORED_VARIABLES = frozenset({"TMPDIR", "TEMP", "TMP", "TRITON_CACHE_DIR", "PWD", "OLDPWD", "_"})
PROJECT = "@/"  # a name of a file of the surveyed checkout: "@/decode_layer/router.py"


@dataclass(frozen=True)
class KeyReads:
    """What one key's kind body read, hashed: ``files`` (the files whose code ran, the launched kernels' files
    and the files opened: name -> sha256 of the content, "" where the file was gone), ``env`` (variable ->
    sha256 of its value, None where unset; ``whole_env``: the body iterated the environment, and every
    variable counts), and ``modules`` (the digest of the modules imported by then, whose entries are kept
    once for every key that shares them: name -> skeleton sha256 for the project's, ``stat:SIZE:MTIME`` for
    the others)."""

    files: dict[str, str]
    env: dict[str, str | None]
    whole_env: bool
    modules: str  # the digest of ``module_entries``
    module_entries: dict[str, str] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        """Its JSON form, without the module entries (kept by their digest)."""
        return {"files": self.files, "env": self.env, "whole_env": self.whole_env, "modules": self.modules}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], module_entries: dict[str, str]) -> KeyReads:
        """Parse :meth:`to_json`'s form; ValueError where it is not one."""
        files, env = data.get("files"), data.get("env")
        if not isinstance(files, dict) or not isinstance(env, dict) or not isinstance(data.get("modules"), str):
            raise ValueError("not a key's reads")
        return cls({str(k): str(v) for k, v in files.items()},
                   {str(k): (None if v is None else str(v)) for k, v in env.items()},
                   bool(data.get("whole_env")), str(data["modules"]), module_entries)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _toolchain_dirs() -> tuple[str, ...]:
    """Directories whose files the toolchain's identity already covers (the interpreter's standard library,
    Triton, torch, regsurvey itself): their code running is never recorded."""
    dirs = {sysconfig.get_paths()[name] for name in ("stdlib", "platstdlib")}
    for package in ("triton", "torch", "regsurvey"):
        file = getattr(sys.modules.get(package), "__file__", None)
        if isinstance(file, str):
            dirs.add(os.path.dirname(os.path.abspath(file)))
    return tuple(sorted(d.rstrip(os.sep) + os.sep for d in dirs))


class Recorder:
    """Notes what the kind bodies of one worker read (:meth:`recording`, around each body)."""

    def __init__(self, root: str | os.PathLike[str], skipped_dirs: Iterable[str] = (), monitoring: bool = True):
        self.root = os.path.realpath(root).rstrip(os.sep) + os.sep
        self.monitoring = monitoring  # sys.monitoring where Python has it (False: sys.settrace, to compare)
        self._skipped = tuple(d.rstrip(os.sep) + os.sep for d in skipped_dirs if d)
        self._toolchain: tuple[str, ...] | None = None
        self._active: _Reading | None = None
        self._hooked = False

    def name(self, path: str) -> str | None:
        """``path`` as a record names it (project files relative to the checkout), None where it is nobody's
        (a pseudo-file, the toolchain's own)."""
        if not path or path.startswith("<") or not os.path.isabs(path):
            return None
        real = os.path.realpath(path)
        if real.startswith(self.root):
            return PROJECT + real[len(self.root):]
        if self._toolchain is None:
            self._toolchain = _toolchain_dirs()
        if real.startswith(self._toolchain) or real.startswith(self._skipped):
            return None
        return real

    @contextlib.contextmanager
    def recording(self) -> Iterator[_Reading]:
        """Inside: the code that runs, the variables read and the files opened are noted in what it yields."""
        reading = _Reading()
        if not self._hooked:
            sys.addaudithook(self._audit)
            self._hooked = True
        self._active = reading
        codes = reading.codes

        def trace(frame: Any, event: str, arg: Any) -> None:
            code = frame.f_code
            if code not in codes:
                codes.add(code)
            return None

        environ_type = type(os.environ)
        original_getitem, original_iter = environ_type.__getitem__, environ_type.__iter__

        # A variable counts by its value when the body began: one the body (or a stand-in) set is no input.
        reading.initial = dict(os.environ)

        def getitem(environ: Any, name: Any) -> Any:
            reading.env.add(str(name))
            return original_getitem(environ, name)

        def iterate(environ: Any) -> Any:
            reading.whole_env = True
            return original_iter(environ)

        environ_type.__getitem__, environ_type.__iter__ = getitem, iterate  # type: ignore[method-assign]
        try:
            with _noting_code(codes, trace, self.monitoring):
                yield reading
        finally:
            environ_type.__getitem__, environ_type.__iter__ = original_getitem, original_iter  # type: ignore[method-assign]
            self._active = None

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        reading = self._active
        if reading is None or event != "open" or not args:
            return
        path, mode = args[0], args[1] if len(args) > 1 else None
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            return
        if isinstance(mode, int) and mode & (os.O_WRONLY | os.O_RDWR):
            return
        if isinstance(path, (str, bytes, os.PathLike)):
            try:
                reading.opened.add(os.fsdecode(path))
            except (TypeError, ValueError):
                pass


_TOOL = 4  # the sys.monitoring tool id regsurvey takes (Python 3.12+; 0-2 and 5 are the debugger's,
# coverage's, the profiler's and the optimizer's)


@contextlib.contextmanager
def _noting_code(codes: set[Any], trace: Any, use_monitoring: bool = True) -> Iterator[None]:
    """Inside: every code object that starts running is added to ``codes``. Python 3.12+: ``sys.monitoring``,
    each code object's event turned off once seen (so a loop's calls cost nothing after the first);
    earlier: ``sys.settrace`` (call events only, in this thread and the threads started inside)."""
    monitoring = getattr(sys, "monitoring", None) if use_monitoring else None
    if monitoring is not None and monitoring.get_tool(_TOOL) is None:
        def started(code: Any, offset: int) -> Any:
            codes.add(code)
            return monitoring.DISABLE

        monitoring.use_tool_id(_TOOL, "regsurvey")
        try:
            monitoring.register_callback(_TOOL, monitoring.events.PY_START, started)
            monitoring.restart_events()  # code seen by an earlier key is seen again
            monitoring.set_events(_TOOL, monitoring.events.PY_START)
            try:
                yield
            finally:
                monitoring.set_events(_TOOL, 0)
                monitoring.register_callback(_TOOL, monitoring.events.PY_START, None)
        finally:
            monitoring.free_tool_id(_TOOL)
        return
    previous = sys.gettrace()
    threading.settrace(trace)
    sys.settrace(trace)
    try:
        yield
    finally:
        sys.settrace(previous)
        threading.settrace(None)  # type: ignore[arg-type]


@dataclass
class _Reading:
    codes: set[Any] = field(default_factory=set)
    env: set[str] = field(default_factory=set)  # the variables read
    whole_env: bool = False
    opened: set[str] = field(default_factory=set)
    initial: dict[str, str] = field(default_factory=dict)  # the environment when the body began


class FileHashes:
    """Contents' sha256 by path, each file read once while its size and modification time hold."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, int, str]] = {}

    def sha(self, path: str) -> str:
        """The file's sha256, "" where it cannot be read."""
        try:
            st = os.stat(path)
        except OSError:
            return ""
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a device where a file was: read, it would never end
            return ""
        known = self._known.get(path)
        if known is not None and known[:2] == (st.st_size, st.st_mtime_ns):
            return known[2]
        try:
            digest = _sha(Path(path).read_bytes())
        except OSError:
            return ""
        self._known[path] = (st.st_size, st.st_mtime_ns, digest)
        return digest


def skeleton(source: bytes) -> str:
    """The sha256 of a module's source without its function bodies (their signatures, decorators and
    everything at module and class level kept), "" where it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.body = [ast.Pass()]
    return _sha(ast.dump(tree, include_attributes=False).encode())


def module_entries(recorder: Recorder, hashes: FileHashes) -> dict[str, str]:
    """Every module imported by now, by file: the project's by skeleton, the others by size and time."""
    entries = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not path.endswith(".py"):
            continue
        name = recorder.name(path)
        if name is None or name in entries:
            continue
        entries[name] = _module_entry(name, path_of(name, recorder.root))
    return entries


def path_of(name: str, root: str) -> str:
    """Where the file a record names lies: a project file's name (``@/...``) below the checkout ``root``."""
    return os.path.join(root, name[len(PROJECT):]) if name.startswith(PROJECT) else name


def _module_entry(name: str, path: str) -> str:
    if name.startswith(PROJECT):
        try:
            return "skeleton:" + skeleton(Path(path).read_bytes())
        except OSError:
            return ""
    try:
        st = os.stat(path)
    except OSError:
        return ""
    return f"stat:{st.st_size}:{st.st_mtime_ns}"


def entries_digest(entries: Mapping[str, str]) -> str:
    """The digest a key's reads name its module entries by."""
    return _sha(json.dumps(sorted(entries.items())).encode())


def key_reads(recorder: Recorder, reading: _Reading, kernel_files: Iterable[str], hashes: FileHashes,
              modules: dict[str, str]) -> KeyReads:
    """``reading`` hashed: the files whose code ran, ``kernel_files`` (the launched kernels' and their
    ``@triton.jit`` dependencies' files) and the files opened, by content; the variables read, by value."""
    paths = {code.co_filename for code in reading.codes} | set(kernel_files)
    paths |= {p for p in reading.opened if not p.endswith((".py", ".pyc")) and os.path.isfile(p)}
    files = {}
    for path in sorted(paths):
        name = recorder.name(path)
        if name is not None and name not in files:
            files[name] = hashes.sha(path)
    names = set(reading.initial) if reading.whole_env else reading.env
    env = {name: _value_sha(reading.initial.get(name)) for name in sorted(names) if name not in IGNORED_VARIABLES}
    return KeyReads(files, env, reading.whole_env, entries_digest(modules), modules)


def _value_sha(value: str | None) -> str | None:
    return None if value is None else _sha(value.encode(errors="surrogateescape"))


def still_holds(reads: KeyReads, root: Path, environ: Mapping[str, str], hashes: FileHashes,
                modules_hold: dict[str, bool]) -> str | None:
    """None where everything ``reads`` names is as it was (the checkout at ``root``, ``environ`` as the
    workers get it); else what changed, in words (the first difference found). ``modules_hold``: the
    verdicts on module digests so far (each digest checked once per survey)."""
    base = str(root.resolve())
    for name, digest in reads.files.items():
        if hashes.sha(path_of(name, base)) != digest:
            return f"{name} changed"
    variables = dict(environ)
    if reads.whole_env:  # the body iterated the environment: a variable set since is a change too
        added = sorted(set(variables) - set(reads.env) - IGNORED_VARIABLES)
        if added:
            return f"${added[0]} is set"
    for variable, value_sha in reads.env.items():
        if _value_sha(variables.get(variable)) != value_sha:
            return f"${variable} changed"
    if reads.modules not in modules_hold:
        modules_hold[reads.modules] = all(
            _module_entry(name, path_of(name, base)) == entry for name, entry in reads.module_entries.items())
    return None if modules_hold[reads.modules] else "an imported module changed"
