"""Surveys on a Ray cluster (``--ray ADDRESS``, ``REGSURVEY_RAY``): each key is a call to a Ray actor.

What travels: the checkout's files that git tracks (as they are in the working tree) and those
``REGSURVEY_RAY_INCLUDE`` (``--ray-include``) names, never another untracked file (a ``.env``, a key),
as one gzipped tar, put once into Ray's object store; of the environment, Triton's settings and the few
variables of regsurvey's a worker reads (:func:`actor_environment`), never a token. Each actor
(``num_cpus=1``, spread over the nodes) unpacks it into a directory of its own on its node, imports it
once for its target with the :class:`~regsurvey.engine.worker.Worker` local workers use (an objects
directory its node-mates of the survey share), then compiles the keys sent to it one call at a time. No
kernel is compiled twice: on a node its build lock is the node store's, across nodes the survey's claims
actor (:class:`~.ray_actor.BuildClaims`), from which an actor waiting for another node's build takes its
result-cache entry; that row's object comes back with the other node's answer, and a key's rows are
taken once every object they name is here. Each call answers the key's rows and, for each
row's object, the object's bytes and the texts kept beside it (amdgcn, ptx, ..., pressure) and its
result-cache entry, which the survey stores in the local store: reports, ``explain`` and ``lint`` read
them as they read a local survey's. Nodes need not share a filesystem, only regsurvey and the toolchain.

What stays local: the store, the result cache and its costs, scheduling (the one
:class:`~.schedule.Schedule`, as for local workers: :mod:`.transport_ray` feeds it), the deferred lint of
cubins, and the survey itself (:mod:`.survey`).

Failures: a key that takes longer than ``--timeout`` is an error row (transient) and its actor is killed
(another takes its place); an actor or node lost has its keys in flight sent again, once, to other
actors, then they are error rows (transient); Ctrl-C cancels the calls in flight and kills the actors,
and what finished before is stored.

``ray`` is imported only here (and in the functions of :mod:`.ray_actor` and :mod:`.ray_node`), and only when
a survey asks for it (the ``ray`` extra).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..compile.triton_facts import CACHE_DIR_VAR, ENV_PREFIX, HOME_VAR
from ..model.options import SurveyOptions
from ..model.words import count
from ..repo.checkout import Checkout
from .errors import SurveyError
from .ray_actor import SurveyActor, TreeError, pack_tree, tree_files
from .ray_address import ray_address
from .transport_ray import RayPool, first_line

INCLUDE_VAR = "REGSURVEY_RAY_INCLUDE"  # untracked files the cluster needs: glob patterns, comma-separated

# What the actors' environment takes from the survey's, beyond their node's own: Triton's settings (they
# change what compiles) and the variables of regsurvey's that a worker reads. Nothing else travels: not a
# CI runner's tokens (REGSURVEY_GITLAB_TOKEN, CI_JOB_TOKEN, GITHUB_TOKEN), nor a variable whose name says it
# is a secret, under TRITON_ too. Paths that mean something only here stay here.
_ENV_REGSURVEY = frozenset({"REGSURVEY_MATERIALIZE", "REGSURVEY_LLVM_OBJDUMP"})
_ENV_LOCAL = frozenset({CACHE_DIR_VAR, HOME_VAR})
_SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|AUTH|API_?KEY|(^|_)KEY$", re.IGNORECASE)


def actor_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``environ`` (the survey's) that the actors take."""
    return {name: value for name, value in environ.items()
            if ((name.startswith(ENV_PREFIX) and name not in _ENV_LOCAL) or name in _ENV_REGSURVEY)
            and not _SECRET.search(name)}


def included() -> tuple[str, ...]:
    """The patterns of the untracked files that travel too (``REGSURVEY_RAY_INCLUDE``)."""
    return tuple(p.strip() for p in os.environ.get(INCLUDE_VAR, "").split(",") if p.strip())


def packed_checkout(checkout: Checkout) -> bytes:
    """The checkout's files that travel, as the tar each actor unpacks (:func:`.ray_actor.tree_files`); the
    untracked files left here are named in a warning (a local survey would read them). SurveyError for a
    checkout that cannot travel."""
    tree = tree_files(checkout.root, included())
    if tree.left_out:
        shown = ", ".join(tree.left_out[:3]) + (f" and {len(tree.left_out) - 3} more" if len(tree.left_out) > 3 else "")
        print(f"regsurvey: warning: --ray: {count(len(tree.left_out), 'untracked file')} not sent to the cluster "
              f"({shown}): git add them, or name them with --ray-include", file=sys.stderr)
    try:
        return pack_tree(checkout.root, tree.files)
    except TreeError as exc:
        raise SurveyError(f"--ray: {exc}") from None
    except OSError as exc:
        raise SurveyError(f"--ray: cannot read the checkout to send it: {exc}") from None


def _actor_class() -> Any:
    import ray

    return ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(SurveyActor)


@contextlib.contextmanager
def ray_pool(checkout: Checkout, objects_dir: Path, options: SurveyOptions) -> Iterator[RayPool]:
    """The actors of a survey of ``checkout`` on the Ray cluster :func:`ray_address` names (joined here
    unless this process has joined one already, and left at the end): SurveyError without Ray, for a
    checkout that cannot travel, or a cluster that cannot be joined."""
    try:
        import ray
    except ImportError:
        raise SurveyError("--ray needs Ray: pip install 'regsurvey[ray]'") from None
    address = ray_address(options)
    tree = packed_checkout(checkout)  # before joining the cluster: a checkout that cannot travel is said at once
    connected_here = False
    if not ray.is_initialized():
        try:
            ray.init(address=None if address == "local" else address, log_to_driver=False,
                     logging_level=logging.ERROR)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise SurveyError(f"cannot join the Ray cluster at {address}: {first_line(exc)}") from None
        connected_here = True
    try:
        yield RayPool(ray, tree, objects_dir, options, actor_environment(os.environ), _actor_class())
    finally:
        if connected_here:
            ray.shutdown()
