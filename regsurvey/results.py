"""The survey's results: plain frozen dataclasses and their schema-versioned JSON form."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = 1

# Resource names per vendor, in display order (see README "JSON schema").
AMD_RESOURCES = ("vgpr", "agpr", "sgpr", "vgpr_spill", "sgpr_spill", "scratch_bytes", "lds_bytes",
                 "occupancy", "kernarg_bytes", "vgpr_total")
NVIDIA_RESOURCES = ("regs", "spill_store_bytes", "spill_load_bytes", "stack_bytes", "shared_bytes",
                    "occupancy_blocks", "occupancy_warps")


class SurveyFormatError(ValueError):
    """A stored survey that is not valid JSON of a known schema version."""


@dataclass(frozen=True)
class ObjectRef:
    """Where a compiled object is stored, and its content hash."""

    path: str
    sha256: str


@dataclass(frozen=True)
class Row:
    """One kernel launch of one key on one target: does it build, and what it costs."""

    key: str
    kind: str
    axes: dict[str, Any]
    target: str
    kernel: str | None  # the jit function's name; None when the kind body failed before launching
    status: str  # "ok" or "error"
    error: str | None = None
    resources: dict[str, int] = field(default_factory=dict)
    object: ObjectRef | None = None
    compile_s: float = 0.0
    launch: int = 0  # index of the launch within the key (a kind body may launch several kernels)
    config: int | None = None  # autotune config index, for autotuned kernels
    triton_hash: str | None = None  # Triton's cache key: equal = the same kernel a launch compiles
    num_warps: int | None = None
    num_stages: int | None = None
    where: str | None = None  # file:line of the launch in the project's code
    reused: bool = False  # True when the result came from an earlier compile of the same Triton key
    lint: list[dict[str, Any]] | None = None  # kernarg lint findings; None where the survey did not lint
    flaky: str | None = None  # a known-intermittent toolchain failure this build hit before it built

    @property
    def row_id(self) -> str:
        """Unique within a survey: key, launch, kernel and config."""
        suffix = f"#{self.launch}" if self.launch else ""
        cfg = f"@cfg{self.config}" if self.config is not None else ""
        return f"{self.key}{suffix}{cfg}"

    @property
    def ok(self) -> bool:
        """True when the key built."""
        return self.status == "ok"


@dataclass(frozen=True)
class Survey:
    """Every row of one commit (or the working tree) on one or more targets."""

    commit: str | None  # full sha; None for a working tree that differs from HEAD
    label: str  # what the user asked for: "HEAD~1", "working tree"
    targets: tuple[str, ...]
    toolchain: dict[str, Any]  # per backend: triton version, codegen revision / ptxas, fp fusion
    rows: tuple[Row, ...]
    dirty: bool = False
    created: str = ""
    # Where the survey's wall time went (seconds; see survey.SurveyTiming): not compared by diff.
    timing: dict[str, float] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def to_json(self, indent: int | None = 1) -> str:
        """Serialise with a schema version; key order is stable. ``indent=None``: one line (what the
        store keeps: the C encoder, several times faster than an indented dump)."""
        data = asdict(self)
        return json.dumps(data, indent=indent, sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> Survey:
        """Parse a stored survey; raise SurveyFormatError naming the problem."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SurveyFormatError(f"not JSON ({exc})") from None
        if not isinstance(data, dict) or "schema_version" not in data:
            raise SurveyFormatError("no schema_version: not a regsurvey survey")
        if data["schema_version"] != SCHEMA_VERSION:
            raise SurveyFormatError(
                f"schema version {data['schema_version']} (this regsurvey reads {SCHEMA_VERSION})")
        try:
            rows = tuple(
                Row(**{**r, "object": ObjectRef(**r["object"]) if r.get("object") else None})
                for r in data["rows"])
            return cls(commit=data["commit"], label=data["label"], targets=tuple(data["targets"]),
                       toolchain=data["toolchain"], rows=rows, dirty=data.get("dirty", False),
                       created=data.get("created", ""), timing=dict(data.get("timing") or {}),
                       schema_version=data["schema_version"])
        except (KeyError, TypeError) as exc:
            raise SurveyFormatError(f"malformed survey ({one_problem(exc)})") from None

    def merge(self, other: Survey) -> Survey:
        """This survey plus another target's rows of the same commit."""
        targets = tuple(dict.fromkeys(self.targets + other.targets))
        keep = [r for r in self.rows if r.target not in other.targets] + list(other.rows)
        # The order a survey makes: key by key (in the keys' own order), then target, then launch.
        key_order = {k: i for i, k in enumerate(dict.fromkeys(r.key for r in keep))}
        target_order = {t: i for i, t in enumerate(targets)}
        keep.sort(key=lambda r: (key_order[r.key], target_order[r.target], r.launch))
        return Survey(commit=self.commit, label=self.label, targets=targets,
                      toolchain={**self.toolchain, **other.toolchain}, rows=tuple(keep),
                      dirty=self.dirty, created=other.created or self.created,
                      timing=other.timing or self.timing)


def one_problem(exc: BaseException) -> str:
    """A short description of a parsing exception."""
    return f"{type(exc).__name__}: {exc}"
