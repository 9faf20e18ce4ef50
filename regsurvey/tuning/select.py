"""Which autotune configs a survey prunes: those whose builds fail, cannot launch, or spill past a threshold.

A pure function of a survey (:func:`prune_table`). Only autotuned builds count (a row with a ``config``
index). A config is named by its values: the kernel, ``num_warps``, ``num_stages`` and the build's
constexprs. Keys that build one config with the same constexprs are one config (a 4-token and a 64-token
launch of a GEMM whose token count is no constexpr), pruned only where every such build is bad: were one
good, no run-time launch could tell which of them it is.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..model.figures import AMD, FIGURES, OCCUPANCY
from ..model.prune import PrunedBuild, PrunedConfig, PruneTable, Reason
from ..model.results import Row, Survey
from ..model.targets import get_target
from ..model.words import count

# The spill threshold's default, in bytes per lane or thread: Inductor's (``triton.spill_threshold``: a
# config whose kernel spills more than 16 registers, 4 bytes each, is not benchmarked).
DEFAULT_SPILL_ABOVE = 64
# What a build spills, in bytes per lane (AMD: the scratch its VGPR spills take; a VGPR spilled into an AGPR
# costs no memory) or per thread (NVIDIA: ptxas' spill stores).
SPILL_BYTES = {AMD: "scratch_bytes", "NVIDIA": "spill_store_bytes"}


def spill_bytes(row: Row) -> int:
    """The bytes per lane or thread the build spills to memory (:data:`SPILL_BYTES`)."""
    return int(row.resources.get(SPILL_BYTES[get_target(row.target).vendor], 0))


def cannot_launch(row: Row) -> bool:
    """The build's occupancy is 0: one workgroup or block needs more LDS or shared memory (or registers)
    than a CU or SM has, and Triton refuses the launch (``OutOfResources``)."""
    vendor = get_target(row.target).vendor
    occupancy = next(f.name for f in FIGURES if f.vendor == vendor and f.kind == OCCUPANCY and f.worse < 0)
    return row.ok and row.resources.get(occupancy) == 0


def reason(row: Row, spill_above: int) -> Reason | None:
    """Why the build's config is pruned, or None (a good build; a failure of the moment is not judged)."""
    if row.failed and not row.transient:
        return Reason.FAILS_TO_BUILD
    if not row.ok:
        return None
    if cannot_launch(row):
        return Reason.CANNOT_LAUNCH
    if spill_bytes(row) > spill_above:
        return Reason.SPILLS
    return None


@dataclass(frozen=True)
class _ConfigIdentity:
    target: str
    kernel: str
    num_warps: int | None
    num_stages: int | None
    constexprs: tuple[tuple[str, Any], ...]


def prune_table(survey: Survey, spill_above: int = DEFAULT_SPILL_ABOVE) -> PruneTable:
    """The configs of ``survey``'s autotuned kernels that no launch should benchmark, per target."""
    groups: dict[_ConfigIdentity, list[Row]] = defaultdict(list)
    surveyed: dict[str, int] = {t: 0 for t in survey.targets}
    for row in survey.rows:
        if row.config is None or row.kernel is None or row.skipped or row.is_flaky:
            continue
        surveyed[row.target] = surveyed.get(row.target, 0) + 1
        identity = _ConfigIdentity(row.target, row.kernel, row.num_warps, row.num_stages,
                                   tuple(sorted((row.build or {}).items())))
        groups[identity].append(row)
    configs: dict[str, list[PrunedConfig]] = {t: [] for t in survey.targets}
    for identity, rows in groups.items():
        reasons = [reason(r, spill_above) for r in rows]
        if any(r is None for r in reasons):
            continue
        worst = max((r for r in reasons if r is not None), key=lambda r: r.badness)
        configs.setdefault(identity.target, []).append(PrunedConfig(
            kernel=identity.kernel, num_warps=identity.num_warps, num_stages=identity.num_stages,
            constexprs=dict(identity.constexprs), reason=worst, config=rows[0].config,
            builds=tuple(PrunedBuild(key=r.key, figures=dict(r.resources), compile_s=round(r.compile_s, 3),
                                     spill_bytes=spill_bytes(r) if r.ok else 0,
                                     error=r.error_line if r.failed else None) for r in rows)))
    return PruneTable(
        commit=survey.commit, label=survey.label, toolchain=survey.toolchain, spill_above=spill_above,
        configs={t: tuple(sorted(c, key=lambda p: (p.kernel, p.config if p.config is not None else -1)))
                 for t, c in configs.items()},
        surveyed=surveyed, created=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def table_lines(table: PruneTable) -> list[str]:
    """A line per target and kernel: how many configs are pruned and why, and the compile seconds they cost::

        gfx950 blockwise_fp8_gemm_kernel: 7 configs pruned (14 builds: 10 spill past 64 B, 4 cannot launch),
        247.1 s of compile
    """
    lines = []
    for target, configs in table.configs.items():
        if not configs:
            lines.append(f"{target}: no config pruned of {count(table.surveyed.get(target, 0), 'autotuned build')}")
            continue
        by_kernel: dict[str, list[PrunedConfig]] = defaultdict(list)
        for config in configs:
            by_kernel[config.kernel].append(config)
        for kernel, pruned in by_kernel.items():
            why = ", ".join(f"{sum(1 for p in pruned if p.reason is r)} {_reason_words(r, table.spill_above)}"
                            for r in Reason if any(p.reason is r for p in pruned))
            seconds = sum(p.compile_s for p in pruned)
            configs_pruned = len({(p.num_warps, p.num_stages, p.config) for p in pruned})
            lines.append(f"{target} {kernel}: {count(configs_pruned, 'config')} pruned ({count(len(pruned), 'build')}: "
                         f"{why}), {seconds:.1f} s of compile")
    return lines


def _reason_words(reason: Reason, spill_above: int) -> str:
    if reason is Reason.SPILLS:
        return f"spill past {spill_above} B"
    return str(reason)
