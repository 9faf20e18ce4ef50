"""The far side of a survey on a Ray cluster (:mod:`.ray_executor`): what travels there and back, and the
actor that compiles keys on a node.

The checkout travels as a gzipped tar of the files a survey reads (:func:`pack_tree`); an actor
(:class:`SurveyActor`) unpacks it into a directory of its own, imports it once for its target with the
:class:`~regsurvey.engine.worker.Worker` local workers use, and answers each key with a
:class:`KeyShipped`: the worker's answer, the objects its rows name with the texts kept beside them, and
their result-cache entries. Nothing here imports ray at module level.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..compile.triton_facts import CACHE_DIR_VAR, ignore_fp_fusion_warning
from ..model.keys import Key
from ..store.inflight import BuildLock, HeldElsewhere, InFlight
from ..store.objectstore import ObjectStore
from ..store.resultcache import CachedResult, ResultCache
from .protocol import CapturedKey, Failed, KeyFinished, KeysListed, ToolchainInfo
from .ray_node import (
    ShippedObject,
    leave_node,
    node_store,
    pinned_actor,
    ship_from,
    shipped_object,
    store_objects,
    sweep_node,
)

# -- what travels ---------------------------------------------------------------------------------------


class TreeError(ValueError):
    """A checkout that cannot travel to the cluster as it is; the message is one line."""


@dataclass(frozen=True)
class Tree:
    """What of a checkout travels to the cluster: ``files`` (relative to its root), and the untracked
    files of its working tree that stay here (``left_out``: the survey says so, since a local survey would
    read them)."""

    files: tuple[str, ...]
    left_out: tuple[str, ...] = ()


def tree_files(root: Path, include: tuple[str, ...] = ()) -> Tree:
    """The files of ``root`` that travel: those git tracks (as they are in the working tree), and the
    untracked or ignored files that a pattern of ``include`` matches (a glob on the path relative to
    ``root``; ``*`` crosses ``/``). An untracked file is not sent by default: a working tree holds
    secrets git is not told of (``.env``, a key), and every node would receive them. Outside git: every
    file but caches and the store."""
    tracked = _git_files(root, "ls-files", "-z")
    if tracked is None:
        return Tree(tuple(_walked(root)))
    untracked = _git_files(root, "ls-files", "-z", "--others", "--exclude-standard") or []
    extra: list[str] = []
    if include:
        others = _git_files(root, "ls-files", "-z", "--others") or []  # ignored ones too
        extra = [n for n in others if any(fnmatch.fnmatchcase(n, p) for p in include)]
    files = sorted(n for n in {*tracked, *extra} if os.path.lexists(root / n))
    shipped = set(files)
    return Tree(tuple(files), tuple(sorted(n for n in untracked if n not in shipped and not _cache(n))))


def _git_files(root: Path, *args: str) -> list[str] | None:
    out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    if out.returncode != 0:
        return None
    return [n for n in out.stdout.decode("utf-8", "surrogateescape").split("\0") if n]


def _cache(name: str) -> bool:
    """Python's bytecode caches: written by importing the project, never an input."""
    return "__pycache__" in name.split("/") or name.endswith((".pyc", ".pyo"))


def _walked(root: Path) -> list[str]:
    skipped = {"__pycache__", ".git", ".regsurvey"}
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skipped]
        found += [os.path.relpath(os.path.join(directory, f), root) for f in files]
    return sorted(found)


def pack_tree(root: Path, files: tuple[str, ...]) -> bytes:
    """``files`` of ``root`` as a gzipped tar (what each actor unpacks). A symbolic link stays one when it
    points inside the checkout (made relative, if it was absolute); TreeError for one pointing outside it,
    which a node need not have (and which tar's safe extraction refuses, unsaid, on the node)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=1, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in files:
            tar.add(root / name, arcname=name, recursive=False, filter=lambda member: _within(root, member))
    return buffer.getvalue()


def _within(root: Path, member: tarfile.TarInfo) -> tarfile.TarInfo:
    """``member`` as it travels: a symbolic link names a place inside the checkout, relative to the link;
    TreeError otherwise. (A hard link names another member of the archive.)"""
    if not member.issym():
        return member
    here = root / member.name
    pointed = Path(os.path.normpath(here.parent / member.linkname))  # an absolute linkname replaces the base
    top = Path(os.path.normpath(root))
    if pointed != top and top not in pointed.parents:
        raise TreeError(f"{member.name} is a symbolic link to {member.linkname}, outside the checkout: a Ray node "
                        "would not have it (make it point inside the checkout, or stop tracking it)")
    member.linkname = os.path.relpath(pointed, here.parent)
    return member


def unpack_tree(data: bytes, into: Path) -> None:
    """Unpack :func:`pack_tree`'s bytes into ``into`` (nothing outside it: tarfile's data filter)."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:  # an older Python without extraction filters: refuse what would land outside
            for member in tar.getmembers():
                if member.name.startswith("/") or ".." in Path(member.name).parts:
                    raise ValueError(f"unsafe path in the tree's archive: {member.name}")
            tar.extractall(into)  # noqa: S202 - checked above


