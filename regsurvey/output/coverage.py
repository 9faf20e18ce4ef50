"""The coverage report's text: a line for the whole, then per kernel what the keys miss and what no real
launch used, each with the nearest launch of the other side and what differs."""

from __future__ import annotations

from typing import Any

from ..model.coverage import Coverage, Difference, Unmatched
from ..model.words import count

SHOWN = 8  # unmatched launches told per kernel and side, then "and N more"


def coverage_text(result: Coverage) -> str:
    """The report, a line each."""
    lines = [f"{result.capture} on {result.target}: {count(result.records, 'real launch')}, "
             f"{result.covered} covered by {count(result.keys, 'key')}, {result.missed_launches} missed"
             + (" (each a JIT compile in production)" if result.missed_launches else "")]
    for kernel in result.kernels:
        if not kernel.missed and not kernel.unused:
            lines.append(f"{kernel.name} ({kernel.kernel}): {count(kernel.covered, 'launch')} covered")
            continue
        lines.append(f"{kernel.name} ({kernel.kernel}): {count(kernel.covered, 'launch')} covered, "
                     f"{kernel.missed_launches} missed in {count(len(kernel.missed), 'specialization')}, "
                     f"{count(len(kernel.unused), 'key specialization')} unused")
        lines += _told("missed", kernel.missed, key_side=False)
        lines += _told("unused", kernel.unused, key_side=True)
    lines += [f"not replayed: {p}" for p in result.unreplayable]
    lines += [f"key raised: {p}" for p in result.key_errors]
    return "\n".join(lines) + "\n"


def _told(word: str, unmatched: tuple[Unmatched, ...], key_side: bool) -> list[str]:
    lines = []
    for item in unmatched[:SHOWN]:
        spec = item.launch
        what = spec.source + (f" ({count(spec.launches, 'launch')})" if not key_side and spec.launches > 1 else "")
        if item.nearest is None:
            lines.append(f"  {word}: {what}: " + ("the capture never launches this kernel" if key_side
                                                   else "the keys never launch this kernel"))
            continue
        said = "; ".join(difference_text(d) for d in item.differences) or "the same arguments (another source?)"
        lines.append(f"  {word}: {what}, nearest {item.nearest.source}: {said}")
    if len(unmatched) > SHOWN:
        lines.append(f"  and {len(unmatched) - SHOWN} more {word}")
    return lines


def difference_text(d: Difference) -> str:
    """``x: dtype *bf16 in the key, *fp16 in the launch``, ``x: divisible by 16 in the key, not in the
    launch``, ``BLOCK_N: 64 in the key, 128 in the launch``."""
    if d.what == "divisibility":
        where = "in the key, not in the launch" if d.key else "in the launch, not in the key"
        return f"{d.argument}: divisible by 16 {where}"
    if d.what == "argument":  # passed on one side, a constexpr (None) or absent on the other
        return f"{d.argument}: {_value(d.key)} in the key, {_value(d.launch)} in the launch"
    return f"{d.argument}: {d.what} {_value(d.key)} in the key, {_value(d.launch)} in the launch"


def _value(value: Any) -> str:
    if value == "constexpr":
        return "a constexpr"
    return "absent" if value is None else str(value)
