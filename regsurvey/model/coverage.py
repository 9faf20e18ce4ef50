"""Warmup coverage: whether a project's keys produce the kernels a real run launched.

Each launch, a key's or a real one's, is what Triton's binder made of it (:class:`Specialization`): its
arguments' types, which of them it specialized as divisible by 16, its constexprs, its options, and
Triton's cache hash of all that. A real launch whose hash no key produces is a kernel warmup misses (a JIT
compile in production); a key's kernel no real launch used is warmup time spent for nothing. Each is told
with the launch nearest it on the other side and what differs (:class:`Difference`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

COVERAGE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Specialization:
    """One launch of a kernel as Triton's binder specialized it for the target."""

    kernel: str  # the jit function, ``module:qualname``
    name: str  # its Python name
    triton_hash: str
    source: str  # the key's id, or ``launch N`` (the capture's first record of it, counted from 1)
    arguments: dict[str, str]  # argument name -> Triton's type of it (``*bf16``, ``i32``, ``constexpr``)
    divisible: tuple[str, ...]  # the arguments Triton specialized as divisible by 16
    constexprs: dict[str, Any]  # by name, as JSON scalars (a dtype by its name)
    options: dict[str, Any]  # num_warps, num_stages and Triton's other options that are scalars
    launches: int = 1  # real launches of this specialization (a key's: 1)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"kernel": self.kernel, "name": self.name, "triton_hash": self.triton_hash, "source": self.source,
                "launches": self.launches, "arguments": dict(self.arguments), "divisible": list(self.divisible),
                "constexprs": dict(self.constexprs), "options": dict(self.options)}


@dataclass(frozen=True)
class Difference:
    """One thing that differs between a launch and the nearest launch on the other side: ``what`` is
    ``dtype``, ``divisibility`` (by 16), ``constexpr``, ``option`` or ``argument`` (one side lacks it)."""

    what: str
    argument: str
    key: Any  # the key's side
    launch: Any  # the real launch's side

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"what": self.what, "argument": self.argument, "key": self.key, "launch": self.launch}


@dataclass(frozen=True)
class Unmatched:
    """A specialization only one side has, the nearest one of the other side (None: the other side never
    launched the kernel), and what differs between them."""

    launch: Specialization
    nearest: Specialization | None
    differences: tuple[Difference, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"launch": self.launch.to_dict(),
                "nearest": self.nearest.to_dict() if self.nearest is not None else None,
                "differences": [d.to_dict() for d in self.differences]}


@dataclass(frozen=True)
class KernelCoverage:
    """One kernel: the real launches its keys cover, those they miss, and its keys no real launch used."""

    kernel: str
    name: str
    covered: int  # real launches whose hash a key produces
    missed: tuple[Unmatched, ...]  # real specializations no key produces (``launch`` counts its launches)
    unused: tuple[Unmatched, ...]  # key specializations no real launch used

    @property
    def missed_launches(self) -> int:
        """Real launches that would compile at run time, warmup notwithstanding."""
        return sum(m.launch.launches for m in self.missed)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"kernel": self.kernel, "name": self.name, "covered": self.covered,
                "missed_launches": self.missed_launches, "missed": [m.to_dict() for m in self.missed],
                "unused": [u.to_dict() for u in self.unused]}


@dataclass(frozen=True)
class Coverage:
    """The coverage of one capture by one project's keys on one target."""

    target: str
    capture: str  # the capture file, as named
    records: int  # real launches in it
    keys: int  # keys whose bodies ran
    kernels: tuple[KernelCoverage, ...]
    unreplayable: tuple[str, ...] = ()  # records that could not be replayed, and why
    key_errors: tuple[str, ...] = ()  # keys whose bodies raised, and why

    @property
    def missed_launches(self) -> int:
        """Real launches no key covers, over every kernel."""
        return sum(k.missed_launches for k in self.kernels)

    @property
    def covered(self) -> int:
        """Real launches some key covers."""
        return sum(k.covered for k in self.kernels)

    def to_json(self) -> str:
        """The versioned JSON form."""
        return json.dumps({"schema_version": COVERAGE_SCHEMA_VERSION, "report": "coverage", "target": self.target,
                           "capture": self.capture, "records": self.records, "keys": self.keys,
                           "covered": self.covered, "missed_launches": self.missed_launches,
                           "kernels": [k.to_dict() for k in self.kernels], "unreplayable": list(self.unreplayable),
                           "key_errors": list(self.key_errors)}, indent=1)
