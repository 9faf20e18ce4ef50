"""What ``regsurvey history`` reports: figures over the commits of a range, or over toolchains surveying one
revision (``history --toolchains``), per kind and target."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .figures import TIME, figure
from .words import ARROW, ASCII_ARROW

# The revision of a history across toolchains (``History.spec``) that is the working tree as it is.
WORKING_TREE = "working tree"


@dataclass(frozen=True)
class HistoryCommit:
    """One point of the history: a commit, or across toolchains one toolchain (``toolchain``; ``sha`` is then
    the one revision's commit at every point), and what its diff against the point before it says."""

    sha: str
    subject: str
    # The prose summary of its diff against the previous point (its parent, unless --every skips
    # commits; the first point has none), worst first: each sentence as the words between its arrows,
    # which each report draws its own way (diff.summary.SummaryLine).
    summary: tuple[tuple[str, ...], ...] = ()
    counts: dict[str, int] | None = None  # builds per mark of that diff (None for the first point)
    builds: int = 0  # builds in its survey (of the selection)
    failed: int = 0  # of which failed
    # The commits its diff covers: 1 against its parent; under --every, the commits after the point before
    # up to this one, any of which may have made a change the diff shows (0 for the first point).
    span: int = 1
    # Across toolchains: the toolchain's name (``triton 3.6.0``) and its interpreter (None: the environment
    # regsurvey ran in); what differs in it from the point before's, per backend and part (ToolchainChange's
    # sentences, as the words between their arrows); and the summary's sentences on the first compiler stage
    # that differs (diff.stage_summary), kept apart from ``summary`` so that no report cuts them.
    toolchain: str | None = None
    python: str | None = None
    toolchain_changes: tuple[tuple[str, ...], ...] = ()
    stages: tuple[str, ...] = ()

    def sentences(self, arrow: str = ARROW) -> tuple[str, ...]:
        """The summary's sentences, with ``arrow`` between a before and an after."""
        return tuple(f" {arrow} ".join(segments) for segments in self.summary)

    def toolchain_sentences(self, arrow: str = ARROW) -> tuple[str, ...]:
        """What differs in the toolchain from the point before (``hip triton: 3.6.0 → 3.9.0``)."""
        return tuple(f" {arrow} ".join(segments) for segments in self.toolchain_changes)

    def to_dict(self) -> dict[str, Any]:
        out = {**asdict(self), "summary": list(self.sentences(ASCII_ARROW))}
        for name in ("toolchain", "python", "toolchain_changes", "stages"):
            del out[name]
        if self.toolchain is not None:  # a point of a history across toolchains
            out.update(toolchain=self.toolchain, python=self.python,
                       toolchain_changes=list(self.toolchain_sentences(ASCII_ARROW)), stages=list(self.stages))
        return out


@dataclass(frozen=True)
class Point:
    """One figure of one kind on one target at one commit: the largest and smallest value over the
    kind's builds that built (None when none did), how many built, and how many failed; and of the
    builds that built here and at the point before, how many this figure moved (``moved``), of which
    ``worse`` and ``better`` by the figure registry's verdict. A build can move while the largest and
    smallest stay (one of eight builds going from 1 to 2 waves): ``moved`` says so where they cannot.

    Compile time (``compile_s``) is in seconds, over the builds whose compile was measured; ``moved`` counts
    those it moved notably, ``worse`` the pathological slowdowns (model.compile_time)."""

    max: float | None  # a whole number but for compile time
    min: float | None
    built: int
    failed: int
    moved: int = 0
    worse: int = 0
    better: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Series:
    """A figure of a kind on a target over the history's commits (one point per commit, in order)."""

    kind: str
    target: str
    figure: str
    points: tuple[Point, ...]

    @property
    def changed(self) -> bool:
        """Whether any build's figure moved anywhere along the history, a build failed, or builds came
        or went; unchanged only when none of the kind's builds changed. Compile time, which a loaded
        machine moves, changed only where a build's moved notably."""
        if figure(self.figure).kind == TIME:
            return len({p.built for p in self.points}) > 1 or any(p.failed or p.moved for p in self.points)
        seen = {(p.max, p.min, p.built) for p in self.points}
        return len(seen) > 1 or any(p.failed or p.moved for p in self.points)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "figure": self.figure,
                "points": [p.to_dict() for p in self.points]}


@dataclass(frozen=True)
class History:
    """The commits of a range (oldest first; the first is the range's base) and the series over them; or,
    ``across_toolchains``, one revision under each of a list of toolchains (in the order given), each point
    (``commits``) a toolchain, each judged against the one before across the toolchains."""

    spec: str  # "HEAD~20..HEAD" as given; across toolchains the revision ("HEAD", "working tree")
    commits: tuple[HistoryCommit, ...]
    series: tuple[Series, ...]
    every: int = 1  # one commit in N was surveyed (the last always is)
    figures: tuple[str, ...] = ()
    across_toolchains: bool = False

    @property
    def noun(self) -> str:
        """What a point is: ``commit``, or ``toolchain``."""
        return "toolchain" if self.across_toolchains else "commit"

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec, "across_toolchains": self.across_toolchains, "every": self.every,
                "figures": list(self.figures), "commits": [c.to_dict() for c in self.commits],
                "series": [s.to_dict() for s in self.series]}
