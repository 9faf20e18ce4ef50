"""What the lint reports: one finding per kernel argument whose loaded value is never read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ERROR = "error"  # a miscompile suspect: the source uses the argument, the machine code never reads it
NOTE = "note"  # loaded (or preloaded) and never read, but nothing says the source needs it


@dataclass(frozen=True)
class Finding:
    """A kernel argument that is loaded into registers and never read on any path.

    ``arg_index`` is the argument's position in the kernel's metadata ``.args`` (AMD) or its PTX
    ``.param`` list (NVIDIA); ``arg_offset`` its byte offset in the kernarg segment (AMD) or in the
    parameter constant bank's parameter area (NVIDIA). ``load`` and ``line`` point at the instruction
    that loaded it (AMD: the ``s_load``, or for a preloaded argument the compatibility prologue's load;
    NVIDIA: the PTX ``ld.param``), ``line`` counting from 1 in the text that was linted. ``key`` or
    ``file`` say where the kernel came from; the library leaves them None and its callers fill one in.
    """

    kernel: str
    target: str
    arg_index: int
    arg_offset: int
    arg_name: str | None
    severity: str  # ERROR or NOTE
    load: str
    line: int | None
    reason: str
    address: int | None = None  # byte offset of the load in the function, for a disassembly
    key: str | None = None
    file: str | None = None

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
            "severity": self.severity,
            "load": load,
            "reason": self.reason,
        }
