"""The messages of the survey engine: frozen dataclasses, pickled over ``multiprocessing`` connections.

A survey (:mod:`.survey`) sends its workers (:mod:`.worker`) requests: :class:`ListKeys`,
:class:`ToolchainOf`, :class:`SurveyKey` and :class:`Stop`. A worker answers :class:`KeysListed`,
:class:`ToolchainInfo` or, for each key, :class:`KeyCaptured` (its launches were captured),
:class:`KeyWaiting` (its build is compiled by another worker or survey, whose lock names it),
:class:`KeyCompiled` (the toolchain is done with it: send the next) and then :class:`KeyFinished` (its
rows); :class:`Failed` says why a request could not be met.
A worker a ``regsurvey server`` forked (:mod:`.server`) ends with :class:`WorkerExited`.

A worker the server forks first says :class:`WorkerStarted`. The server's own requests (a worker, a
ping, stop, retire, kill) stay plain dicts: a server of an older regsurvey (another identity) must
still understand the ping and the retirement a newer one sends it.

Each message is matched by its type (``match`` / ``isinstance``), never by a string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model.keys import Key
from ..model.results import Row, SaidOnce
from ..store.signing import Unsigned
from .key_reads import KeyReads

if TYPE_CHECKING:
    from ..compile.toolchain import PortableLaunch

# -- a survey's requests to a worker ------------------------------------------------------------------


@dataclass(frozen=True)
class ListKeys:
    """Every key of the checkout's keys files, on ``targets`` (None: every target)."""

    targets: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ToolchainOf:
    """The toolchain block of one backend (``hip`` or ``cuda``): Triton, codegen revision or ptxas."""

    backend: str


@dataclass(frozen=True)
class CapturedKey:
    """A key's launches as the kind body of its first copy made them, and what that body said (each row's
    messages): a worker helping with the key compiles these instead of running the body again."""

    messages: tuple[str, ...]
    launches: tuple[PortableLaunch, ...]


@dataclass(frozen=True)
class SurveyKey:
    """Compile the launches of ``key``; ``reuse``: take results from the result cache. ``captured``: a copy of
    a key in flight, its launches as another worker captured them (the kind body is not run again, unless a
    launch cannot be made again exactly here)."""

    key: Key
    reuse: bool = True
    captured: CapturedKey | None = None


@dataclass(frozen=True)
class Stop:
    """Finish what is held, then exit."""


Request = ListKeys | ToolchainOf | SurveyKey | Stop

# -- a worker's answers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeysListed:
    """The answer to :class:`ListKeys`, from a worker that imported the keys for ``target``."""

    keys: tuple[Key, ...]
    target: str
    # Each kind's own targets (kind, targets), in the keys files' order: see Survey.declared.
    declared: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class ToolchainInfo:
    """The answer to :class:`ToolchainOf`."""

    toolchain: dict[str, Any]


@dataclass(frozen=True)
class KeyCaptured:
    """The key's kind body ran and made ``launches`` launches (it compiles them next): a key of
    several may also be sent to idle workers, which then share its launches (the survey's tail)."""

    key: Key
    launches: int
    reads: KeyReads | None = None  # what the body read (engine.key_reads): a later survey may take its rows
    # The launches themselves, for workers that help with the key (a body that ran to its end, two launches or
    # more: a key of one is never shared); None: a helper runs the body.
    captured: CapturedKey | None = None


@dataclass(frozen=True)
class KeyWaiting:
    """The key's compile waits for a build lock that another process holds (``holder``: who, as the lock
    file says: ``process 1234``, "" when it does not say), or (``holder`` None) the wait is over: what the
    survey's time-out says the key was doing."""

    key: Key
    holder: str | None


@dataclass(frozen=True)
class KeyCompiled:
    """The key's launches are compiled (its objects are being read): the worker takes the next key."""

    key: Key
    notes: tuple[str, ...] = ()  # warnings for the user (a damaged cache entry ...), one line each
    said_once: tuple[SaidOnce, ...] = ()  # what kind bodies said once per process (the survey's, not a key's)
    unsigned: tuple[Unsigned, ...] = ()  # cache entries ignored for their signature (one warning per survey)


@dataclass(frozen=True)
class KeyFinished:
    """A key's rows, with the time both halves of the worker spent on it by phase, and their memory."""

    key: Key
    rows: tuple[Row, ...]
    timing: dict[str, float] = field(default_factory=dict)
    ready_at: float | None = None  # time.time() when the worker had loaded the keys
    peak_rss_mb: float = 0.0
    preloaded: bool = False  # the worker was forked with torch and Triton already imported
    notes: tuple[str, ...] = ()  # warnings for the user, one line each: the survey prints them
    said_once: tuple[SaidOnce, ...] = ()  # what kind bodies said once per process (the survey's, not a key's)
    unsigned: tuple[Unsigned, ...] = ()  # cache entries ignored for their signature (one warning per survey)


@dataclass(frozen=True)
class Failed:
    """A request that could not be met: the keys files raised, or a bug of ours; ``traceback``: Python's,
    for either. ``key``: the key it was about, if any (its row is then an error row)."""

    error: str
    key: Key | None = None
    traceback: str | None = None
    transient: bool = False  # a cause of the moment (a full disk): the key is surveyed again next time


@dataclass(frozen=True)
class WorkerExited:
    """A server's worker has exited, with this exit status (its connection ends next)."""

    code: int


Answer = KeysListed | ToolchainInfo | KeyCaptured | KeyWaiting | KeyCompiled | KeyFinished | Failed | WorkerExited

# -- a worker the server forks -------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerStarted:
    """The first message of a worker a ``regsurvey server`` forked: its process id."""

    pid: int
