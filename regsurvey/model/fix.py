"""What ``regsurvey fix`` works with: a build's variant (launch options and constexprs changed), each variant
tried with its build and whether it reached the code, and the builds' rankings."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .enums import TextEnum
from .results import Row

FIX_SCHEMA_VERSION = 1

Setting = tuple[str, Any]  # a launch option or a constexpr, by name, and its value


@dataclass(frozen=True)
class Variant:
    """A build compiled again with some of its launch options and constexprs changed: every launch of the
    kernel ``kernel`` (its jit function's Python name) in the key's kind body takes them; an autotuned
    launch is pinned to config ``config`` (the base build's) first."""

    kernel: str
    options: tuple[Setting, ...] = ()  # num_warps, waves_per_eu, maxnreg ... (Triton's launch options)
    constexprs: tuple[Setting, ...] = ()  # BLOCK_K ... (the kernel's own constexpr arguments)
    config: int | None = None
    control: bool = False  # the control variant: a launch option that must not change the code
    # AMD: the base build's stored LLVM IR compiled again with these LLVM command-line options
    # (``amdgpu-use-amdgpu-trackers``); () is that compile with none, the LLVM control, which must give the
    # base's object. None: a variant of the launch (its options and constexprs), compiled by a survey.
    llvm: tuple[str, ...] | None = None

    @property
    def settings(self) -> tuple[Setting, ...]:
        """The options, then the constexprs."""
        return self.options + self.constexprs

    @property
    def is_base(self) -> bool:
        """Nothing changed: the base build itself."""
        return not self.settings and self.llvm is None

    @property
    def label(self) -> str:
        """``num_warps=8 BLOCK_K=64``: what a kernel engineer would pass (``base``: nothing changed;
        ``llvm=amdgpu-use-amdgpu-trackers``, an LLVM option; ``llvm as compiled``, the LLVM control)."""
        if self.llvm is not None:
            return f"llvm={','.join(self.llvm)}" if self.llvm else "llvm as compiled"
        return " ".join(f"{name}={_spelled(value)}" for name, value in self.settings) or "base"

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form."""
        return {"kernel": self.kernel, "config": self.config, "options": dict(self.options),
                "constexprs": dict(self.constexprs), "control": self.control,
                "llvm": list(self.llvm) if self.llvm is not None else None}


def _spelled(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


class VariantMissed(Exception):
    """A variant's key made no launch the variant changes (its kernel never launched, or never as the base
    build): its row says so, in place of a build that would pass for 'no effect'."""

    def __init__(self, variant: Variant):
        config = f" (autotune config {variant.config})" if variant.config is not None else ""
        super().__init__(f"the variant reached no launch: the kind body launched no {variant.kernel}{config} "
                         f"that it changes")


class Effect(TextEnum):
    """What a variant did to the code."""

    CHANGED = "changed"  # its object differs from the base's
    NO_EFFECT = "no effect"  # the same object as the base's: the knob never reached the code
    FAILED = "failed"  # it did not build


@dataclass(frozen=True)
class Tried:
    """One variant, the build it made (an error row where it failed) and its effect."""

    variant: Variant
    row: Row
    effect: Effect

    def to_dict(self, figures: tuple[str, ...]) -> dict[str, Any]:
        """Its JSON form, with the build's ``figures``."""
        return {"variant": self.variant.to_dict(), "label": self.variant.label, "effect": str(self.effect),
                "figures": {name: self.row.resources.get(name) for name in figures},
                "error": self.row.error if not self.row.ok else None,
                "config_source": self.row.config_source,
                "triton_hash": self.row.triton_hash,
                "object": self.row.object.sha256 if self.row.object is not None else None}


@dataclass(frozen=True)
class BuildFix:
    """One build's sweep: the base, the variants ranked best first (the base among them, as ``base``), the
    control, and the figures they were ranked by."""

    name: str  # the build's name in every report (key, kernel, launch name, config)
    base: Row
    ranked: tuple[Tried, ...]  # every variant but the control, best first; the base is one of them
    control: Tried | None
    figures: tuple[str, ...]  # the vendor's figures the table shows, in ranking order
    improves: bool  # the best variant ranks above the base (tuning.sweep.rank_key)
    llvm_control: Tried | None = None  # the stored LLVM IR compiled again as it was (LLVM-option variants')

    @property
    def best(self) -> Tried:
        """The first of the ranking."""
        return self.ranked[0]

    @property
    def patch(self) -> str:
        """The best variant written into the launcher's config file, as a unified diff ("" where its launch
        took no entry of a config file, or the best is the base)."""
        source = self.best.row.config_source if self.improves else None
        return str(source.get("patch") or "") if source else ""

    @property
    def base_tried(self) -> Tried:
        """The base among the ranked."""
        return next(t for t in self.ranked if t.variant.is_base)

    def to_dict(self) -> dict[str, Any]:
        """Its JSON form."""
        return {"name": self.name, "key": self.base.key, "target": self.base.target, "kernel": self.base.kernel,
                "config": self.base.config, "base": self.base_tried.to_dict(self.figures),
                "improves": self.improves, "best": self.best.to_dict(self.figures),
                "ranked": [t.to_dict(self.figures) for t in self.ranked],
                "control": self.control.to_dict(self.figures) if self.control is not None else None,
                "llvm_control": self.llvm_control.to_dict(self.figures) if self.llvm_control is not None else None}


@dataclass(frozen=True)
class FixReport:
    """``regsurvey fix``'s result: each build swept, of the survey named ``label``."""

    label: str
    builds: tuple[BuildFix, ...]
    variants: int  # the variants compiled (controls included)
    seconds: float  # how long the sweep took

    def to_json(self) -> str:
        """The report as JSON (schema version :data:`FIX_SCHEMA_VERSION`)."""
        return json.dumps({"schema_version": FIX_SCHEMA_VERSION, "report": "fix", "label": self.label,
                           "variants": self.variants, "seconds": self.seconds,
                           "builds": [b.to_dict() for b in self.builds]}, indent=1)
