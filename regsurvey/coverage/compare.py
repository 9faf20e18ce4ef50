"""Both sides' specializations set against each other, per kernel, by Triton hash: pure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from ..model.coverage import Coverage, Difference, KernelCoverage, Specialization, Unmatched

# Options that differ whenever anything does, or that say nothing a kernel engineer chose.
_QUIET_OPTIONS = frozenset({"debug", "sanitize_overflow", "instrumentation_mode", "backend_name"})


def differences(key: Specialization, launch: Specialization) -> tuple[Difference, ...]:
    """What differs between a key's specialization and a real launch's of the same kernel: each argument's
    type (``dtype``; ``argument`` where one side passes it as a constexpr and the other not), its divisibility
    by 16, each constexpr's value, each option's."""
    found: list[Difference] = []
    for name in dict.fromkeys([*key.arguments, *launch.arguments]):
        a, b = key.arguments.get(name), launch.arguments.get(name)
        if a != b:
            what = "dtype" if a and b and "constexpr" not in (a, b) else "argument"
            found.append(Difference(what, name, a, b))
    for name in dict.fromkeys([*key.arguments, *launch.arguments]):
        a_div, b_div = name in key.divisible, name in launch.divisible
        if a_div != b_div and key.arguments.get(name) == launch.arguments.get(name):
            found.append(Difference("divisibility", name, a_div, b_div))
    for name in dict.fromkeys([*key.constexprs, *launch.constexprs]):
        a, b = key.constexprs.get(name), launch.constexprs.get(name)
        if a != b:
            found.append(Difference("constexpr", name, a, b))
    for name in dict.fromkeys([*key.options, *launch.options]):
        if name in _QUIET_OPTIONS:
            continue
        a, b = key.options.get(name), launch.options.get(name)
        if a != b:
            found.append(Difference("option", name, a, b))
    return tuple(found)


def _nearest(spec: Specialization, others: list[Specialization], key_side: bool) -> Unmatched:
    """``spec`` with the specialization of ``others`` fewest things differ from (the first on a tie)."""
    best: Unmatched = Unmatched(spec, None, ())
    for other in others:
        diff = differences(spec, other) if key_side else differences(other, spec)
        if best.nearest is None or len(diff) < len(best.differences):
            best = Unmatched(spec, other, diff)
    return best


def coverage(target: str, capture: str, records: int, keys: int, key_specs: Iterable[Specialization],
             real_specs: Iterable[Specialization], unreplayable: tuple[str, ...] = (),
             key_errors: tuple[str, ...] = ()) -> Coverage:
    """Per kernel launched on either side: the real launches the keys cover, those they miss (each with the
    nearest key and what differs), and the keys no real launch used (each with the nearest real launch)."""
    by_kernel_keys: dict[str, list[Specialization]] = defaultdict(list)
    by_kernel_real: dict[str, list[Specialization]] = defaultdict(list)
    for spec in key_specs:
        by_kernel_keys[spec.kernel].append(spec)
    for spec in real_specs:
        by_kernel_real[spec.kernel].append(spec)
    kernels = []
    for kernel in dict.fromkeys([*by_kernel_real, *by_kernel_keys]):
        ours, theirs = by_kernel_keys.get(kernel, []), by_kernel_real.get(kernel, [])
        key_hashes = {s.triton_hash for s in ours}
        real_hashes = {s.triton_hash for s in theirs}
        missed = tuple(_nearest(s, ours, key_side=False) for s in theirs if s.triton_hash not in key_hashes)
        unused = tuple(_nearest(s, theirs, key_side=True) for s in ours if s.triton_hash not in real_hashes)
        covered = sum(s.launches for s in theirs if s.triton_hash in key_hashes)
        name = (theirs or ours)[0].name
        kernels.append(KernelCoverage(kernel=kernel, name=name, covered=covered, missed=missed, unused=unused))
    return Coverage(target=target, capture=capture, records=records, keys=keys, kernels=tuple(kernels),
                    unreplayable=unreplayable, key_errors=key_errors)
