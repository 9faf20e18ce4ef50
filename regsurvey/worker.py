"""A worker process: imports one checkout's keys once, then surveys keys sent to it one at a time.

The parent (:mod:`regsurvey.survey`) owns scheduling, time-outs and storage of the survey; the worker
runs kind bodies under capture, compiles their launches and reads the objects' resources. It starts
by spawn, so nothing of the parent's interpreter (or of another commit's kernels) is shared.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import warnings
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from . import toolchain
from .capture import CapturedLaunch, CaptureSession
from .errors import CorruptObjectError
from .keyfiles import KeysFileError, expand_keys, load_kinds, one_line, where_raised
from .matrix import Key, Kind
from .objectstore import ObjectStore
from .resultcache import CachedResult, ResultCache
from .results import ObjectRef, Row
from .targets import Target, get_target

ERROR_LINES = 12  # how much of a compiler's message a row keeps


def first_lines(text: str, n: int = ERROR_LINES) -> str:
    """The first ``n`` non-empty lines of a (compiler) message."""
    lines = [ln.rstrip() for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def read_resources(binary: bytes, target: Target, shared: int, num_warps: int) -> dict[str, int]:
    """Resource figures of one object, from the vendor's object reader."""
    if target.is_amd:
        from .amd_object import read_hsaco

        return read_hsaco(binary, lds_bytes=shared, num_warps=num_warps, target=target).as_dict()
    from .nvidia_object import read_cubin

    return read_cubin(binary, shared_bytes=shared, num_warps=num_warps, target=target).as_dict()


class Worker:
    """The state one worker keeps across keys: the checkout's kinds and the object store."""

    def __init__(self, root: Path, keys_dir: Path, objects_dir: Path):
        self.root = root
        self.keys_dir = keys_dir
        self.objects = ObjectStore(objects_dir)
        self.results = ResultCache(self.objects)
        self._kinds: dict[str, Kind] | None = None

    def kinds(self) -> dict[str, Kind]:
        """Load the keys files once (raises KeysFileError)."""
        if self._kinds is None:
            self._kinds = {k.name: k for k in load_kinds(self.root, self.keys_dir)}
        return self._kinds

    def list_keys(self, targets: list[str] | None) -> list[dict[str, Any]]:
        """Every key, as plain data for the parent."""
        kinds = list(self.kinds().values())
        order = {k.name: i for i, k in enumerate(kinds)}
        return [{**asdict(k), "kind_index": order[k.kind]} for k in expand_keys(kinds, targets)]

    def survey_key(self, key: Key, reuse: bool = True) -> list[Row]:
        """Run the key's kind body under capture, compile each launch, read its resources."""
        kind = self.kinds()[key.kind]
        target = get_target(key.target)
        session = CaptureSession(target)
        base: dict[str, Any] = dict(key=key.id, kind=key.kind, axes=key.axes_dict, target=key.target)
        try:
            with toolchain.capturing(session):
                kind.body(**key.axes_dict)
        except BaseException as exc:  # the project's code may raise anything
            if isinstance(exc, KeyboardInterrupt):
                raise
            return [Row(**base, kernel=None, status="error",
                        error=f"kind body raised at {where_raised(exc, self.root)}: {one_line(exc)}")]
        if not session.launches:
            file, line = kind.source
            return [Row(**base, kernel=None, status="error",
                        error=f"kind body ({file}:{line}) launched no kernel")]
        return [self._compile_row(base, i, launch, target, reuse) for i, launch in enumerate(session.launches)]

    def _compile_row(self, base: dict[str, Any], index: int, launch: CapturedLaunch,
                     target: Target, reuse: bool) -> Row:
        common = dict(base, kernel=launch.kernel, launch=index, config=launch.config,
                      num_warps=launch.options.get("num_warps"),
                      num_stages=launch.options.get("num_stages"), where=launch.where or None)
        start = time.perf_counter()
        try:
            cache_hash = toolchain.triton_cache_hash(launch, target)
        except Exception:  # let the compile below report what is wrong
            cache_hash = None
        cached = self.results.get(cache_hash) if cache_hash and reuse else None
        if cached is not None:
            lint = cached.extra.get("lint")
            if lint is not None:  # findings name the row they were first found on
                lint = [{**f, "key": Row(**common, status="ok").row_id} for f in lint]
            return Row(**common, status="ok", resources=cached.resources, compile_s=cached.compile_s,
                       object=cached.object, triton_hash=cache_hash, reused=True, lint=lint)
        try:
            compiled = toolchain.compile_launch(launch, target)
        except Exception as exc:
            return Row(**common, status="error", compile_s=round(time.perf_counter() - start, 3),
                       error=first_lines(f"{type(exc).__name__}: {exc}"))
        compile_s = round(time.perf_counter() - start, 3)
        try:
            resources = read_resources(compiled.binary, target, compiled.shared, compiled.num_warps)
        except CorruptObjectError as exc:
            return Row(**common, status="error", compile_s=compile_s, triton_hash=compiled.triton_hash,
                       error=f"unreadable object: {exc}")
        ext = "hsaco" if target.is_amd else "cubin"
        sha, path = self.objects.put(compiled.binary, ext, extras={
            name: compiled.asm[name] for name in ("amdgcn", "ptx", "llir", "ttir") if name in compiled.asm})
        ref = ObjectRef(path=path, sha256=sha)
        row = Row(**common, status="ok", resources=resources, compile_s=compile_s, object=ref,
                  triton_hash=compiled.triton_hash)
        lint = self._lint(row, target)
        self.results.put(compiled.triton_hash, CachedResult(kernel=launch.kernel, resources=resources, object=ref,
                                                            compile_s=compile_s, extra={"lint": lint}))
        return replace(row, lint=lint)

    def _lint(self, row: Row, target: Target) -> list[dict[str, Any]] | None:
        """The row's lint findings, or None where the survey does not lint.

        AMD objects are linted from their amdgcn text (milliseconds). An NVIDIA object needs its SASS,
        and nvdisasm costs more than many compiles: the survey lints only those it disassembles anyway
        (kernels with a stack frame); ``regsurvey lint`` lints every one.
        """
        if target.is_nvidia and not row.resources.get("stack_bytes"):
            return None
        from .lint import LintInputError
        from .lint.inputs import lint_row

        try:
            found = lint_row(row, self.objects)
        except (LintInputError, ValueError):
            return None
        return [{**f.to_dict(), "key": row.row_id} for f in found]


