"""The outcome of building every row of one revision twice (``regsurvey rebuild-check``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class RebuildDifference:
    """One build whose second compile did not give the same result."""

    target: str
    row_id: str
    key: str
    kernel: str | None
    first_sha256: str | None  # None: the build failed (or was missing) that time
    second_sha256: str | None
    section: str  # the first differing ELF section, or "<status>" when only one compile built
    detail: str


@dataclass(frozen=True)
class RebuildCheck:
    """The outcome of building every row of one revision twice."""

    label: str
    commit: str | None
    builds: int  # rows compared
    differences: tuple[RebuildDifference, ...]

    @property
    def deterministic(self) -> bool:
        """True when every row built the same object both times."""
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return {"label": self.label, "commit": self.commit, "builds": self.builds,
                "deterministic": self.deterministic, "differences": [asdict(d) for d in self.differences]}