@dataclass(frozen=True)
class KeyShipped:
    """An actor's answer for one key: the worker's answer, the objects its rows name (with their
    result-cache entries, by Triton hash), and the seconds the actor spent on the call."""

    answer: KeyFinished | Failed
    objects: tuple[ShippedObject, ...] = ()
    cached: dict[str, CachedResult] = field(default_factory=dict)
    seconds: float = 0.0
    node: str = ""  # the Ray node id of the actor that answered

    def store(self, objects: ObjectStore, cache: ResultCache) -> None:
        """Put the objects, their texts and result-cache entries into the survey's store (thread-safe: each
        file is written whole, and an object's bytes are its name)."""
        store_objects(self.objects, objects)
        for triton_hash, entry in self.cached.items():
            cache.put(triton_hash, entry)


# -- the actor --------------------------------------------------------------------------------------------


class _WithSurveyStore(ResultCache):
    """A node's results of identical kernels, then those ``known`` elsewhere: the survey's own store's (sent
    with the checkout: a kernel compiled before, on any commit, is reused on the node as it would be
    locally) and those other nodes compiled in this survey (:class:`ClusterInFlight` adds them). Such a
    row names an object the node does not have: it is in the survey's store, or comes back to it with the
    answer of the node that compiled it."""

    def __init__(self, own: ResultCache, known: dict[str, CachedResult]):
        super().__init__(own.objects, own.warn, own.unsigned)
        self.known = known

    def get(self, triton_hash: str) -> CachedResult | None:
        return super().get(triton_hash) or self.known.get(triton_hash)


# -- builds claimed across the cluster's nodes ---------------------------------------------------------------

# Seconds an actor waits on the claims service per call, while another node compiles a kernel it needs (it
# asks again until that build is settled or its holder is lost).
CLAIM_WAIT_S = 5.0


class BuildClaims:
    """The survey's build locks across nodes (one Ray actor per survey, :func:`claims_class`): the node
    stores' ``flock`` (:mod:`regsurvey.store.inflight`) serves one node's actors; this serves the nodes,
    which share no files. An actor about to compile a kernel claims its Triton hash here; the holder
    settles it with the kernel's result-cache entry (or its failure), which an actor of another node
    waiting for it takes instead of compiling: a row naming the object, whose bytes come back to the survey
    with the holder's answer. A holder lost (the survey tells :meth:`lost`) frees its claims.

    Async: a call waiting for a build does not hold up the others."""

    def __init__(self) -> None:
        import asyncio

        self.holders: dict[str, tuple[str, str]] = {}  # Triton hash -> (actor, node) compiling it
        self.settled: dict[str, tuple[CachedResult | None, str | None, str]] = {}  # -> (entry, failure, node)
        self.changed = asyncio.Condition()
        self.across = 0  # builds an actor took from another node's compile

    def _answer(self, triton_hash: str, who: str, node: str) -> tuple[str, CachedResult | None, str | None]:
        if triton_hash in self.settled:
            entry, failure, where = self.settled[triton_hash]
            if where != node:
                self.across += 1
            return "done", entry, failure
        holder = self.holders.get(triton_hash)
        if holder is None or holder[0] == who:
            self.holders[triton_hash] = (who, node)
            return "yours", None, None
        return "held", None, None

    async def claim(self, triton_hash: str, who: str, node: str,
                    wait_s: float = 0.0) -> tuple[str, CachedResult | None, str | None]:
        """("yours", ...): ``who`` compiles it now; ("done", entry, failure): settled (``entry`` the result,
        or ``failure`` the error); ("held", ...): another actor compiles it still (after ``wait_s``)."""
        import asyncio

        async with self.changed:
            answer = self._answer(triton_hash, who, node)
            if answer[0] == "held" and wait_s > 0:
                try:
                    await asyncio.wait_for(self.changed.wait_for(
                        lambda: self._answer_ready(triton_hash, who)), timeout=wait_s)
                except asyncio.TimeoutError:
                    pass
                answer = self._answer(triton_hash, who, node)
            return answer

    def _answer_ready(self, triton_hash: str, who: str) -> bool:
        holder = self.holders.get(triton_hash)
        return triton_hash in self.settled or holder is None or holder[0] == who

    async def settle(self, triton_hash: str, who: str, entry: CachedResult | None, failure: str | None) -> None:
        """``who``'s build of ``triton_hash`` ended: its result ``entry``, or ``failure``, or neither (left
        no result: the next to claim it compiles it)."""
        async with self.changed:
            holder = self.holders.get(triton_hash)
            if holder is not None and holder[0] == who:
                del self.holders[triton_hash]
                if entry is not None or failure is not None:
                    self.settled[triton_hash] = (entry, failure, holder[1])
            self.changed.notify_all()

    async def lost(self, who: str) -> None:
        """``who`` is gone (killed, lost, or done): its claims are free."""
        async with self.changed:
            for triton_hash in [h for h, (holder, _) in self.holders.items() if holder == who]:
                del self.holders[triton_hash]
            self.changed.notify_all()

    async def stats(self) -> dict[str, int]:
        return {"builds_across_nodes": self.across}

    async def nodes_of(self, hashes: list[str]) -> dict[str, str]:
        """The node that compiled each of ``hashes`` settled here (Triton hash -> node)."""
        return {h: self.settled[h][2] for h in hashes if h in self.settled}


