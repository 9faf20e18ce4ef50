"""The first of regsurvey a worker of another environment's interpreter runs (:mod:`.other_toolchain` starts
it, its own torch and Triton already imported): the survey's connection from the file descriptor it was
given, what :func:`.worker.serve` takes as its first message, then the worker itself."""

from __future__ import annotations

from multiprocessing.connection import Connection


def main(fd: int) -> None:
    """Serve the survey on the connection at file descriptor ``fd``."""
    conn = Connection(fd)
    try:
        args = conn.recv()
    except (EOFError, OSError):  # the survey ended before this worker started
        return
    from .worker import serve  # regsurvey's worker, and with it the capture machinery

    serve(conn, *args)
