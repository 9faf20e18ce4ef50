"""A build's register pressure, computed once per object and kept beside the object in the store
(``<sha>.pressure.gz``; content-addressed like the object, so a survey of an old commit needs no recompile
to be explained, and a second ``explain`` reads it back).

When it is computed: an AMD build's in the survey's finishing step (:func:`keep_pressure`, from the amdgcn
text the worker holds: about 30 ms an object, 2% of the demo suite's compile time); a cubin's at first need
(:func:`pressure_of`), because nvdisasm's life ranges take a run of their own per cubin (0.57 s of CPU
each on the demo suite, a third of its compile time), which nvdisasm cannot batch: it reads one cubin a
run, and prints no life ranges for a raw instruction stream (``--binary``)."""

from __future__ import annotations

import contextlib
import json

from .compile.triton_facts import AMDGCN, PTX
from .errors import CorruptObjectError
from .model.pressure import Pressure
from .model.results import Row
from .model.targets import get_target
from .store.files import WriteError
from .store.objectstore import ObjectStore

TEXT_NAME = "pressure"


def pressure_of(row: Row, objects: ObjectStore, nvdisasm: str | None = None) -> Pressure:
    """The pressure of ``row``'s object (a build that built): stored, or computed and stored; a cubin's with
    ``nvdisasm``, the one of the toolchain that built it where that is another environment's.

    CorruptObjectError when the object or the text it is read from is missing or damaged (the caller
    may survey again), ValueError when the text holds no kernel, or this nvdisasm reads no life ranges
    of the cubin (one of another CUDA release's ptxas)."""
    if row.object is None:
        raise ValueError(f"{row.row_id} ({row.target}) has no object: it did not build")
    rel = row.object.path
    with contextlib.suppress(CorruptObjectError):  # a damaged entry is computed again
        kept = objects.text(rel, TEXT_NAME)
        if kept is not None:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return Pressure.from_dict(json.loads(kept))
    target = get_target(row.target)
    if target.is_amd:
        from .pressure.amd import amd_pressure

        text = objects.text(rel, AMDGCN)
        if text is None:
            raise CorruptObjectError(f"stored object {rel} has no amdgcn text beside it")
        pressure = amd_pressure(text, target.name)
    else:
        from .pressure.nvidia import nvidia_pressure

        pressure = nvidia_pressure(objects.get(rel, row.object.sha256), target.name, objects.text(rel, PTX),
                                   nvdisasm)
    _keep(objects, rel, pressure)
    return pressure


def is_kept(row: Row, objects: ObjectStore) -> bool:
    """Whether ``row``'s object has its pressure kept beside it (:func:`pressure_of` reads it back, unless
    it is damaged), without reading it."""
    return row.object is not None and objects.has_text(row.object.path, TEXT_NAME)


def keep_pressure(objects: ObjectStore, rel: str, target_name: str, amdgcn: str | None) -> bool:
    """The finishing step's part: the pressure of a just-stored AMD object (at ``rel``), computed from its
    amdgcn text and kept beside it. False, computing nothing, for a cubin (see the module's note) or a
    text that holds no kernel; a full disk leaves it to be computed at first need."""
    if amdgcn is None or not get_target(target_name).is_amd:
        return False
    from .pressure.amd import amd_pressure

    try:
        pressure = amd_pressure(amdgcn, target_name)
    except ValueError:
        return False
    return _keep(objects, rel, pressure)


def _keep(objects: ObjectStore, rel: str, pressure: Pressure) -> bool:
    try:
        objects.put_text(rel, TEXT_NAME, json.dumps(pressure.to_dict(), separators=(",", ":")))
    except WriteError:  # a full disk: computed again next time
        return False
    return True
