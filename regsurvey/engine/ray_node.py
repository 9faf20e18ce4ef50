"""What a survey on a Ray cluster keeps on each node, and how it goes: the store its actors share there
(:func:`node_store`, a marker per actor alive), what an actor killed leaves (removed by :func:`leave_node`
when the next actor of the survey leaves, or at the end by a :class:`NodeShipper`; by :func:`sweep_node`
an hour later when nothing could), and the shipper that sends a node's objects when no actor of the survey
is left there; what travels back from a node's store (:class:`ShippedObject`: an object with the texts kept
beside it) and is put into the survey's (:func:`store_objects`). Nothing here imports ray at module level.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CorruptObjectError
from ..store.objectstore import ObjectStore

# -- what travels back -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShippedObject:
    """A stored object and what is kept beside it, as bytes: ``texts`` by name, gzipped as stored."""

    sha256: str
    ext: str
    binary: bytes
    texts: dict[str, bytes]


def store_objects(shipped: tuple[ShippedObject, ...], objects: ObjectStore) -> None:
    """Put objects that came back, with their texts, into the survey's store."""
    for obj in shipped:
        if hashlib.sha256(obj.binary).hexdigest() != obj.sha256:  # the actor read it back by its hash
            raise ValueError(f"object {obj.sha256} arrived altered")  # (nothing of it written)
        _, rel = objects.put(obj.binary, obj.ext)
        for name, data in obj.texts.items():
            objects.put_packed(rel, name, data)  # (checked: a text that is not this object's is refused)


def shipped_object(objects: ObjectStore, rel: str, sha: str) -> ShippedObject:
    """The stored object ``rel`` and the texts kept beside it, to send."""
    return ShippedObject(sha, objects.path(rel).suffix[1:], objects.get(rel, sha), objects.packed(rel))


def ship_from(objects: ObjectStore, wanted: dict[str, str]) -> tuple[ShippedObject, ...]:
    """The objects of ``wanted`` (sha256 -> path in the store) that ``objects`` holds, to send."""
    return tuple(shipped_object(objects, path, sha) for sha, path in wanted.items() if _holds(objects, path))


def _holds(objects: ObjectStore, rel: str) -> bool:
    """Whether the object ``rel`` is in ``objects`` (a path that is none of its objects' is not)."""
    try:
        return objects.path(rel).is_file()
    except CorruptObjectError:
        return False


# -- the node's store ---------------------------------------------------------------------------------


def node_store(survey: str) -> Path:
    """The directory the actors of ``survey`` share on this node: their store, and a marker per actor alive
    (``actors/<pid>-<its directory's name>``)."""
    return Path(tempfile.gettempdir()) / f"regsurvey-node-{survey}"


def leave_node(shared: Path) -> None:
    """Forget the actors of ``shared``'s survey on this node whose process is gone (killed at a time-out, or
    lost: they could not remove their directories), removing their directories; then, when no actor is
    left, the node's store of the survey."""
    import shutil

    alive = False
    for marker, directory, live in _markers(shared):
        if live:
            alive = True
            continue
        if directory.startswith("regsurvey-ray-"):
            shutil.rmtree(shared.parent / directory, ignore_errors=True)
        marker.unlink(missing_ok=True)
    if not alive:
        shutil.rmtree(shared, ignore_errors=True)


def _markers(shared: Path) -> list[tuple[Path, str, bool]]:
    """The actor markers of ``shared`` (``actors/<pid>-<directory>``): each marker, the name of its actor's
    directory, and whether that actor's process is alive."""
    try:
        markers = list((shared / "actors").iterdir())
    except OSError:
        return []
    out = []
    for marker in markers:
        pid, _, directory = marker.name.partition("-")
        out.append((marker, directory, pid.isdigit() and not _gone(int(pid))))
    return out


# Seconds after which what surveys' actors left on a node, none of them alive, is swept (:func:`sweep_node`):
# well past the moment an actor makes its directory and its marker.
STALE_S = 3600.0


def sweep_node(tmp: Path, now: float | None = None) -> None:
    """Remove what earlier surveys' actors left on this node when nothing could clean up after them (Ctrl-C
    killed them mid-key, or their node was lost and came back): the survey stores none of whose actors is
    alive, and the actors' checkouts no live actor's marker names, when older than :data:`STALE_S`. Run by
    every actor as it starts."""
    import shutil

    now = time.time() if now is None else now

    def stale(path: Path) -> bool:
        try:
            return now - path.stat().st_mtime > STALE_S
        except OSError:
            return False

    named: set[str] = set()  # the checkouts of actors alive
    for store in [*tmp.glob("regsurvey-node-*"), *tmp.glob("regsurvey-ray-*")]:
        if store.name.startswith("regsurvey-node-") and stale(store):
            leave_node(store)  # the dead actors' checkouts, then the store if none is alive
        named.update(directory for _, directory, live in _markers(store) if live)
    for checkout in tmp.glob("regsurvey-ray-*"):
        if checkout.name not in named and stale(checkout):
            shutil.rmtree(checkout, ignore_errors=True)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class NodeShipper:
    """Sends what a node's store of the survey holds, when no actor of the survey is left alive there (an
    actor killed or lost after the survey's claims took its build): started on that node at the survey's end
    (:func:`shipper_class`), for the objects whose compiling node's answer was lost. A plain class."""

    def __init__(self, survey: str):
        self.shared = node_store(survey)

    def ship(self, wanted: dict[str, str]) -> tuple[ShippedObject, ...]:
        """The objects of ``wanted`` (sha256 -> path in the store) the node's store holds."""
        return ship_from(ObjectStore(self.shared / "objects"), wanted)

    def close(self) -> None:
        """Remove what actors gone left on the node, and the node's store if no actor is left."""
        leave_node(self.shared)


def pinned_actor(cls: type, node: str) -> Any:
    """``cls`` as a Ray actor of no CPU on ``node``, and only there (a soft affinity gives way to a node busy
    starting a survey's actors)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    there = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
    return ray.remote(num_cpus=0, max_restarts=0)(cls).options(scheduling_strategy=there)


def shipper_class(node: str) -> Any:
    """:class:`NodeShipper` as a Ray actor on ``node`` (no CPU: it reads files)."""
    return pinned_actor(NodeShipper, node)
