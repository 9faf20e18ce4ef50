"""The committed baseline of ``regsurvey check``: ``regsurvey.baseline.toml`` at the repository root.

It holds the gate's rules (the ``[check]`` table) and the figures the project has accepted, per key
pattern, each with a reason (``[[allow]]`` entries)::

    [check]
    register_increase = 16        # also fail when a register count rises by more than 16
    compile_slowdown = 10         # fail a build whose compile takes 10 times as long (false: never) ...
    compile_slowdown_s = 30       # ... and over 30 s (these two are the defaults)

    [[allow]]
    key = "mla_decode/tp4/w8/*"   # glob over key ids
    target = "gfx950"             # optional: one target (aliases such as mi355x accepted)
    kernel = "mla_decode_*"       # optional: glob over kernel names
    vgpr_spill = 64               # any figure of the survey: allowed up to this value
    sgpr_spill = 20
    loop_spill_ops = 0            # (the default for an entry that does not name it: none more in loops)
    reason = "w8 fp8 attention: the 512-wide accumulator does not fit; tracked in #123"

A figure that is worse when it shrinks (``occupancy``, ``occupancy_warps``) is allowed down to the value.
An entry that allows a spill figure also allows its companion unless it names the companion too
(scratch with VGPR spills; spill loads and stack with spill stores): they move together.

Anything the gate cannot trust is a :class:`BaselineError` with one line naming the file and the entry:
invalid TOML, an unknown table, key, target or figure, a value that is not a non-negative integer, an
entry without a reason or with a placeholder reason (``TODO``...): an allowance nobody explained must
never merge. TOML is read with :mod:`tomllib` (Python 3.11+) or the ``tomli`` package it came from.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from ..model.compile_time import SLOWDOWN_FACTOR, SLOWDOWN_OVER_S
from ..model.figures import FIGURE_BY_NAME, FIGURE_ORDER, figure
from ..model.targets import UnknownTargetError, get_target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

BASELINE_FILE = "regsurvey.baseline.toml"

# Reasons that only hold a place: "TODO: explain", "FIXME", "tbd", "XXX ...".
_PLACEHOLDER = re.compile(r"^\s*(todo|fixme|tbd|xxx)\b|^\s*$", re.IGNORECASE)
_HEADER = re.compile(r"^\s*\[\[?\s*[A-Za-z0-9_.\"' -]+\s*\]\]?\s*(#.*)?$")
_ALLOW_HEADER = re.compile(r"^\s*\[\[\s*allow\s*\]\]\s*(#.*)?$")
_ENTRY_FIELDS = ("key", "target", "kernel", "reason")


def check_reason(reason: str) -> None:
    """BaselineError when ``reason``, given to ``--update-baseline``, only holds a place ("TODO", blank)."""
    if _PLACEHOLDER.search(reason):
        raise BaselineError(f"--reason {json.dumps(reason)} is a placeholder: say why these figures are acceptable")


class BaselineError(ValueError):
    """A baseline file the gate cannot use; the message is one line naming the file (and entry)."""


@dataclass(frozen=True)
class CheckRules:
    """What fails the gate: the baseline's ``[check]`` table, every key optional.

    The defaults are what a kernel engineer reviewing a change expects to be stopped by: a build that
    no longer builds, a new miscompile suspect, any new spill, any new spill inside a loop (judged apart,
    so that a baseline allowing a kernel's prologue spills still fails new ones in its loops), and any
    occupancy lost. A register count
    that rises without costing occupancy or spilling is the compiler using what it has; it fails only
    past ``register_increase`` (registers more than the base's by more than this many), which is unset
    by default. Compile time, which a loaded machine moves by tens of percent, fails only a pathological
    slowdown: a build whose compile takes ``compile_slowdown`` times as long as the base's (10) and over
    ``compile_slowdown_s`` seconds (30) now (``model.compile_time``); ``compile_slowdown = false`` never.
    """

    newly_failing: bool = True  # a build that built on the base fails on the head (or a new build fails)
    lint_errors: bool = True  # a new kernarg-lint finding of severity error (a miscompile suspect)
    spill_increase: bool = True  # a spill figure higher than the base's (than 0 for a new build)
    loop_spill_increase: bool = True  # more spill instructions in loops, or in a deeper one, than the base's
    occupancy_drop: bool = True  # fewer waves per SIMD / warps per SM than the base
    register_increase: int | None = None  # VGPR/AGPR/SGPR/regs up by more than this; None: never alone
    compile_slowdown: float | None = SLOWDOWN_FACTOR  # a compile this many times as long ...; None: never
    compile_slowdown_s: float = SLOWDOWN_OVER_S  # ... and over this many seconds


@dataclass(frozen=True)
class Allowance:
    """One ``[[allow]]`` entry: figures accepted for the builds whose key (target, kernel) match."""

    number: int  # its position among the file's [[allow]] entries, from 1 (for messages)
    key: str  # glob over key ids
    reason: str
    figures: Mapping[str, int] = field(default_factory=dict)
    target: str | None = None  # a target's canonical name
    kernel: str | None = None  # glob over kernel names

    def matches(self, key: str, target: str, kernel: str | None) -> bool:
        """True when this entry speaks of the build ``key`` on ``target`` launching ``kernel``."""
        return (fnmatchcase(key, self.key) and (self.target is None or self.target == target)
                and (self.kernel is None or (kernel is not None and fnmatchcase(kernel, self.kernel))))

    def limit(self, name: str) -> int | None:
        """The value this entry allows for figure ``name`` (None: it says nothing of it)."""
        return self.figures.get(name)

    def allows(self, name: str, value: int) -> bool:
        """True when figure ``name`` at ``value`` is within this entry (a companion rides with its parent)."""
        limit = self.figures.get(name)
        if limit is None:
            parent = figure(name).companion_of
            return parent is not None and parent in self.figures
        return value >= limit if figure(name).worse < 0 else value <= limit

    def describe(self) -> str:
        """``entry 2 (key "gemm/*", target sm90)``."""
        scope = [f"key {json.dumps(self.key)}"]
        scope += [f"target {self.target}"] if self.target else []
        scope += [f"kernel {json.dumps(self.kernel)}"] if self.kernel else []
        return f"entry {self.number} ({', '.join(scope)})"


@dataclass(frozen=True)
class Baseline:
    """The gate's rules and accepted figures; ``path`` is where they were (or would be) read from."""

    path: Path | None = None
    rules: CheckRules = CheckRules()
    allow: tuple[Allowance, ...] = ()
    found: bool = False  # False: no baseline file, the defaults apply

    def allowance(self, key: str, target: str, kernel: str | None, name: str, value: int) -> Allowance | None:
        """The first entry matching the build that allows figure ``name`` at ``value``, if any."""
        return next((a for a in self.allow if a.matches(key, target, kernel) and a.allows(name, value)), None)

    def limits(self, key: str, target: str, kernel: str | None, name: str) -> list[tuple[Allowance, int]]:
        """Entries matching the build that name figure ``name``, with the value each allows."""
        return [(a, limit) for a in self.allow if a.matches(key, target, kernel)
                and (limit := a.limit(name)) is not None]


def load_baseline(path: Path, required: bool = False) -> Baseline:
    """Read the baseline at ``path``; a missing file is the defaults, unless ``required`` (given by the
    user). Raises :class:`BaselineError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise BaselineError(f"{path}: no such baseline file") from None
        return Baseline(path=path)
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: unreadable ({exc})") from None
    return parse_baseline(text, path)


def parse_baseline(text: str, path: Path | str = BASELINE_FILE) -> Baseline:
    """The baseline in ``text`` (``path`` names it in messages). Raises :class:`BaselineError`."""
    where = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BaselineError(f"{where}: not valid TOML ({exc})") from None
    unknown = sorted(set(data) - {"check", "allow"})
    if unknown:
        raise BaselineError(f"{where}: unknown table or key {unknown[0]!r} (a baseline holds [check] and "
                            "[[allow]] entries)")
    rules = _rules(data.get("check", {}), where)
    entries = data.get("allow", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise BaselineError(f"{where}: 'allow' must be [[allow]] tables")
    allow = tuple(_allowance(entry, number, where) for number, entry in enumerate(entries, start=1))
    return Baseline(path=Path(path), rules=rules, allow=allow, found=True)


def _rules(table: Any, where: str) -> CheckRules:
    if not isinstance(table, dict):
        raise BaselineError(f"{where}: [check] must be a table")
    known = {f.name for f in fields(CheckRules)}
    for name, value in table.items():
        if name not in known:
            raise BaselineError(f"{where}: [check]: unknown setting {name!r} (settings: {', '.join(sorted(known))})")
        if name == "register_increase":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BaselineError(f"{where}: [check]: register_increase must be a non-negative integer "
                                    f"(registers a build may gain), not {value!r}")
        elif name == "compile_slowdown":
            if value is not True and value is not False and not _number(value, at_least=1):
                raise BaselineError(f"{where}: [check]: compile_slowdown must be a factor of 1 or more (how many "
                                    f"times as long a build's compile may take), or false, not {value!r}")
        elif name == "compile_slowdown_s":
            if not _number(value, at_least=0):
                raise BaselineError(f"{where}: [check]: compile_slowdown_s must be a number of seconds of 0 or "
                                    f"more, not {value!r}")
        elif not isinstance(value, bool):
            raise BaselineError(f"{where}: [check]: {name} must be true or false, not {value!r}")
    settings = dict(table)
    if "compile_slowdown" in settings:  # true: the default factor; false: the rule off
        factor = settings["compile_slowdown"]
        settings["compile_slowdown"] = SLOWDOWN_FACTOR if factor is True else None if factor is False else float(factor)
    if "compile_slowdown_s" in settings:
        settings["compile_slowdown_s"] = float(settings["compile_slowdown_s"])
    return CheckRules(**settings)


def _number(value: Any, at_least: float) -> bool:
    """True for an int or float (not a bool), finite, of ``at_least`` or more."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) \
        and value >= at_least


# ``check --compile-slowdown``: "off", or a factor and/or seconds ("10x,30s", "5x", "60s").
_SLOWDOWN_OPTION = re.compile(r"^\s*(?:(?P<factor>\d+(?:\.\d+)?)\s*x)?\s*,?\s*(?:(?P<over>\d+(?:\.\d+)?)\s*s)?\s*$")


def with_compile_slowdown(rules: CheckRules, text: str) -> CheckRules:
    """``rules`` with the compile-slowdown rule that ``text`` gives (``check --compile-slowdown``, which
    overrides the baseline's ``[check]``): ``off``, or ``FACTORx,SECONDSs`` (``10x,30s``; either part alone
    keeps the other's setting). BaselineError in one line for anything else."""
    if text.strip().lower() == "off":
        return replace(rules, compile_slowdown=None)
    found = _SLOWDOWN_OPTION.match(text)
    factor, over = (found["factor"], found["over"]) if found else (None, None)
    if found is None or (factor is None and over is None) or (factor is not None and float(factor) < 1):
        raise BaselineError(f"--compile-slowdown {json.dumps(text)}: give FACTORx,SECONDSs (e.g. 10x,30s: a build "
                            "whose compile takes 10 times as long and over 30 s fails), FACTORx, SECONDSs or off")
    return replace(rules, compile_slowdown=float(factor) if factor is not None else rules.compile_slowdown or
                   SLOWDOWN_FACTOR, compile_slowdown_s=float(over) if over is not None else rules.compile_slowdown_s)


def _allowance(entry: dict[str, Any], number: int, where: str) -> Allowance:
    key = entry.get("key")
    label = f"{where}: [[allow]] entry {number}" + (f" (key {json.dumps(key)})" if isinstance(key, str) else "")
    if not isinstance(key, str) or not key.strip():
        raise BaselineError(f"{label}: no key (a glob over key ids, e.g. \"mla_decode/tp4/*\")")
    for name in ("target", "kernel", "reason"):
        if name in entry and not isinstance(entry[name], str):
            raise BaselineError(f"{label}: {name} must be a string")
    reason = entry.get("reason")
    if reason is None or not reason.strip():
        raise BaselineError(f"{label}: no reason: say why these figures are acceptable")
    if _PLACEHOLDER.search(reason):
        raise BaselineError(f"{label}: the reason {json.dumps(reason)} is a placeholder: say why these figures "
                            "are acceptable before merging")
    target = entry.get("target")
    if target is not None:
        try:
            target = get_target(target).name
        except UnknownTargetError as exc:
            raise BaselineError(f"{label}: {exc}") from None
    figures: dict[str, int] = {}
    for name, value in entry.items():
        if name in _ENTRY_FIELDS:
            continue
        if name not in FIGURE_BY_NAME:
            known = ", ".join(sorted(FIGURE_BY_NAME, key=FIGURE_ORDER.__getitem__))
            raise BaselineError(f"{label}: unknown figure {name!r} (figures: {known})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BaselineError(f"{label}: {name} must be a non-negative integer, not {value!r}")
        figures[name] = value
    if not figures:
        raise BaselineError(f"{label}: allows no figure (name one, e.g. vgpr_spill = 64)")
    return Allowance(number=number, key=key, reason=reason, figures=figures, target=target,
                     kernel=entry.get("kernel"))


# ---- writing (check --update-baseline) --------------------------------------------------------------

_NEW_FILE_HEADER = """\
# regsurvey check: figures this project accepts, per key, each with a reason (regsurvey's docs/ci.md).
# A build fails the gate when it stops building, gains a miscompile suspect, spills more or loses
# occupancy, unless an [[allow]] entry matching its key (target, kernel) allows the figure.
"""


def _toml_string(text: str) -> str:
    # A JSON string is a valid TOML basic string: the same quote and backslash escapes.
    return json.dumps(text, ensure_ascii=False)


def entry_text(allowance: Allowance) -> str:
    """One ``[[allow]]`` entry as TOML: key, target, kernel, figures in display order, reason."""
    lines = ["[[allow]]", f"key = {_toml_string(allowance.key)}"]
    if allowance.target is not None:
        lines.append(f"target = {_toml_string(allowance.target)}")
    if allowance.kernel is not None:
        lines.append(f"kernel = {_toml_string(allowance.kernel)}")
    for name in sorted(allowance.figures, key=lambda n: FIGURE_ORDER.get(n, len(FIGURE_ORDER))):
        lines.append(f"{name} = {allowance.figures[name]}")
    lines.append(f"reason = {_toml_string(allowance.reason)}")
    return "\n".join(lines) + "\n"


def _looser(name: str, a: int, b: int) -> int:
    return min(a, b) if figure(name).worse < 0 else max(a, b)


def updated_baseline_text(text: str | None, needed: list[Allowance], reason: str, path: str = BASELINE_FILE) -> str:
    """The baseline ``text`` (None: no file yet) with ``needed`` allowed, each with ``reason``.

    An existing entry for exactly the same key, target and kernel (no other glob) is rewritten in
    place: its figures and the needed ones, the looser value of each, and the new reason. Any other
    needed allowance is appended as a new entry. Everything else in the file (comments, the ``[check]``
    table, other entries) is kept as it was. Raises :class:`BaselineError` for an unusable ``text`` or
    ``reason``.
    """
    check_reason(reason)
    existing = parse_baseline(text, path).allow if text is not None else ()
    lines = (text or _NEW_FILE_HEADER).splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # The [[allow]] headers, in order, are the parsed entries, in order.
    starts = [i for i, line in enumerate(lines) if _ALLOW_HEADER.match(line)]
    replaced: dict[int, str] = {}  # header line -> the entry's new text
    appended: list[str] = []
    for want in needed:
        same = next((i for i, a in enumerate(existing) if (a.key, a.target, a.kernel) ==
                     (want.key, want.target, want.kernel)), None)
        if same is None:
            appended.append(entry_text(Allowance(0, want.key, reason, dict(want.figures), want.target,
                                                 want.kernel)))
            continue
        old = existing[same]
        merged = dict(old.figures)
        for name, value in want.figures.items():
            merged[name] = _looser(name, merged[name], value) if name in merged else value
        replaced[starts[same]] = entry_text(Allowance(old.number, old.key, reason, merged, old.target, old.kernel))
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i not in replaced:
            out.append(lines[i])
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if _HEADER.match(lines[j])), len(lines))
        # Comments and blank lines just before the next header belong to that header: keep them.
        tail = end
        while tail > i + 1 and (not lines[tail - 1].strip() or lines[tail - 1].lstrip().startswith("#")):
            tail -= 1
        out.append(replaced[i])
        out.extend(lines[tail:end])
        i = end
    result = "".join(out)
    for block in appended:
        result += ("\n" if result.strip() else "") + block
    parse_baseline(result, path)  # what was written must read back
    return result