def claims_class() -> Any:
    """:class:`BuildClaims` as a Ray actor on the survey's own node (the driver's, where the survey lives and
    dies): no other node's loss takes the claims with it."""
    import ray

    return pinned_actor(BuildClaims, ray.get_runtime_context().get_node_id())


class _ClaimedLock(BuildLock):
    """A node's build lock that is also the cluster's claim: released, it settles the claim with what the
    node's result cache holds of the kernel (or the failure recorded)."""

    def __init__(self, local: BuildLock, cluster: ClusterInFlight, triton_hash: str):
        super().__init__(local.fd, local.base, local.waited, local.began)  # type: ignore[arg-type]
        local.fd = None  # this lock owns the descriptor now
        self.cluster = cluster
        self.triton_hash = triton_hash
        self.error: str | None = None

    def fail(self, error: str) -> None:
        super().fail(error)
        self.error = error

    def release(self) -> None:
        if self.fd is not None:
            self.cluster.settle(self.triton_hash, None if self.error else self.cluster.own.get(self.triton_hash),
                                self.error)
        super().release()


class ClusterInFlight(InFlight):
    """The build locks of an actor: its node's (``flock``, shared with its node-mates), then the survey's
    claims across nodes (:class:`BuildClaims`). A build another node settled is taken from there: its entry
    goes into ``known`` (what the actor's result cache answers besides its own), its failure into the
    node's failure record. Should the claims service fail, the node's locks alone hold (as before it)."""

    def __init__(self, objects_root: Path, claims: Any, who: str, node: str, own: ResultCache,
                 known: dict[str, CachedResult]):
        super().__init__(objects_root)
        self.claims = claims
        self.who = who
        self.node = node
        self.own = own
        self.known = known

    def _ask(self, triton_hash: str, wait_s: float) -> tuple[str, CachedResult | None, str | None] | None:
        import ray

        try:
            return ray.get(self.claims.claim.remote(triton_hash, self.who, self.node, wait_s))
        except ray.exceptions.RayError:
            self.claims = None  # the service is gone: this node's locks alone from now on
            return None

    def settle(self, triton_hash: str, entry: CachedResult | None, failure: str | None) -> None:
        if self.claims is not None:
            self.claims.settle.remote(triton_hash, self.who, entry, failure)  # not awaited: the answer is nothing

    def take(self, triton_hash: str, wait: bool = True) -> BuildLock | None:
        lock = super().take(triton_hash, wait)
        if self.claims is None or lock is None or triton_hash in self.known or self.own.has(triton_hash):
            return lock  # compiled on this node (or known), or no claims: as on one machine
        try:
            while True:
                answer = self._ask(triton_hash, CLAIM_WAIT_S if wait else 0.0)
                if answer is None or answer[0] == "yours":
                    claimed = _ClaimedLock(lock, self, triton_hash) if answer is not None else lock
                    return claimed
                state, entry, failure = answer
                if state == "done":
                    if entry is not None:
                        self.known[triton_hash] = entry
                    elif failure is not None:
                        lock.fail(failure)
                    lock.waited = True
                    return lock
                if not wait:
                    lock.release()
                    raise HeldElsewhere(triton_hash)
                lock.waited = True
        except BaseException:
            lock.release()
            raise


