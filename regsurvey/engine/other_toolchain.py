"""Another Python environment's Triton and torch as a survey's toolchain (``--toolchain PATH``), while the
survey itself stays in this process: the interpreter PATH names (a virtual environment's directory names its
``bin/python``), checked once (:func:`other_toolchain`: it runs, holds Triton 3.6 to 3.9 and torch, and
imports this regsurvey), the toolchain block its workers record, and its workers started
(:func:`start_worker`).

A worker of another interpreter is a plain subprocess of it (``python -c BOOTSTRAP``), not a
multiprocessing child: spawn hands its child the parent's ``sys.path`` (this environment's Triton), and a
fork or a forkserver would be this interpreter. Its ``sys.path`` is its own environment's, with the
directory holding this regsurvey's package first; it imports its own torch and Triton before anything
else, and only then, where that environment lacks regsurvey's pure-Python dependencies (click, pyelftools,
msgpack ...), finds them in this environment's directories, appended last. It speaks :mod:`.protocol` over
a socket pair (a multiprocessing ``Connection`` at both ends), so the local transport and the schedule
drive it as any other worker; what :func:`.worker.serve` takes travels as the first message
(:mod:`.other_toolchain_worker` receives it). No warm server or forkserver serves another toolchain: each
of its workers imports torch and Triton itself. ``PYTHONPATH`` and ``PYTHONHOME`` are this interpreter's
and do not travel.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..compile.triton_facts import cannot_build_text, supported_text, supported_triton
from ..model.targets import get_target
from .errors import SurveyError

# The spelling of "this process's own environment" wherever a toolchain is named (upgrade's --to default).
CURRENT = "current"

# The Python regsurvey needs (pyproject.toml's requires-python).
PYTHON_MIN = (3, 10)

# regsurvey's own dependencies, pure Python (or with a pure fallback: msgpack, markupsafe), as modules: where
# the other environment lacks one, this environment's copy is found after its own packages.
DEPENDENCIES = ("click", "elftools", "msgpack", "jinja2", "markupsafe", "rich", "markdown_it", "mdurl", "pygments")

# The variables that place this interpreter's packages: the other interpreter finds its own.
_OWN_VARIABLES = ("PYTHONPATH", "PYTHONHOME")

# The directory holding the regsurvey package: first on the other interpreter's path.
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])

# What the other interpreter runs to say what it is. Plain enough for any Python to run and report its
# version (regsurvey needs 3.10, an older one must still say so); the last line is the answer.
_PROBE = r"""
import json, sys
found = {"python": list(sys.version_info[:3])}
def done(**more):
    found.update(more)
    sys.stdout.write("\nREGSURVEY-PROBE " + json.dumps(found) + "\n")
    sys.exit(0)
if tuple(sys.version_info[:2]) < tuple(json.loads(sys.argv[3])):
    done()
for name in ("triton", "torch"):
    try:
        module = __import__(name)
    except BaseException as exc:
        done(missing=name, error="%s: %s" % (type(exc).__name__, exc))
    found[name] = getattr(module, "__version__", "unknown")
import importlib.util
lacking = [m for m in json.loads(sys.argv[2]) if importlib.util.find_spec(m) is None]
found["lacking"] = lacking
if lacking:
    sys.path.extend(json.loads(sys.argv[4]))
sys.path.insert(0, sys.argv[1])
try:
    import regsurvey
    from regsurvey.compile import toolchain
    from regsurvey.compile.triton_facts import ignore_fp_fusion_warning
except BaseException as exc:
    done(unusable="%s: %s" % (type(exc).__name__, exc))
found["regsurvey"] = regsurvey.__file__
ignore_fp_fusion_warning()
try:
    blocks = {backend: toolchain.toolchain_info(backend) for backend in ("hip", "cuda")}
except BaseException as exc:
    done(silent="%s: %s" % (type(exc).__name__, exc))
try:
    from regsurvey.objects.nvidia_object import tool_path
    found["nvdisasm"] = tool_path("nvdisasm")
except BaseException:
    pass
try:
    from regsurvey.model.targets import TARGETS
    found["cannot_build"] = {name: toolchain.cannot_build(target) for name, target in TARGETS.items()}
except BaseException:
    pass
