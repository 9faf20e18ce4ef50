"""``regsurvey fix``'s report as text: per build, its variants ranked in a table, what each did to the code,
the control's verdict, and the launch options and constexprs of the best."""

from __future__ import annotations

from ..model.figures import figure
from ..model.fix import BuildFix, Effect, FixReport, Tried
from ..model.words import count

SHOWN_RANKS = 12  # rows of a build's table; the rest counted under it


def fix_text(report: FixReport) -> str:
    """Every build's table and verdict, then a line counting what was compiled."""
    parts = [_build_text(build) for build in report.builds]
    parts.append(f"{count(report.variants, 'variant')} of {count(len(report.builds), 'build')} of "
                 f"{report.label} in {report.seconds:.1f} s")
    return "\n\n".join(parts) + "\n"


def _build_text(build: BuildFix) -> str:
    base = build.base_tried
    changed = sum(t.effect is Effect.CHANGED for t in build.ranked) - 1
    quiet = sum(t.effect is Effect.NO_EFFECT for t in build.ranked)
    failed = sum(t.effect is Effect.FAILED for t in build.ranked)
    controls = sum(c is not None for c in (build.control, build.llvm_control))
    control = {0: "", 1: " and the control", 2: " and the controls"}[controls]
    lines = [f"{build.name} on {build.base.target} (base: num_warps={build.base.num_warps} "
             f"num_stages={build.base.num_stages}): {count(len(build.ranked) - 1, 'variant')}{control}, "
             f"{changed} changed the code, {quiet} no effect, {failed} failed"]
    headers = ["#", "variant", *(figure(name).label for name in build.figures), "effect"]
    rows = [[str(i + 1), t.variant.label, *(_value(t, name) for name in build.figures), _effect(t)]
            for i, t in enumerate(build.ranked[:SHOWN_RANKS])]
    lines += _table(headers, rows)
    if len(build.ranked) > SHOWN_RANKS:
        lines.append(f"  ... and {count(len(build.ranked) - SHOWN_RANKS, 'more variant')}")
    if build.control is not None:
        lines.append(_control_line(build.control, "", _LAUNCH_CONTROL))
    if build.llvm_control is not None:
        lines.append(_control_line(build.llvm_control, " (its stored LLVM IR compiled again)", _LLVM_CONTROL))
    lines.append(_verdict(build, base))
    return "\n".join(lines)


# What each control's effect says: the launch option that never changes the code, and the stored LLVM IR
# compiled again with no option.
_LAUNCH_CONTROL = {Effect.NO_EFFECT: "no effect (the base's object, byte for byte): an object that differs is a knob "
                                     "that reached the code",
                   Effect.CHANGED: "CHANGED the object: objects differ without a knob here, and 'changed' proves "
                                   "nothing for this build"}
_LLVM_CONTROL = {Effect.NO_EFFECT: "the base's object, byte for byte: the LLVM-option variants compile what the base "
                                   "compiled",
                 Effect.CHANGED: "NOT the base's object: the stored LLVM IR compiles to another, and the LLVM-option "
                                 "variants' figures are not the base's code with an option"}


def _control_line(tried: Tried, how: str, verdicts: dict[Effect, str]) -> str:
    """``control LABEL[how]: what its effect says``."""
    verdict = f"failed: {_first_line(tried.row.error)}" if tried.effect is Effect.FAILED else verdicts[tried.effect]
    return f"control {tried.variant.label}{how}: {verdict}"


def _verdict(build: BuildFix, base: Tried) -> str:
    best = build.best
    loops = best.row.resources.get("loop_spill_ops") or 0
    base_loops = base.row.resources.get("loop_spill_ops") or 0
    if not build.improves:
        return (f"no variant within the space ranks above the base ({base_loops} spill instructions in loops); "
                f"the best is the base")
    fewer = (f"{base_loops} → {loops} spill instructions in loops" if loops < base_loops
             else f"no fewer spill instructions in loops ({loops}), but ranks above the base")
    launch = ", ".join(f"{name}={value!r}" for name, value in best.variant.options)
    constexprs = ", ".join(f"{name}={value!r}" for name, value in best.variant.constexprs)
    use = "; ".join(part for part in (f"launch options {launch}" if launch else "",
                                      f"constexprs {constexprs}" if constexprs else "") if part)
    config = f" (autotune config {best.variant.config} with these)" if best.variant.config is not None else ""
    if best.variant.llvm:
        use = (f"the LLVM option{'s' if len(best.variant.llvm) > 1 else ''} "
               f"{', '.join('-' + flag for flag in best.variant.llvm)} (compiled from the base's LLVM IR: no launch "
               f"option passes one, and Triton sets LLVM's options for every compile of its process)")
        config = ""
    text = f"best: {best.variant.label}: {fewer}\nuse: {use}{config}"
    source = best.row.config_source
    if source:
        entry = "".join(f"[{part!r}]" for part in source["path"])
        text += (f"\nthe launcher took this launch's config from {source['file']}{entry} ({source['opened']})")
        text += (f"; as a patch to it (--patch FILE writes it):\n{build.patch.rstrip()}" if build.patch else
                 "; its layout cannot be written again line for line: change the entry by hand")
    return text


def _value(tried: Tried, name: str) -> str:
    if not tried.row.ok:
        return "-"
    value = tried.row.resources.get(name)
    return "" if value is None else str(value)


def _effect(tried: Tried) -> str:
    if tried.variant.is_base:
        return "base"
    if tried.effect is Effect.FAILED:
        return f"failed: {_first_line(tried.row.error)[:60]}"
    return str(tried.effect)


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else "no build"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            # names left, figures right
            out.append(cell.ljust(widths[i]) if i in (1, len(cells) - 1) else cell.rjust(widths[i]))
        return "  " + "  ".join(out).rstrip()

    return [line(headers), *(line(r) for r in rows)]
