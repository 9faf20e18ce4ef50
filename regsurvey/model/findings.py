"""What the kernarg lint reports: one :class:`Finding` per kernel argument whose loaded value is never
read, and its one JSON form (:meth:`Finding.to_dict` / :meth:`Finding.from_dict`), the same in a stored
survey, the result cache, the lint's cache beside an object and ``regsurvey lint --json``.

Here in ``model/`` because a survey's rows carry findings (``Row.lint``) and comparing them needs no lint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .enums import TextEnum


class Severity(TextEnum):
    """``error``: a miscompile suspect (the source uses the argument, the machine code never reads it);
    ``note``: loaded (or preloaded) and never read, but nothing says the source needs it."""

    ERROR = "error"
    NOTE = "note"


ERROR = Severity.ERROR
NOTE = Severity.NOTE


@dataclass(frozen=True)
class Finding:
    """A kernel argument that is loaded into registers and never read on any path.

    ``arg_index`` is the argument's position in the kernel's metadata ``.args`` (AMD) or its PTX
    ``.param`` list (NVIDIA); ``arg_offset`` its byte offset in the kernarg segment (AMD) or in the
    parameter constant bank's parameter area (NVIDIA). ``load`` and ``line`` point at the instruction
    that loaded it (AMD: the ``s_load``, or for a preloaded argument the compatibility prologue's load;
    NVIDIA: the PTX ``ld.param``), ``line`` counting from 1 in the text that was linted. ``key`` (a
    survey row's id) or ``file`` say where the kernel came from; the lint leaves them None and its
    callers fill one in.
    """

    kernel: str
    target: str
    arg_index: int
    arg_offset: int
    arg_name: str | None
    severity: Severity  # a plain string is taken and checked (an unknown one is a ValueError)
    load: str
    line: int | None
    reason: str
    address: int | None = None  # byte offset of the load in the function, for a disassembly
    key: str | None = None
    file: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.severity, Severity):
            object.__setattr__(self, "severity", Severity(self.severity))

    @property
    def is_error(self) -> bool:
        """True for a miscompile suspect (severity ``error``)."""
        return self.severity is Severity.ERROR

    @property
    def identity(self) -> tuple[str, int, Severity]:
        """What makes two findings of one build the same finding: kernel, argument offset, severity.

        Not the load's line or instruction: unrelated edits move those while the same argument stays
        unread."""
        return self.kernel, self.arg_offset, self.severity

    @property
    def argument(self) -> str:
        """The argument as a kernel engineer names it: its Python name, else its position (``#3``)."""
        return self.arg_name or f"#{self.arg_index}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``key`` or ``file``, then the kernel, the argument and why."""
        where: dict[str, Any] = {}
        if self.key is not None:
            where["key"] = self.key
        if self.file is not None:
            where["file"] = self.file
        load: dict[str, Any] = {"instruction": self.load, "line": self.line}
        if self.address is not None:
            load["address"] = self.address
        return {
            **where,
            "target": self.target,
            "kernel": self.kernel,
            "arg_index": self.arg_index,
            "arg_offset": self.arg_offset,
            "arg_name": self.arg_name,
            "severity": self.severity.value,
            "load": load,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Finding:
        """Parse :meth:`to_dict`'s form; ValueError naming what is wrong with anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("load"), dict):
            raise ValueError(f"not a lint finding: {str(data)[:80]}")
        load = data["load"]
        finding = cls(kernel=data["kernel"], target=data["target"], arg_index=data["arg_index"],
                      arg_offset=data["arg_offset"], arg_name=data.get("arg_name"), severity=data["severity"],
                      load=load["instruction"], line=load.get("line"), reason=data["reason"],
                      address=load.get("address"), key=data.get("key"), file=data.get("file"))
        for name in ("kernel", "target", "load", "reason"):
            if not isinstance(getattr(finding, name), str):
                raise ValueError(f"lint finding's {name} is {getattr(finding, name)!r}, not text")
        for name in ("arg_index", "arg_offset"):
            value = getattr(finding, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"lint finding's {name} is {value!r}, not a whole number")
        return finding


def findings_from_json(items: Any) -> tuple[Finding, ...]:
    """A JSON list of findings (:meth:`Finding.to_dict` each); ValueError for anything else."""
    if not isinstance(items, list):
        raise ValueError("lint findings are not a list")
    try:
        return tuple(Finding.from_dict(item) for item in items)
    except KeyError as exc:
        raise ValueError(f"lint finding without {exc}") from None


@dataclass(frozen=True)
class LintReport:
    """What ``regsurvey lint`` shows: the findings of every object linted, and how many kernels were."""

    findings: tuple[Finding, ...]
    kernels: int
