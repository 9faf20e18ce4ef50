"""The specializations of both sides, for one target: the keys' (each kind body run under capture, as a
survey runs it) and a capture's (each record replayed through Triton's own binder). Nothing is compiled:
Triton's cache hash is computed from the specialization (``toolchain.triton_cache_hash``, the hash a
survey's rows carry).

Runs in this process, with the target as the device, for one target: the project is imported once, under
that target, as a survey's worker imports it.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.replay import ReplayError, replay, resolve_kernel
from ..compile import toolchain
from ..keys.keyfiles import KeysFileError, expand_keys, load_kinds, one_line
from ..keys.session import CapturedLaunch, CaptureSession, SkipKey
from ..model.coverage import Specialization
from ..model.targets import Target
from ..model.words import count as counted

DIVISIBILITY = "tt.divisibility"


class CaptureFileError(ValueError):
    """A file that is not a capture's records, or one of another project (no kernel of it imports here)."""


@dataclass
class Launches:
    """The specializations of one side, by Triton hash, and what could not be run."""

    by_hash: dict[str, Specialization] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    runs: int = 0  # keys run, or records replayed

    def add(self, launch: CapturedLaunch, target: Target, source: str, count: int = 1) -> None:
        """Count ``launch`` (made by ``source``) under its hash."""
        spec = specialization(launch, target, source, count)
        known = self.by_hash.get(spec.triton_hash)
        if known is None:
            self.by_hash[spec.triton_hash] = spec
        elif count:
            self.by_hash[spec.triton_hash] = Specialization(**{**known.__dict__, "launches": known.launches + count})


def specialization(launch: CapturedLaunch, target: Target, source: str, count: int = 1) -> Specialization:
    """What Triton's binder made of ``launch``, named by its arguments."""
    names = list(launch.signature)
    divisible = tuple(names[path[0]] for path, attrs in launch.attrs.items()
                      if isinstance(path, tuple) and len(path) == 1 and path[0] < len(names)
                      and any(a[0] == DIVISIBILITY for a in attrs))
    options = {k: v for k, v in launch.options.items() if isinstance(v, (bool, int, float, str)) and k != "arch"}
    return Specialization(kernel=toolchain.jit_function_name(launch.jit_function), name=launch.kernel,
                          triton_hash=toolchain.triton_cache_hash(launch, target), source=source,
                          arguments={n: str(t) for n, t in launch.signature.items()}, divisible=divisible,
                          constexprs=toolchain.constexpr_values(launch), options=options, launches=count)


def key_launches(root: Path, target: Target, kinds: tuple[str, ...] = (), keys: tuple[str, ...] = ()) -> Launches:
    """Every launch of the project's keys (``root/keys``) on ``target``; KeysFileError for keys files that
    do not load. ``kinds``, ``keys``: globs that narrow them, as ``run``'s."""
    found = Launches()
    with toolchain.device_as(target):
        loaded = load_kinds(root, root / "keys")
    by_name = {k.name: k for k in loaded}
    for key in expand_keys(loaded, [target.name]):
        if (kinds and not any(fnmatch.fnmatchcase(key.kind, p) for p in kinds)) or \
                (keys and not any(fnmatch.fnmatchcase(key.id, p) for p in keys)):
            continue
        found.runs += 1
        session = CaptureSession(target, project_dirs=(str(root),))
        try:
            with toolchain.capturing(session):
                by_name[key.kind].body(**key.axes_dict)
        except SkipKey:
            continue
        except Exception as exc:  # the project's code may raise anything; its launches before count
            found.problems.append(f"{key.id}: {one_line(exc)}")
        launches = [launch.kernel for launch in session.launches]
        seen: dict[str, int] = {}
        for launch in session.launches:
            # A key that launches one kernel more than once names each launch as a survey's rows do: the kind
            # body's name for it, else its place among that kernel's launches.
            seen[launch.kernel] = seen.get(launch.kernel, 0) + 1
            several = launches.count(launch.kernel) > 1
            source = key.id + (f" [{launch.name or f'launch {seen[launch.kernel]}'}]" if several else "")
            found.add(launch, target, source, count=0)
    return found


def read_capture(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A capture file's header and records (``capture --records``); CaptureFileError for another file."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaptureFileError(f"cannot read capture {path}: {exc}") from None
    header: dict[str, Any] | None = None
    records = []
    for number, line in enumerate(lines, 1):
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                continue  # the program died mid-write
            raise CaptureFileError(f"{path} is not a capture's records (line {number} is not JSON)") from None
        if isinstance(item, dict) and "device" in item and header is None:
            header = item
        elif isinstance(item, dict) and isinstance(item.get("kernel"), str) and isinstance(item.get("args"), list):
            records.append(item)
        else:
            raise CaptureFileError(f"{path} is not a capture's records (line {number} is no launch record)")
    if header is None:
        raise CaptureFileError(f"{path} is not a capture's records (no header: regsurvey capture --records "
                               "writes one)")
    return header, records


def _distinct(records: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any], int]]:
    """(first record's number, the record, how many records launch it) per distinct launch."""
    seen: dict[str, list[Any]] = {}
    for number, record in enumerate(records, 1):
        ident = json.dumps([record["kernel"], record["args"], record.get("kwargs", {})], sort_keys=True)
        seen.setdefault(ident, [number, record, 0])[2] += 1
    for number, record, count in seen.values():
        yield number, record, count


def real_launches(path: Path, records: list[dict[str, Any]], target: Target) -> Launches:
    """Every record of a capture replayed for ``target`` (under the stand-in device the keys were run
    under); CaptureFileError where no record's kernel can be imported: a capture of another project."""
    found = Launches()
    importable = 0
    for number, record, count in _distinct(records):
        found.runs += count
        try:
            resolve_kernel(record["kernel"])
        except ReplayError as exc:
            found.problems.append(f"launch {number} ({counted(count, 'launch')}): {exc}")
            continue
        importable += 1
        session = CaptureSession(target)
        try:
            with toolchain.capturing(session):
                replay(record)
        except Exception as exc:  # a record this Triton cannot bind (an argument it no longer takes)
            found.problems.append(f"launch {number} ({record['kernel']}): {one_line(exc)}")
            continue
        for launch in session.launches:
            found.add(launch, target, f"launch {number}", count)
    if records and not importable:
        raise CaptureFileError(f"no kernel of {path} can be imported here ({found.problems[0]}): a capture of "
                               "another project?")
    return found


__all__ = ["CaptureFileError", "KeysFileError", "Launches", "key_launches", "read_capture", "real_launches",
           "specialization"]
