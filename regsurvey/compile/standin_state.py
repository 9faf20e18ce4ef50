"""The target the management stand-ins answer for, and the queries they could not answer: the state that
``compile.management`` sets and ``nvml_standin`` and ``amdsmi_standin`` read (a leaf, so that neither
imports the module that installs them)."""

from __future__ import annotations

import threading

from ..model.targets import ManagementFacts, Target

_active: Target | None = None
_unanswered: list[str] = []
_unanswered_lock = threading.Lock()


def active_target() -> Target | None:
    """The target the stand-ins answer for now (None outside ``management.standing_in``)."""
    return _active


def set_active_target(target: Target | None) -> Target | None:
    """Answer for ``target`` from now on (None: for no GPU); the target answered for until now."""
    global _active
    previous, _active = _active, target
    return previous


def note_unanswered(query: str) -> None:
    """Record a management query the stand-in could not answer (a library's check that found nothing)."""
    with _unanswered_lock:
        if query not in _unanswered:
            _unanswered.append(query)


def unanswered() -> list[str]:
    """The queries recorded since the last call (and forget them)."""
    with _unanswered_lock:
        taken = list(_unanswered)
        _unanswered.clear()
    return taken


def facts(target: Target) -> ManagementFacts:
    """The target's management facts (every target in ``model.targets`` has them)."""
    if target.management is None:
        raise ValueError(f"target {target.name} has no management facts")
    return target.management


def uuid(target: Target) -> str:
    """The UUID the stand-in reports: one machine's, not the model's, so zeros (as torch's stand-in)."""
    return "GPU-00000000-0000-0000-0000-000000000000"
