"""Imported once by the worker forkserver: what every worker needs before it knows its checkout.

Each worker is then a fork of that process: torch, Triton and regsurvey imported, Triton's own
source hash computed, the backends made. Nothing here may start a thread (a fork keeps only one).
"""

from __future__ import annotations

import contextlib
import signal

# Ctrl-C reaches the whole process group; the survey's own process handles it (and kills the workers).
# Here it would only print a traceback from the middle of an import. Workers forked later inherit it.
signal.signal(signal.SIGINT, signal.SIG_IGN)

with contextlib.suppress(ImportError):  # a project without torch: the keys files will say so
    import torch  # noqa: F401

from .. import linting  # noqa: F401, E402
from ..compile import toolchain  # noqa: E402
from ..objects import amd_object, nvidia_object  # noqa: F401, E402
from . import worker  # noqa: F401, E402

with contextlib.suppress(Exception):  # an unusable Triton: every key reports it, with its message
    toolchain.warm_up()