done(toolchain=blocks)
"""

# What a worker of the other interpreter runs first: ``sys.argv`` is the package's directory, the
# connection's file descriptor, then this environment's directories of the dependencies it lacks. Its
# own torch and Triton are imported before those are on its path.
_BOOTSTRAP = ("import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); sys.path[0] = sys.argv[1]; "
              "import torch, triton; sys.path += sys.argv[3:]; "
              "from regsurvey.engine.other_toolchain_worker import main; main(int(sys.argv[2]))")

_PROBE_TIMEOUT_S = 300.0  # a first import of torch and Triton from a cold disk


@dataclass(frozen=True)
class OtherToolchain:
    """Another environment's interpreter, checked: its versions, the toolchain block per backend its workers
    record (a survey's ``toolchain``), and this environment's directories holding the regsurvey
    dependencies it lacks (appended to its workers' path)."""

    python: str  # the interpreter, as named (a venv's bin/python: not resolved to the interpreter it links to)
    python_version: str
    triton: str
    torch: str
    toolchain: dict[str, dict[str, Any]]  # backend -> block, as compile.toolchain.toolchain_info there says
    extra_path: tuple[str, ...] = ()
    # The nvdisasm its Triton bundles (None: none): the one that reads its ptxas' cubins whole (CUDA 13's
    # computes no life ranges of a CUDA 12 cubin), for their source-line pressure.
    nvdisasm: str | None = None
    # Every target's name, and why its Triton cannot build for it (compile.toolchain.cannot_build there; None:
    # it can). Empty where it did not say (one a survey will not refuse).
    cannot_build: dict[str, str | None] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """What reports call it: ``triton 3.6.0``."""
        return f"triton {self.triton}"


def interpreter(spec: str, option: str = "--toolchain") -> str:
    """The interpreter ``spec`` names: a Python executable, or a virtual environment's directory (its
    ``bin/python``); SurveyError in one line otherwise. Absolute, its links kept: a venv's ``bin/python``
    links to the interpreter it was made from, which would not see the venv's packages."""
    path = Path(spec).expanduser()
    if path.is_dir():
        found = next((path / name for name in ("bin/python", "bin/python3") if (path / name).is_file()), None)
        if found is None:
            raise SurveyError(f"{option} {spec}: a directory without bin/python (expected a Python interpreter or "
                              "a virtual environment)")
        path = found
    if not path.exists():
        raise SurveyError(f"{option} {spec}: no such file or directory")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise SurveyError(f"{option} {spec}: not a Python interpreter (not an executable file)")
    return os.path.abspath(path)


def chosen_toolchain(spec: str | None, option: str = "--toolchain") -> str | None:
    """The interpreter ``spec`` names, checked (:func:`other_toolchain`): what ``SurveyOptions.toolchain``
    holds; None for this environment's own (``spec`` None, ``current``, or this very interpreter)."""
    if spec is None or spec == CURRENT or interpreter(spec, option) == os.path.abspath(sys.executable):
        return None
    return other_toolchain(spec, option).python


def other_toolchain(spec: str, option: str = "--toolchain") -> OtherToolchain:
    """The toolchain of the interpreter ``spec`` names (:func:`interpreter`), checked; SurveyError in one
    line, naming ``option`` and ``spec``, where it is not one a survey can use: not an interpreter, a
    Python older than regsurvey's, no Triton or no torch, a Triton outside the supported releases, or
    regsurvey does not import there."""
    python = interpreter(spec, option)
    try:
        return probed(python)
    except SurveyError as exc:
        raise SurveyError(f"{option} {spec}: {exc}") from None


@functools.cache
def probed(python: str) -> OtherToolchain:
    """What ``python`` (an interpreter, :func:`interpreter`'s) is, asked once per process (importing torch
    and Triton there takes seconds); SurveyError saying why a survey cannot use it."""
    ours = json.dumps(dependency_path(DEPENDENCIES))  # where the other environment lacks any
    try:
        done = subprocess.run([python, "-c", _PROBE, PACKAGE_PARENT, json.dumps(DEPENDENCIES),
                               json.dumps(PYTHON_MIN), ours],
                              env=other_environment(os.environ), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, errors="replace", timeout=_PROBE_TIMEOUT_S, check=False)
    except OSError as exc:  # not executable as a program (an exec format error, ...)
        raise SurveyError(f"not a Python interpreter ({exc.strerror or exc})") from None
    except subprocess.TimeoutExpired:
        raise SurveyError(f"did not say what it is within {_PROBE_TIMEOUT_S:.0f} s") from None
    answer = next((line for line in reversed(done.stdout.splitlines()) if line.startswith("REGSURVEY-PROBE ")), None)
    if answer is None:
        said = next((line for line in reversed((done.stderr or done.stdout).splitlines()) if line.strip()), "")
        raise SurveyError(f"not a Python interpreter that runs ({_one_line(said) or f'exit status {done.returncode}'})")
    try:
        found = json.loads(answer.removeprefix("REGSURVEY-PROBE "))
    except ValueError:
        raise SurveyError("not a Python interpreter that runs (its answer is not one)") from None
    return _checked(python, found)


def _checked(python: str, found: dict[str, Any]) -> OtherToolchain:
    """The probe's answer ``found`` as an OtherToolchain; SurveyError for what makes it unusable."""
    version = ".".join(str(n) for n in found["python"])
    if tuple(found["python"][:2]) < PYTHON_MIN:
        raise SurveyError(f"Python {version} cannot run regsurvey (it needs Python "
                          f"{'.'.join(map(str, PYTHON_MIN))} or newer)")
    if "missing" in found:
        raise SurveyError(f"its environment has no {'Triton' if found['missing'] == 'triton' else 'torch'} "
                          f"(import {found['missing']}: {_one_line(found['error'])})")
    if not supported_triton(found["triton"]):
        raise SurveyError(f"Triton {found['triton']} is outside the releases regsurvey supports "
                          f"({supported_text()})")
    if "unusable" in found:
        raise SurveyError(f"regsurvey does not import under Python {version} there ({_one_line(found['unusable'])})")
    if not str(found["regsurvey"]).startswith(PACKAGE_PARENT + os.sep):
        raise SurveyError(f"it imports another regsurvey ({found['regsurvey']}), not this one")
    if "silent" in found:
        raise SurveyError(f"its Triton {found['triton']} does not say what it compiles with "
                          f"({_one_line(found['silent'])})")
    return OtherToolchain(python=python, python_version=version, triton=found["triton"], torch=found["torch"],
                          toolchain=found["toolchain"], extra_path=tuple(dependency_path(found["lacking"])),
                          nvdisasm=found.get("nvdisasm"),
                          cannot_build=dict(found.get("cannot_build", {})))


def _one_line(text: str, limit: int = 200) -> str:
    """``text``'s first line that says something, at most ``limit`` characters."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[:limit - 3] + "..."


def dependency_path(modules: list[str] | tuple[str, ...]) -> list[str]:
    """The directories of this environment's ``sys.path`` that hold ``modules`` (each once, in order)."""
    directories: dict[str, None] = {}
    for module in modules:
        spec = importlib.util.find_spec(module)
        if spec is None:
            continue
        if spec.submodule_search_locations:  # a package: the directory holding its directory
            directories[str(Path(next(iter(spec.submodule_search_locations))).parent)] = None
        elif spec.origin:
            directories[str(Path(spec.origin).parent)] = None
    return list(directories)


def other_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for the other interpreter: without the variables that place this interpreter's packages."""
    return {k: v for k, v in env.items() if k not in _OWN_VARIABLES}


def toolchain_name(python: str | None) -> str:
    """What reports call the toolchain of ``python`` (None: this process's): ``triton 3.9.0``."""
    if python is not None:
        return probed(python).name
    import triton

    return f"triton {triton.__version__}"


def refuse_unbuildable(targets: Iterable[str], python: str | None) -> None:
    """SurveyError, in one line, for the first of ``targets`` (names) that the Triton of ``python`` (None:
    this environment's) cannot build for, naming the release that can (``target gfx1250: Triton 3.4.0 cannot
    build for it (its LLVM does not know gfx1250); Triton 3.6 or newer can``): what a survey of them does
    before any key is compiled. This environment's Triton is asked here, once per target and process
    (:func:`regsurvey.compile.toolchain.cannot_build`); another's was asked by :func:`probed`, there."""
    for target in dict.fromkeys(get_target(name) for name in targets):
        if python is not None:
            found = probed(python)
            why, version = found.cannot_build.get(target.name), found.triton
        else:
            import triton

            from ..compile.toolchain import cannot_build

            why, version = cannot_build(target), triton.__version__
        if why is not None:
            raise SurveyError(cannot_build_text(target.name, version, why))


def nvdisasm_of(python: str | None) -> str | None:
    """The nvdisasm that reads the cubins ``python``'s toolchain makes (None: this environment's own)."""
    return probed(python).nvdisasm if python is not None else None


def local_only(ray: str | None, python: str | None) -> None:
    """SurveyError where a survey on a Ray cluster (``ray``: its address) is asked to use another
    interpreter: its actors run the cluster's own environment."""
    if ray is not None and python is not None:
        raise SurveyError("--toolchain surveys with local workers only: it cannot be used with --ray (or "
                          "REGSURVEY_RAY)")


class OtherProcess:
    """A worker of another interpreter, as the local pool sees it (the subset of
    ``multiprocessing.Process`` it uses), over the ``subprocess.Popen`` that started it."""

    def __init__(self, popen: subprocess.Popen[bytes]):
        self._popen = popen
        self.pid = popen.pid

    @property
    def exitcode(self) -> int | None:
        """Its exit status (a signal's negative number), None while it runs."""
        return self._popen.poll()

    def is_alive(self) -> bool:
        """Whether it still runs."""
        return self._popen.poll() is None

    def kill(self) -> None:
        """SIGKILL, unless it has ended."""
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.kill()

    def join(self, timeout: float | None = None) -> None:
        """Wait for it to end, ``timeout`` seconds at most."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)


def start_worker(python: str, args: tuple[Any, ...]) -> tuple[OtherProcess, Connection]:
    """A worker of ``python`` (:func:`probed` already) serving :func:`.worker.serve`'s ``args`` (after its
    connection; their environment is the worker's, :func:`other_environment` of it): the process and the
    survey's end of its connection."""
    found = probed(python)
    ours, theirs = multiprocessing.Pipe()
    environ = args[4]
    try:
        # Its stdout is the survey's stderr from the start, as a worker makes it (what torch or Triton print
        # as they import never lands in the survey's JSON or table).
        popen = subprocess.Popen([python, "-c", _BOOTSTRAP, PACKAGE_PARENT, str(theirs.fileno()), *found.extra_path],
                                 env=environ, stdin=subprocess.DEVNULL, stdout=2, pass_fds=(theirs.fileno(),))
    except OSError as exc:
        ours.close()
        raise SurveyError(f"cannot start a worker of {python}: {exc.strerror or exc}") from None
    finally:
        theirs.close()
    ours.send(args)
    return OtherProcess(popen), ours