def serve(conn: Any, root: str, keys_dir: str, objects_dir: str, triton_cache_dir: str | None = None) -> None:
    """Worker main loop: answer requests on ``conn`` until told to stop or the pipe closes."""
    if triton_cache_dir:
        os.environ["TRITON_CACHE_DIR"] = triton_cache_dir
    # The survey records the fp-fusion setting in its toolchain block; the warning itself would
    # repeat once per worker.
    warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")
    os.chdir(root)
    # The checkout first on the import path: its kernels, not anyone else's. regsurvey itself is
    # already imported (this module), so a checkout that contains regsurvey/ does not replace it.
    sys.path.insert(0, root)
    worker = Worker(Path(root), Path(keys_dir), Path(objects_dir))
    try:
        worker.kinds()  # warm up (torch, Triton, the project's kernels) before the first request
    except BaseException:  # noqa: S110 - reported again, with its message, when a request needs the keys
        worker._kinds = None
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        op = request.get("op")
        try:
            if op == "stop":
                return
            if op == "list":
                conn.send({"ok": True, "keys": worker.list_keys(request.get("targets"))})
            elif op == "toolchain":
                conn.send({"ok": True, "toolchain": toolchain.toolchain_info(request["backend"])})
            elif op == "survey":
                rows = worker.survey_key(Key(**{**request["key"], "axes": tuple(
                    tuple(p) for p in request["key"]["axes"])}), reuse=request.get("reuse", True))
                conn.send({"ok": True, "rows": [asdict(r) for r in rows]})
            else:
                conn.send({"ok": False, "error": f"unknown request {op!r}"})
        except KeysFileError as exc:
            conn.send({"ok": False, "error": str(exc)})
        except Exception as exc:  # a bug of ours: report it rather than hang the parent
            conn.send({"ok": False, "error": f"worker failed: {one_line(exc)}",
                       "traceback": traceback.format_exc()})
