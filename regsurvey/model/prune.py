"""The prune table: per target, the autotune configs a survey found not worth benchmarking, and why.

``regsurvey prune`` writes it (:mod:`regsurvey.tuning.select` decides which builds are pruned);
``regsurvey.tuning.prune_by_survey`` reads it in the project's own process, at run time, and drops those
configs before Triton's autotuner compiles and times them. A config is named by its values (``num_warps``,
``num_stages`` and the build's constexprs: the config's kwargs among them), never by its place in the
autotuner's list, which a project may reorder between the survey and the run.

Standard library only besides this package's enums: the helper that reads it runs inside a serving process.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .enums import TextEnum

# 1: the first.
PRUNE_SCHEMA_VERSION = 1
REPORT = "prune-table"


class PruneTableError(ValueError):
    """A file that is not a prune table of a schema this regsurvey reads."""


class Reason(TextEnum):
    """Why a config is pruned on a target, worst last (the order a table keeps a config by, when every
    config of a launch is pruned: the least bad one stays)."""

    SPILLS = "spills"  # spills past the table's threshold
    CANNOT_LAUNCH = "cannot launch"  # occupancy 0: LDS or shared memory past what one CU or SM has
    FAILS_TO_BUILD = "fails to build"  # the compiler raised

    @property
    def badness(self) -> int:
        """0 for the least bad reason."""
        return list(Reason).index(self)


@dataclass(frozen=True)
class PrunedBuild:
    """One surveyed build of a pruned config: the key it was launched by, and what it cost."""

    key: str
    figures: dict[str, int]  # the build's figures (``Row.resources``); {} where it failed
    compile_s: float  # the seconds its compile took (0.0 where none was measured)
    spill_bytes: int = 0  # the spilled bytes per lane or thread the threshold was held against
    error: str | None = None  # the one line of its error, where it failed

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"key": self.key, "figures": dict(self.figures), "compile_s": self.compile_s,
                "spill_bytes": self.spill_bytes, "error": self.error}

    @classmethod
    def from_dict(cls, data: Any) -> PrunedBuild:
        """Parse :meth:`to_dict`'s form; ValueError for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("key"), str):
            raise ValueError(f"a build is {str(data)[:60]!r}, not a key with its figures")
        figures = data.get("figures") or {}
        if not (isinstance(figures, dict) and all(isinstance(v, int) for v in figures.values())):
            raise ValueError(f"build {data['key']}: figures are not whole numbers by name")
        return cls(key=data["key"], figures=dict(figures), compile_s=float(data.get("compile_s") or 0.0),
                   spill_bytes=int(data.get("spill_bytes") or 0), error=data.get("error"))


