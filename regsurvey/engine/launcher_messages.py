"""What a kind body says while it runs: warnings, log records and printed lines, kept with its key.

Launchers tell which tuned config file they picked, or that they fell back to defaults, through
``warnings.warn``, ``logging`` or plain ``print``; a survey keeps those lines on the key's rows
(``Row.messages``) instead of dropping them. Collected, while the body runs, on its thread only (the
worker's finishing thread keeps its own output):

- every warning the process's filters do not ignore, each time it is raised (a "default" or "once"
  filter would otherwise show a warning for the first key only);
- log records of level INFO and up from every logger (a logger's own handlers still get them; the
  root level is lowered to INFO meanwhile, so that a logger left at the default level makes its INFO
  records too);
- lines the body prints to ``sys.stdout`` or ``sys.stderr`` (not what C code writes to the file
  descriptors).

Each line is kept once: a log record that also reaches a stream (a logger without a handler, through
``logging.lastResort``; a handler writing to ``sys.stderr``) is not kept a second time as a printed line.
Paths inside the checkout are named relative to it, as a row's ``where`` is: a survey of another commit
runs in a temporary worktree whose path changes on every run (and would use up the line's length).
Repeated lines are kept once, with a count; a key keeps at most :data:`MAX_MESSAGES` lines of at most
:data:`MAX_LENGTH` characters.

A library may say a line once per process (vLLM's ``info_once``, a log inside an ``lru_cache``'d config
loader, a table loaded on first use): only the first key of each worker to reach it says it, and which
key that is depends on scheduling. :class:`Heard` tells those lines from a key's own: a line the process
has heard before is the key's (its body says it each time); a body that says a line the process has not
heard is run once more, and what it does not say again was said once per process, not for this key.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from ..keys.keyfiles import checkout_prefixes
from ..model.results import Row, SaidOnce

MAX_MESSAGES = 50
MAX_LENGTH = 500
LOG_LEVEL = logging.INFO


class Messages:
    """The lines said while one kind body ran, in order, repeats counted."""

    def __init__(self, root: Path | None = None) -> None:
        """``root``: the checkout, whose paths are named relative to it."""
        self._counts: dict[str, int] = {}
        self._checkout = checkout_prefixes(root) if root is not None else ()

    def add(self, text: str) -> None:
        """Keep one line (checkout paths made relative, whitespace runs collapsed, cut to MAX_LENGTH)."""
        for prefix in self._checkout:
            text = text.replace(prefix, "")
        line = " ".join(text.split())
        if not line:
            return
        if len(line) > MAX_LENGTH:
            line = line[: MAX_LENGTH - 1] + "…"
        self._counts[line] = self._counts.get(line, 0) + 1

    @property
    def said(self) -> list[str]:
        """Each line said, once, in order (without counts)."""
        return list(self._counts)

    @property
    def lines(self) -> list[str]:
        """The lines, a repeated one once with ``(xN)``; past MAX_MESSAGES, a last line counting the rest."""
        return self.lines_without(())

    def lines_without(self, left_out: Collection[str]) -> list[str]:
        """:attr:`lines`, less those of ``left_out`` (lines said once per process: see :class:`Heard`)."""
        lines = [line if n == 1 else f"{line} (x{n})" for line, n in self._counts.items() if line not in left_out]
        return capped(lines)


def capped(lines: list[str]) -> list[str]:
    """``lines``, past MAX_MESSAGES the first ones and a last line counting the rest."""
    if len(lines) > MAX_MESSAGES:
        rest = len(lines) - (MAX_MESSAGES - 1)
        lines = lines[: MAX_MESSAGES - 1] + [f"... and {rest} more"]
    return lines


class Heard:
    """The lines this process's kind bodies have said: whether a key's line is its own, or said once per
    process (see the module's docstring)."""

    def __init__(self) -> None:
        self._lines: set[str] = set()

    def said_once(self, said: Messages, again: Callable[[], Messages]) -> list[str]:
        """The lines of ``said`` that this process had not heard before and that ``again`` (the same kind
        body run once more, called only when there is such a line) does not say."""
        new = [line for line in said.said if line not in self._lines]
        self._lines.update(said.said)
        if not new:
            return []
        repeated = again().said
        self._lines.update(repeated)
        return [line for line in new if line not in repeated]


def survey_said_once(said: Iterable[SaidOnce], rows: Sequence[Row], targets: Sequence[str]) -> tuple[SaidOnce, ...]:
    """What the workers' kind bodies said once per process, as the survey keeps it: each line once per kind
    and target, in the rows' order of kinds, then the targets', then the text's (not the order the workers
    happened to say them in), at most MAX_MESSAGES per kind and target."""
    kinds = {k: i for i, k in enumerate(dict.fromkeys(r.kind for r in rows))}
    order = {t: i for i, t in enumerate(targets)}
    grouped: dict[tuple[str, str], list[str]] = {}
    for s in sorted(set(said), key=lambda s: (kinds.get(s.kind, len(kinds)), order.get(s.target, len(order)), s.text)):
        grouped.setdefault((s.kind, s.target), []).append(s.text)
    return tuple(SaidOnce(kind, target, text) for (kind, target), texts in grouped.items() for text in capped(texts))


class _Listener:
    """What the listening thread is, where its lines go, and whether a log record it keeps is being handled
    (whatever that writes to a stream, the record already says)."""

    def __init__(self, messages: Messages) -> None:
        self.messages = messages
        self.thread = threading.get_ident()
        self.in_record = False

    def here(self) -> bool:
        """True on the listening thread."""
        return threading.get_ident() == self.thread


class _ThreadLines:
    """A stand-in for sys.stdout/sys.stderr: the listening thread's text becomes messages, line by line;
    every other thread's goes to the real stream."""

    def __init__(self, stream: TextIO, name: str, listener: _Listener):
        self._stream, self._name, self._listener = stream, name, listener
        self._pending = ""

    def write(self, text: str) -> int:
        if not self._listener.here():
            return self._stream.write(text)
        if self._listener.in_record:  # a log record kept already, written out by a handler
            return len(text)
        self._pending += text
        *done, self._pending = self._pending.split("\n")
        for line in done:
            self._listener.messages.add(f"{self._name}: {line}" if line.strip() else "")
        return len(text)

    def flush(self) -> None:
        if not self._listener.here():
            self._stream.flush()

    def close_pending(self) -> None:
        if self._pending.strip():
            self._listener.messages.add(f"{self._name}: {self._pending}")
        self._pending = ""

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno ...: the real stream's
        return getattr(self._stream, name)


def _warning_text(message: Any, category: type, filename: str, lineno: int) -> str:
    return f"{category.__name__}: {message} ({_short(filename)}:{lineno})"


def _short(path: str) -> str:
    # Relative to the checkout (the worker's working directory) when inside it.
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


@contextlib.contextmanager
def listening(root: Path | None = None) -> Iterator[Messages]:
    """Collect what the current thread says inside the block (see the module's docstring); ``root``: the
    checkout, whose paths the lines name relative to it."""
    messages = Messages(root)
    listener = _Listener(messages)
    with contextlib.ExitStack() as stack:
        # Warnings: the process's filters, with every "show once" action turned into "always".
        stack.enter_context(warnings.catch_warnings())
        warnings.filters[:] = [("always" if f[0] in ("default", "once", "module") else f[0], *f[1:])  # type: ignore[index]
                               for f in warnings.filters]
        warnings.simplefilter("always", append=True)
        shown = warnings.showwarning

        def showwarning(message: Any, category: type, filename: str, lineno: int,
                        file: Any = None, line: Any = None) -> None:
            if listener.here():
                messages.add(_warning_text(message, category, filename, lineno))
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning

        # Log records: every logger's, when its level lets it make them.
        root_logger = logging.getLogger()
        level = root_logger.level
        handle = logging.Logger.handle

        def handle_record(self: logging.Logger, record: logging.LogRecord) -> Any:
            if not (listener.here() and record.levelno >= LOG_LEVEL):
                return handle(self, record)
            with contextlib.suppress(Exception):  # a record whose arguments do not format
                messages.add(f"{record.levelname} {record.name}: {record.getMessage()}")
            outer, listener.in_record = listener.in_record, True
            try:
                return handle(self, record)
            finally:
                listener.in_record = outer

        logging.Logger.handle = handle_record  # type: ignore[method-assign]
        if level > LOG_LEVEL:
            root_logger.setLevel(LOG_LEVEL)
        streams = [_ThreadLines(sys.stdout, "stdout", listener), _ThreadLines(sys.stderr, "stderr", listener)]
        try:
            with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):  # type: ignore[type-var]
                yield messages
        finally:
            for stream in streams:
                stream.close_pending()
            logging.Logger.handle = handle  # type: ignore[method-assign]
            root_logger.setLevel(level)
