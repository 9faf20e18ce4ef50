"""What ``regsurvey bisect`` finds: each judged commit's :class:`Verdict`, and the :class:`BisectResult` of
the search (the first commit whose matching builds show the change, its diff against its parent), which
every format of the report writes down (:mod:`regsurvey.output.bisect`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .comparison import Comparison
from .words import ARROW, count

GOOD, BAD, SKIP = "good", "bad", "skip"
SHOWN = 3  # builds named in a verdict; the rest are counted


@dataclass(frozen=True)
class Verdict:
    """What one commit's matching builds say: GOOD, BAD or SKIP, each build's value of the figure, and
    why (:meth:`why`)."""

    verdict: str  # GOOD, BAD or SKIP
    values: dict[str, int] = field(default_factory=dict)  # build ref ("target:row id") -> the figure
    reason: str = ""  # why it cannot be judged (SKIP)
    # The builds that show the change: ref, GOOD's value (None under --above) and this commit's.
    shows: tuple[tuple[str, int | None, int], ...] = ()

    def why(self, arrow: str = ARROW) -> str:
        """For SKIP, why it cannot be judged; else the builds that show the change (none: empty), a move
        drawn with ``arrow`` (the JSON's is ASCII)."""
        if self.reason:
            return self.reason
        items = [f"{ref} {value}" if before is None else f"{ref} {before} {arrow} {value}"
                 for ref, before, value in self.shows]
        more = f" and {count(len(items) - SHOWN, 'more build')}" if len(items) > SHOWN else ""
        return ", ".join(items[:SHOWN]) + more


@dataclass(frozen=True)
class BisectCommit:
    """A commit of the range searched: its sha and subject."""

    sha: str
    subject: str


@dataclass(frozen=True)
class BisectResult:
    """The outcome of a bisect over GOOD..BAD (``commits``, oldest first, first parents).

    ``first`` is the index of the first commit showing the change, or None: then ``candidates`` are the
    commits skipped ones leave it open among, or none when BAD itself does not show it. ``probes`` are the
    indices judged, in order, each with its verdict in ``verdicts``. Where found, ``message`` is that
    commit's message and ``comparison`` its diff against its parent (each side labelled by short sha)."""

    good: str  # as the user named them
    bad: str
    key: str
    figure: str
    above: int | None
    commits: tuple[BisectCommit, ...]
    first: int | None
    candidates: tuple[int, ...]
    probes: tuple[int, ...]
    verdicts: dict[int, Verdict]
    surveyed: int  # commits surveyed for the matching keys, GOOD included
    surveyed_now: int  # of which made now (the others from the store)
    message: str = ""
    comparison: Comparison | None = None

    @property
    def what(self) -> str:
        """``vgpr of 'gemm/*' changes from GOOD's``, ``... above 0``: what was looked for."""
        return f"{self.figure} of {self.key!r}" + (f" above {self.above}" if self.above is not None
                                                   else " changes from GOOD's")

    @property
    def tally(self) -> str:
        """How many commits were surveyed, and how many of them now."""
        return (f"{self.surveyed} of {count(len(self.commits) + 1, 'commit')} surveyed for the matching keys "
                f"({self.surveyed_now} now, {self.surveyed - self.surveyed_now} from the store)")
