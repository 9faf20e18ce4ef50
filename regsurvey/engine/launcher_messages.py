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

Repeated lines are kept once, with a count; a key keeps at most :data:`MAX_MESSAGES` lines of at most
:data:`MAX_LENGTH` characters.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

MAX_MESSAGES = 50
MAX_LENGTH = 500
LOG_LEVEL = logging.INFO


class Messages:
    """The lines said while one kind body ran, in order, repeats counted."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, text: str) -> None:
        """Keep one line (whitespace runs collapsed, cut to MAX_LENGTH)."""
        line = " ".join(text.split())
        if not line:
            return
        if len(line) > MAX_LENGTH:
            line = line[: MAX_LENGTH - 1] + "…"
        self._counts[line] = self._counts.get(line, 0) + 1

    @property
    def lines(self) -> list[str]:
        """The lines, a repeated one once with ``(xN)``; past MAX_MESSAGES, a last line counting the rest."""
        lines = [line if n == 1 else f"{line} (x{n})" for line, n in self._counts.items()]
        if len(lines) > MAX_MESSAGES:
            rest = len(lines) - (MAX_MESSAGES - 1)
            lines = lines[: MAX_MESSAGES - 1] + [f"... and {rest} more"]
        return lines


class _ThreadLines:
    """A stand-in for sys.stdout/sys.stderr: the listening thread's text becomes messages, line by line;
    every other thread's goes to the real stream."""

    def __init__(self, stream: TextIO, name: str, thread: int, messages: Messages):
        self._stream, self._name, self._thread, self._messages = stream, name, thread, messages
        self._pending = ""

    def write(self, text: str) -> int:
        if threading.get_ident() != self._thread:
            return self._stream.write(text)
        self._pending += text
        *done, self._pending = self._pending.split("\n")
        for line in done:
            self._messages.add(f"{self._name}: {line}" if line.strip() else "")
        return len(text)

    def flush(self) -> None:
        if threading.get_ident() != self._thread:
            self._stream.flush()

    def close_pending(self) -> None:
        if self._pending.strip():
            self._messages.add(f"{self._name}: {self._pending}")
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
def listening() -> Iterator[Messages]:
    """Collect what the current thread says inside the block (see the module's docstring)."""
    messages = Messages()
    thread = threading.get_ident()
    with contextlib.ExitStack() as stack:
        # Warnings: the process's filters, with every "show once" action turned into "always".
        stack.enter_context(warnings.catch_warnings())
        warnings.filters[:] = [("always" if f[0] in ("default", "once", "module") else f[0], *f[1:])  # type: ignore[index]
                               for f in warnings.filters]
        warnings.simplefilter("always", append=True)
        shown = warnings.showwarning

        def showwarning(message: Any, category: type, filename: str, lineno: int,
                        file: Any = None, line: Any = None) -> None:
            if threading.get_ident() == thread:
                messages.add(_warning_text(message, category, filename, lineno))
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = showwarning

        # Log records: every logger's, when its level lets it make them.
        root = logging.getLogger()
        level = root.level
        handle = logging.Logger.handle

        def handle_record(self: logging.Logger, record: logging.LogRecord) -> Any:
            if threading.get_ident() == thread and record.levelno >= LOG_LEVEL:
                with contextlib.suppress(Exception):  # a record whose arguments do not format
                    messages.add(f"{record.levelname} {record.name}: {record.getMessage()}")
            return handle(self, record)

        logging.Logger.handle = handle_record  # type: ignore[method-assign]
        if level > LOG_LEVEL:
            root.setLevel(LOG_LEVEL)
        streams = [_ThreadLines(sys.stdout, "stdout", thread, messages),
                   _ThreadLines(sys.stderr, "stderr", thread, messages)]
        try:
            with contextlib.redirect_stdout(streams[0]), contextlib.redirect_stderr(streams[1]):  # type: ignore[type-var]
                yield messages
        finally:
            for stream in streams:
                stream.close_pending()
            logging.Logger.handle = handle  # type: ignore[method-assign]
            root.setLevel(level)
