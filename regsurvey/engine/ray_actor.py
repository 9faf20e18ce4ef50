"""The far side of a survey on a Ray cluster (:mod:`.ray_executor`): what travels there and back, and the
actor that compiles keys on a node.

The checkout travels as a gzipped tar of the files a survey reads (:func:`pack_tree`); an actor
(:class:`SurveyActor`) unpacks it into a directory of its own, imports it once for its target with the
:class:`~regsurvey.engine.worker.Worker` local workers use, and answers each key with a
:class:`KeyShipped`: the worker's answer, the objects its rows name with the texts kept beside them, and
their result-cache entries. Nothing here imports ray at module level.
"""

from __future__ import annotations

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

from ..model.keys import Key
from ..store.files import atomic_write
from ..store.objectstore import ObjectStore
from ..store.resultcache import CachedResult, ResultCache
from .protocol import Failed, KeyFinished, KeysListed, ToolchainInfo

# -- what travels ---------------------------------------------------------------------------------------


def tree_files(root: Path) -> list[str]:
    """The files of ``root`` a survey reads, relative to it: git's tracked and untracked-not-ignored files
    (as they are in the working tree), else every file but caches and the store."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
                         capture_output=True, check=False)
    if out.returncode == 0:
        names = [n for n in out.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
        return sorted(n for n in set(names) if os.path.lexists(root / n))
    skipped = {"__pycache__", ".git", ".regsurvey"}
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skipped]
        found += [os.path.relpath(os.path.join(directory, f), root) for f in files]
    return sorted(found)


def pack_tree(root: Path) -> bytes:
    """The checkout's files as a gzipped tar (what each actor unpacks)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=1, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in tree_files(root):
            tar.add(root / name, arcname=name, recursive=False)
    return buffer.getvalue()


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
class ShippedObject:
    """A stored object and what is kept beside it, as bytes: ``texts`` by name, gzipped as stored."""

    sha256: str
    ext: str
    binary: bytes
    texts: dict[str, bytes]


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
        for obj in self.objects:
            sha, rel = objects.put(obj.binary, obj.ext)
            if sha != obj.sha256:  # cannot happen: the actor read it back by its hash
                raise ValueError(f"object {obj.sha256} arrived altered")
            path = objects.root.parent / rel
            for name, data in obj.texts.items():
                beside = path.with_name(f"{sha}.{name}.gz")
                if not beside.exists():
                    atomic_write(beside, data)
        for triton_hash, entry in self.cached.items():
            cache.put(triton_hash, entry)


# -- the actor --------------------------------------------------------------------------------------------


class _WithSurveyStore(ResultCache):
    """A node's results of identical kernels, then those of the survey's own store (sent with the checkout):
    a kernel compiled before, on any commit, is reused on the node as it would be locally. Its row names the
    object in the survey's store, which the node does not have (and need not send back)."""

    def __init__(self, own: ResultCache, known: dict[str, CachedResult]):
        super().__init__(own.objects, own.warn)
        self.known = known

    def get(self, triton_hash: str) -> CachedResult | None:
        return super().get(triton_hash) or self.known.get(triton_hash)


class SurveyActor:
    """One worker on a node of the cluster: the checkout unpacked once, imported for one target.

    A plain class: :func:`_actor_class` makes it a Ray actor (so that importing this module needs no ray).
    """

    def __init__(self, tree: bytes, target: str, environ: dict[str, str], own_triton_cache: bool,
                 known: dict[str, CachedResult] | None = None, survey: str = ""):
        import ray

        from .worker import Worker

        self.dir = Path(tempfile.mkdtemp(prefix="regsurvey-ray-"))
        # The objects, results and build locks of one survey's actors on this node are one store of the
        # node's (``survey`` names it): they compile a kernel once between them and share a key's launches.
        self.shared = Path(tempfile.gettempdir()) / f"regsurvey-node-{survey}" if survey else self.dir
        (self.shared / "actors").mkdir(parents=True, exist_ok=True)
        self.marker = self.shared / "actors" / f"{os.getpid()}-{self.dir.name}"
        self.marker.touch()
        root = self.dir / "tree"
        unpack_tree(tree, root)
        os.environ.update(environ)
        if own_triton_cache:  # the survey asked for a Triton cache of its own (a cold one): one here too
            os.environ["TRITON_CACHE_DIR"] = str(self.dir / "triton-cache")
        import warnings

        warnings.filterwarnings("ignore", message="TRITON_DEFAULT_FP_FUSION is unset")
        os.chdir(root)
        sys.path.insert(0, str(root))
        self.node = ray.get_runtime_context().get_node_id()
        self.worker = Worker(root, root / "keys", self.shared / "objects", target)
        if known:
            self.worker.results = _WithSurveyStore(self.worker.results, known)
        try:
            self.worker.kinds()  # warm up: torch, Triton, the project's kernels, before the first key
        except BaseException:  # noqa: S110 - reported again, with its message, when a call needs the keys
            self.worker._kinds = None

    def where(self) -> tuple[str, str]:
        """The node this actor runs on, and its directory there."""
        return self.node, str(self.dir)

    def list_keys(self, targets: tuple[str, ...] | None) -> KeysListed | Failed:
        from .worker import _failure

        try:
            return KeysListed(self.worker.list_keys(targets), self.worker.target)
        except Exception as exc:
            return _failure(exc)

    def toolchain(self, backend: str) -> ToolchainInfo | Failed:
        from ..compile import toolchain
        from .worker import _failure

        try:
            return ToolchainInfo(toolchain.toolchain_info(backend))
        except Exception as exc:
            return _failure(exc)

    def survey(self, key: Key, reuse: bool) -> KeyShipped:
        """Compile ``key``, read, store and lint its objects; answer its rows and the objects."""
        from .worker import _failure, peak_rss_mb

        start = time.perf_counter()
        worker = self.worker
        try:
            rows = tuple(worker.survey_key(key, reuse))
        except Exception as exc:
            return KeyShipped(_failure(exc, key), seconds=time.perf_counter() - start, node=self.node)
        objects: dict[str, ShippedObject] = {}
        cached: dict[str, CachedResult] = {}
        for row in rows:
            if row.object is None or row.object.sha256 in objects:
                continue
            path = worker.objects.root.parent / row.object.path
            sha = row.object.sha256
            if not path.is_file():  # reused from the survey's store (_WithSurveyStore): it is there already
                continue
            texts = {p.name[len(sha) + 1:-3]: p.read_bytes() for p in path.parent.glob(f"{sha}.*.gz")}
            objects[sha] = ShippedObject(sha, path.suffix[1:], worker.objects.get(row.object.path, sha), texts)
            if row.triton_hash and row.triton_hash not in cached:
                entry = worker.results.get(row.triton_hash)
                if entry is not None:
                    cached[row.triton_hash] = entry
        answer = KeyFinished(key, rows, timing=worker.take_timing(), ready_at=worker.ready_at,
                             peak_rss_mb=peak_rss_mb(), notes=worker.take_notes())
        return KeyShipped(answer, tuple(objects.values()), cached, time.perf_counter() - start, self.node)

    def close(self) -> None:
        """Remove this actor's directory (the checkout), and the node's store of the survey when no other
        actor of it is left on the node."""
        import shutil

        os.chdir("/")
        shutil.rmtree(self.dir, ignore_errors=True)
        self.marker.unlink(missing_ok=True)
        try:
            others = any((self.shared / "actors").iterdir())
        except OSError:
            others = False
        if not others:
            shutil.rmtree(self.shared, ignore_errors=True)