@dataclass(frozen=True)
class PrunedConfig:
    """One autotune config of one kernel on one target, pruned: its values, why, and its builds.

    ``constexprs`` is the build's constexpr arguments (``Row.build``): the config's kwargs, and the launch's
    other constexprs (a block size the caller passes, a heuristic's value). A running autotuner's config
    is this one when its ``num_warps``, ``num_stages`` and kwargs equal these, and when every constexpr
    here that the launch itself passes has the launch's value (a config that spills at one head size
    may not at another)."""

    kernel: str  # the kernel's name (the jit function's ``__name__``; with ``repr=``, the compiled name)
    num_warps: int | None
    num_stages: int | None
    constexprs: dict[str, Any]
    reason: Reason
    builds: tuple[PrunedBuild, ...]
    config: int | None = None  # its index in the surveyed autotuner's list: for reading, never for matching

    @property
    def spill_bytes(self) -> int:
        """The most spilled bytes per lane or thread among its builds."""
        return max((b.spill_bytes for b in self.builds), default=0)

    @property
    def compile_s(self) -> float:
        """The seconds its builds' compiles took together: what a tuner that prunes it no longer spends."""
        return round(sum(b.compile_s for b in self.builds), 3)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"kernel": self.kernel, "config": self.config, "num_warps": self.num_warps,
                "num_stages": self.num_stages, "constexprs": dict(self.constexprs), "reason": self.reason.value,
                "builds": [b.to_dict() for b in self.builds]}

    @classmethod
    def from_dict(cls, data: Any) -> PrunedConfig:
        """Parse :meth:`to_dict`'s form; ValueError for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("kernel"), str):
            raise ValueError(f"a config is {str(data)[:60]!r}, not a kernel's config")
        for name in ("num_warps", "num_stages", "config"):
            if not isinstance(data.get(name), (int, type(None))) or isinstance(data.get(name), bool):
                raise ValueError(f"config of {data['kernel']}: {name} is {data.get(name)!r}")
        constexprs = data.get("constexprs")
        if not (isinstance(constexprs, dict)
                and all(isinstance(v, (bool, int, float, str, type(None))) for v in constexprs.values())):
            raise ValueError(f"config of {data['kernel']}: constexprs are not values by name")
        builds = data.get("builds")
        if not isinstance(builds, list) or not builds:
            raise ValueError(f"config of {data['kernel']}: no builds")
        return cls(kernel=data["kernel"], num_warps=data.get("num_warps"), num_stages=data.get("num_stages"),
                   constexprs=dict(constexprs), reason=Reason(data.get("reason")),
                   builds=tuple(PrunedBuild.from_dict(b) for b in builds), config=data.get("config"))


@dataclass(frozen=True)
class PruneTable:
    """Every pruned config of a survey, per target, with the survey it came from and the thresholds."""

    commit: str | None
    label: str
    toolchain: dict[str, Any]  # the survey's toolchain block: the Triton and ptxas the figures are of
    spill_above: int  # a build spilling more bytes per lane or thread than this is pruned
    configs: dict[str, tuple[PrunedConfig, ...]]  # per target surveyed (an empty tuple: nothing pruned)
    surveyed: dict[str, int] = field(default_factory=dict)  # autotuned builds looked at, per target
    created: str = ""
    schema_version: int = PRUNE_SCHEMA_VERSION

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets surveyed, in the table's order."""
        return tuple(self.configs)

    def to_json(self, indent: int | None = 1) -> str:
        """The versioned JSON form."""
        return json.dumps({
            "schema_version": self.schema_version, "report": REPORT, "commit": self.commit, "label": self.label,
            "created": self.created, "toolchain": self.toolchain, "spill_above": self.spill_above,
            "surveyed": dict(self.surveyed),
            "targets": {t: [c.to_dict() for c in configs] for t, configs in self.configs.items()},
        }, indent=indent)

    @classmethod
    def from_json(cls, text: str) -> PruneTable:
        """Parse :meth:`to_json`'s form; PruneTableError naming what is wrong."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PruneTableError(f"not JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("report") != REPORT:
            what = data.get("report") if isinstance(data, dict) else None
            raise PruneTableError(f"not a prune table (its report is {what!r})" if what else
                                  "not a prune table (no \"report\": \"prune-table\"; a survey's JSON is not one)")
        if data.get("schema_version") != PRUNE_SCHEMA_VERSION:
            raise PruneTableError(f"prune table of schema version {data.get('schema_version')!r} (this regsurvey "
                                  f"reads {PRUNE_SCHEMA_VERSION})")
        try:
            targets = data["targets"]
            if not isinstance(targets, dict):
                raise ValueError("targets is not configs per target")
            configs = {str(t): tuple(PrunedConfig.from_dict(c) for c in listed) for t, listed in targets.items()}
            return cls(commit=data.get("commit"), label=str(data.get("label") or ""),
                       toolchain=dict(data.get("toolchain") or {}), spill_above=int(data["spill_above"]),
                       configs=configs, surveyed={str(k): int(v) for k, v in (data.get("surveyed") or {}).items()},
                       created=str(data.get("created") or ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise PruneTableError(f"malformed prune table ({type(exc).__name__}: {exc})") from None
