"""What comes back from a survey's Ray actors (:mod:`.transport_ray`): each answer written into the local store
on threads of its own (:class:`Storing`: files, so the writes run beside each other and beside the survey's
loop, whose own time per build is then Ray's and the bookkeeping), and its rows taken once every object they
name is here (:class:`HeldAnswers`: an object compiled on another node comes back with that node's answer)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from ..model.keys import Key
from ..model.results import Row
from ..store.objectstore import ObjectStore
from ..store.resultcache import ResultCache
from .protocol import KeyFinished
from .ray_actor import KeyShipped
from .schedule import error_row

# Threads writing what comes back into the local store.
STORING_THREADS = 4


def answered_rows(key: Key, shipped: KeyShipped) -> list[Row]:
    """The rows of ``key`` that ``shipped`` answers: its worker's, or the error row of why it failed."""
    if isinstance(shipped.answer, KeyFinished):
        return list(shipped.answer.rows)
    return [error_row(key, shipped.answer.error, transient=shipped.answer.transient)]


class HeldAnswers:
    """Answers stored whose rows name objects this store lacks: compiled on another node, those come back
    with that node's answer. An answer's rows are taken once every object they name is here."""

    def __init__(self, root: Path):
        self.root = root  # the store's directory: a row's object path is relative to it
        self.held: list[tuple[Key, KeyShipped]] = []

    def __bool__(self) -> bool:
        return bool(self.held)

    def absent(self, shipped: KeyShipped) -> dict[str, str]:
        """The objects ``shipped``'s rows name that are not here (sha256 -> path)."""
        rows = shipped.answer.rows if isinstance(shipped.answer, KeyFinished) else ()
        return {r.object.sha256: r.object.path for r in rows
                if r.object is not None and not (self.root / r.object.path).is_file()}

    def ready(self, key: Key, shipped: KeyShipped) -> bool:
        """Whether ``shipped``'s rows can be taken now; if not, it is held."""
        if self.absent(shipped):
            self.held.append((key, shipped))
            return False
        return True

    def released(self) -> list[tuple[Key, KeyShipped]]:
        """The answers held whose objects are all here now (in the order held); they are held no more."""
        out: list[tuple[Key, KeyShipped]] = []
        still: list[tuple[Key, KeyShipped]] = []
        for item in self.held:
            (still if self.absent(item[1]) else out).append(item)
        self.held = still
        return out

    def wanted(self) -> dict[str, str]:
        """Every object the answers held lack."""
        return {sha: path for _, shipped in self.held for sha, path in self.absent(shipped).items()}

    def builds(self) -> dict[str, str]:
        """The Triton hash of each object :meth:`wanted` names (sha256 -> hash): the build it came from."""
        wanted = self.wanted()
        return {r.object.sha256: r.triton_hash for _, shipped in self.held
                if isinstance(shipped.answer, KeyFinished) for r in shipped.answer.rows
                if r.object is not None and r.object.sha256 in wanted and r.triton_hash}

    def dropped(self) -> list[tuple[Key, KeyShipped]]:
        """The answers still held (their objects lost), held no more."""
        out, self.held = self.held, []
        return out


class Storing:
    """The answers being written into the local store (``objects``, ``cache``), in the order answered."""

    def __init__(self, objects: ObjectStore, cache: ResultCache):
        self.objects = objects
        self.cache = cache
        self.writers = ThreadPoolExecutor(max_workers=STORING_THREADS, thread_name_prefix="regsurvey-store")
        self.queue: deque[tuple[Key, KeyShipped, Future[None]]] = deque()
        self.held = HeldAnswers(objects.root.parent)  # answers stored whose rows wait for another answer's objects

    def __bool__(self) -> bool:
        return bool(self.queue)

    def put(self, key: Key, shipped: KeyShipped) -> None:
        """Write ``shipped``, the answer for ``key``, into the store (on a writer thread)."""
        self.queue.append((key, shipped, self.writers.submit(shipped.store, self.objects, self.cache)))

    def stored(self, account: Callable[[KeyShipped], None], take: Callable[[Key, KeyShipped], None]) -> None:
        """The answers stored now, each given to ``account`` in the order answered; those whose rows can be
        taken (every object they name is here) to ``take``, the others held until they can."""
        arrived = False
        while self.queue and self.queue[0][2].done():
            key, shipped, written = self.queue.popleft()
            written.result()  # a store that failed (a full disk) fails the survey, as it would here
            account(shipped)
            arrived = True
            if self.held.ready(key, shipped):
                take(key, shipped)
        if arrived and self.held:
            for key, shipped in self.held.released():
                take(key, shipped)

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the next answer to be stored (or only wait, when none is being)."""
        if self.queue:
            futures.wait([self.queue[0][2]], timeout=timeout)
        else:
            time.sleep(timeout)

    def close(self) -> None:
        """Wait for the writes under way."""
        self.writers.shutdown(wait=True)
