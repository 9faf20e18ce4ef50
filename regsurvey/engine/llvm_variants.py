"""``regsurvey fix``'s LLVM-option variants: an AMD build's stored LLVM IR compiled again with LLVM
command-line options, each in a process of its own (:mod:`regsurvey.compile.llvm_options`), and read as
every build is read.

Triton passes LLVM no option of one compile's own, so these variants are no keys a survey could compile: they
start from the base build's LLVM IR, Triton's own output, and run Triton's last two stages again. The LLVM
control (the IR compiled again with no option) must give the base's object, byte for byte: that proves the
variants compile what the base compiled. Each variant's object is kept in the store with its texts, and
looked up there before it compiles again (``llvm-variants/``: the base object and the options name it).
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from ..analysis import analyze
from ..compile.triton_facts import AMDGCN, LLIR, object_key
from ..errors import CorruptObjectError
from ..model.fix import Variant
from ..model.results import NO_FIGURES, ObjectRef, Row, Status
from ..model.targets import get_target
from ..store.files import atomic_write
from ..store.store import Store


def recompiled(store: Store, base: Row, variants: list[Variant], jobs: int, python: str | None,
               timeout: float, toolchain_id: str) -> list[tuple[Variant, Row]]:
    """Each of ``variants`` (LLVM options, :attr:`Variant.llvm`) of the build ``base``: its row, or an error
    row saying why there is none (no stored LLVM IR, a compiler failure, a Triton that cannot)."""
    if base.object is None:
        return [(v, _failed(base, v, "the base build has no object")) for v in variants]
    try:
        llir = store.objects.text(base.object.path, LLIR)
    except CorruptObjectError as exc:
        return [(v, _failed(base, v, f"the base build's LLVM IR is unusable: {exc}")) for v in variants]
    if llir is None:
        return [(v, _failed(base, v, "the base build's LLVM IR is not stored (surveyed before it was kept)"))
                for v in variants]
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(variants)))) as pool:
        rows = list(pool.map(lambda v: _variant_row(store, base, v, llir, python, timeout, toolchain_id), variants))
    return list(zip(variants, rows))


def _variant_row(store: Store, base: Row, variant: Variant, llir: str, python: str | None, timeout: float,
                 toolchain_id: str) -> Row:
    assert variant.llvm is not None and base.object is not None
    target = get_target(base.target)
    known = _known_path(store, base.object.sha256, variant.llvm, toolchain_id)
    found = _known(store, known)
    compile_s = 0.0
    if found is None:
        request = {"llir": llir, "arch": target.arch, "flags": list(variant.llvm), "fp_fusion": True}
        try:
            done = subprocess.run([python or sys.executable, "-m", "regsurvey.compile.llvm_options"],
                                  input=json.dumps(request), capture_output=True, text=True, timeout=timeout)
            answer = json.loads(done.stdout or "{}")
        except subprocess.TimeoutExpired:
            return _failed(base, variant, f"timed out after {timeout:g} s")
        except ValueError:
            answer = {}
        if "error" in answer or "hsaco" not in answer:
            why = answer.get("error") or (done.stderr.strip().splitlines() or ["no answer"])[-1]
            return _failed(base, variant, str(why))
        hsaco, assembly = base64.b64decode(answer["hsaco"]), str(answer["amdgcn"])
        compile_s = float(answer.get("seconds") or 0.0)
        sha, rel = store.objects.put(hsaco, object_key(target), extras={AMDGCN: assembly, LLIR: llir})
        atomic_write(known, json.dumps({"sha256": sha, "path": rel, "seconds": compile_s}).encode())
        found = (ObjectRef(rel, sha), hsaco, assembly, compile_s)
    ref, hsaco, assembly, compile_s = found
    lds = int(base.resources.get("lds_bytes") or 0)
    report = analyze(target, hsaco, {AMDGCN: assembly, LLIR: llir}, shared=lds, num_warps=base.num_warps or 4,
                     lint=False)
    return replace(base, resources=report.resources, object=ref, compile_s=compile_s, triton_hash=None,
                   reused=compile_s == 0.0, lint=None, stage_s=None)


def _known_path(store: Store, base_sha: str, flags: tuple[str, ...], toolchain_id: str) -> Path:
    name = hashlib.sha256(f"{base_sha}\0{','.join(flags)}\0{toolchain_id}".encode()).hexdigest()
    return store.objects.root.parent / "llvm-variants" / name[:2] / f"{name}.json"


def _known(store: Store, path: Path) -> tuple[ObjectRef, bytes, str, float] | None:
    """The object an earlier sweep compiled for these options, verified (None: none, or unusable)."""
    try:
        entry = json.loads(path.read_text())
        ref = ObjectRef(str(entry["path"]), str(entry["sha256"]))
        binary = store.objects.get(ref.path, ref.sha256)
        assembly = store.objects.text(ref.path, AMDGCN)
    except (OSError, ValueError, KeyError, TypeError, CorruptObjectError):
        return None
    return (ref, binary, assembly, float(entry.get("seconds") or 0.0)) if assembly is not None else None


def _failed(base: Row, variant: Variant, why: str) -> Row:
    return replace(base, resources=NO_FIGURES, status=Status.ERROR, object=None, triton_hash=None, lint=None,
                   error=f"{variant.label}: {why}", stage_s=None)