class SurveyActor:
    """One worker on a node of the cluster: the checkout unpacked once, imported for one target.

    A plain class: :func:`_actor_class` makes it a Ray actor (so that importing this module needs no ray).
    """

    def __init__(self, tree: bytes, target: str, environ: dict[str, str], own_triton_cache: bool,
                 known: dict[str, CachedResult] | None = None, survey: str = "", claims: Any = None,
                 who: str = ""):
        import ray

        from .worker import Worker

        sweep_node(Path(tempfile.gettempdir()))
        self.dir = Path(tempfile.mkdtemp(prefix="regsurvey-ray-"))
        # The objects, results and build locks of one survey's actors on this node are one store of the
        # node's (``survey`` names it): they compile a kernel once between them and share a key's launches.
        self.shared = node_store(survey) if survey else self.dir
        (self.shared / "actors").mkdir(parents=True, exist_ok=True)
        self.marker = self.shared / "actors" / f"{os.getpid()}-{self.dir.name}"
        self.marker.touch()
        from ..compile import management

        management.keep_commands_in(str(self.dir))  # the smi stand-ins go when the directory goes
        root = self.dir / "tree"
        unpack_tree(tree, root)
        os.environ.update(environ)
        if own_triton_cache:  # the survey asked for a Triton cache of its own (a cold one): one here too
            os.environ[CACHE_DIR_VAR] = str(self.dir / "triton-cache")
        ignore_fp_fusion_warning()
        os.chdir(root)
        sys.path.insert(0, str(root))
        self.node = ray.get_runtime_context().get_node_id()
        self.worker = Worker(root, root / "keys", self.shared / "objects", target)
        own = self.worker.results
        known = dict(known or {})  # and the results other nodes settle (ClusterInFlight adds them)
        self.worker.results = _WithSurveyStore(own, known)
        if claims is not None:
            self.worker.inflight = ClusterInFlight(self.worker.objects.root, claims, who or self.marker.name,
                                                   self.node, own, known)
        self.worker.warm_up()  # torch, Triton, the project's kernels, before the first key

    def where(self) -> tuple[str, str]:
        """The node this actor runs on, and its directory there."""
        return self.node, str(self.dir)

    def list_keys(self, targets: tuple[str, ...] | None) -> KeysListed | Failed:
        from .worker import failure

        try:
            return self.worker.listing(targets)
        except Exception as exc:
            return failure(exc)

    def toolchain(self, backend: str) -> ToolchainInfo | Failed:
        from ..compile import toolchain
        from .worker import failure

        try:
            return ToolchainInfo(toolchain.toolchain_info(backend))
        except Exception as exc:
            return failure(exc)

    def survey(self, key: Key, reuse: bool, captured: CapturedKey | None = None) -> KeyShipped:
        """Compile ``key``, read, store and lint its objects; answer its rows and the objects."""
        from .worker import failure, peak_rss_mb

        start = time.perf_counter()
        worker = self.worker
        try:
            rows = tuple(worker.survey_key(key, reuse, captured))
        except Exception as exc:
            return KeyShipped(failure(exc, key), seconds=time.perf_counter() - start, node=self.node)
        objects: dict[str, ShippedObject] = {}
        cached: dict[str, CachedResult] = {}
        for row in rows:
            if row.object is None or row.object.sha256 in objects:
                continue
            path = worker.objects.path(row.object.path)
            sha = row.object.sha256
            if not path.is_file():  # reused from the survey's store (_WithSurveyStore): it is there already
                continue
            objects[sha] = shipped_object(worker.objects, row.object.path, sha)
            if row.triton_hash and row.triton_hash not in cached:
                entry = worker.results.get(row.triton_hash)
                if entry is not None:
                    cached[row.triton_hash] = entry
        answer = KeyFinished(key, rows, timing=worker.take_timing(), ready_at=worker.ready_at,
                             peak_rss_mb=peak_rss_mb(), notes=worker.take_notes(),
                             said_once=worker.take_said_once())
        return KeyShipped(answer, tuple(objects.values()), cached, time.perf_counter() - start, self.node)

    def ship(self, wanted: dict[str, str]) -> tuple[ShippedObject, ...]:
        """The objects of ``wanted`` (sha256 -> path in the store) that the node's store holds: those whose
        holder's answer was lost, asked for at the survey's end."""
        return ship_from(self.worker.objects, wanted)

    def close(self) -> None:
        """Remove this actor's directory (the checkout), and the node's store of the survey when no other
        actor of it is left on the node."""
        import shutil

        os.chdir("/")
        shutil.rmtree(self.dir, ignore_errors=True)
        self.marker.unlink(missing_ok=True)
        leave_node(self.shared)
