"""How this process's surveys start local workers: forked by a warm ``regsurvey server`` (:mod:`.server`), by
a forkserver the survey starts (which imports torch and Triton once), or spawned; and the environment a
worker gets (:func:`worker_environment`)."""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping
from multiprocessing import forkserver
from typing import Any

from ..secret_vars import without_secrets
from ..store.signing import CACHE_KEY_VAR
from . import server
from .errors import SurveyError

# What every worker imports before it knows its checkout: the forkserver imports them once, and each
# worker is a fork of it (milliseconds) rather than a fresh interpreter importing them again (seconds).
PRELOAD = ["regsurvey.engine.worker_preload"]


START_METHODS = ("server", "forkserver", "spawn")


def worker_environment(env: Mapping[str, str]) -> dict[str, str]:
    """What a worker runs with: ``env`` without its secret variables, but for ``REGSURVEY_CACHE_KEY``,
    with which workers sign the results they store. That key belongs only in jobs that survey trusted
    revisions (docs/trust.md): a merge request's job never holds it, so no project's code it runs
    could read it there."""
    clean = without_secrets(env)
    if env.get(CACHE_KEY_VAR):
        clean[CACHE_KEY_VAR] = env[CACHE_KEY_VAR]
    return clean


@functools.cache
def worker_start() -> str:
    """How this process's surveys start workers: ``server`` (forked by a ``regsurvey server`` of this
    identity: a running one, or one this call starts when ``REGSURVEY_SERVER`` is ``auto``), else
    ``forkserver`` (forked from a forkserver the survey starts, which imports torch and Triton once;
    Linux), else ``spawn``. ``REGSURVEY_WORKER_START`` forces one (to compare them). Asked only once a
    survey is coming."""
    chosen = os.environ.get("REGSURVEY_WORKER_START", "").strip().lower() or None
    if chosen is not None and chosen not in START_METHODS:
        raise SurveyError(f"REGSURVEY_WORKER_START={os.environ['REGSURVEY_WORKER_START']!r}: expected one of "
                          f"{', '.join(START_METHODS)}")
    try:
        policy = server.policy()
    except ValueError as exc:
        raise SurveyError(str(exc)) from None
    # Forking after importing torch is only known safe on Linux (macOS frameworks are not fork-safe).
    if chosen == "spawn" or not sys.platform.startswith("linux"):
        return "spawn"
    if chosen == "forkserver" or (policy == "off" and chosen is None):
        return "forkserver"
    if server.ping() is not None:
        return "server"
    if policy == "auto" and server.launch_for_survey():
        return "server"
    return "forkserver"


def worker_context() -> Any:
    """The multiprocessing context of workers this survey starts itself."""
    method = "spawn" if worker_start() == "spawn" else "forkserver"  # a server that went away: fork
    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


def start_workers_early() -> None:
    """Start what workers fork from now (the forkserver, or a server when none runs), so that its
    imports overlap with what the caller does next (making a worktree)."""
    if worker_start() == "forkserver":
        ensure_forkserver()


def ensure_forkserver() -> None:
    """The forkserver running (started now if it is not), with what it preloads set."""
    worker_context()  # sets what the forkserver preloads
    # Started with SIGINT ignored, the forkserver ignores it from its first instruction: a Ctrl-C
    # (which reaches the whole process group) is this process's to handle, not a traceback from
    # the middle of the forkserver's imports.
    with main_module_hidden(), _sigint_ignored():
        forkserver.ensure_running()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored for the moment a child process is started (it inherits that); main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def main_module_hidden() -> Iterator[None]:
    """Spawn re-runs the parent's ``__main__`` script in each child unless it cannot find it. A worker
    needs nothing from it (and a caller's unguarded script would start surveying again in every
    worker): hide it while the worker starts."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved: dict[str, Any] = {n: main.__dict__[n] for n in ("__file__", "__spec__") if n in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None  # spawn reads it, so it must exist
    try:
        yield
    finally:
        main.__dict__.update(saved)
