"""Recording the launches of a running program (``regsurvey capture``), and the keys file that
replays them.

The program runs in its own interpreter with a ``sitecustomize`` that calls :func:`start`: every
``JITFunction.run`` appends a launch record (see :mod:`regsurvey.replay`) as one JSON line to the
capture file, flushed at once, so a program that crashes loses nothing it launched before.
"""

from __future__ import annotations

import contextlib
import json
import os
import pprint
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..model.words import count

ENV_FILE = "REGSURVEY_CAPTURE_FILE"
ENV_OFFLINE = "REGSURVEY_CAPTURE_OFFLINE"

SITECUSTOMIZE = '''# Written by regsurvey capture: record every Triton launch of this program.
import os
if os.environ.get("REGSURVEY_CAPTURE_FILE"):
    from regsurvey.capture.recorder import start
    start()
'''


def start() -> None:
    """Install the recorder in this process (called from the generated sitecustomize)."""
    from ..compile import toolchain
    from ..model.targets import get_target
    from .replay import describe_launch

    out = open(os.environ[ENV_FILE], "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    offline = os.environ.get(ENV_OFFLINE) or None
    out.write(json.dumps({"device": offline or _device_target(), "offline": bool(offline)}) + "\n")

    def record(fn: Any, args: tuple, kwargs: dict, grid: Any, specialization: str | None) -> None:
        out.write(json.dumps(describe_launch(fn, args, kwargs, specialization)) + "\n")

    if offline:  # the device is the target's, as under a survey: torch.cuda's questions, NVML, AMD SMI, the smi
        # commands (FlagGems' launchers enter torch.cuda.device(x.device), which a meta tensor has not)
        _KEPT.enter_context(toolchain.device_as(get_target(offline)))
    toolchain.install_launch_recorder(record, get_target(offline) if offline else None)


_KEPT = contextlib.ExitStack()  # what stands in for the offline target's GPU, for the program's whole life


def _device_target() -> str | None:
    # The GPU the program runs on, in regsurvey's target names (None if no GPU is visible).
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        if torch.version.hip:
            return torch.cuda.get_device_properties(0).gcnArchName.split(":")[0]
        major, minor = torch.cuda.get_device_capability()
        return f"sm{major}{minor}"
    except Exception:
        return None


def read_records(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the launch records of a capture file (a torn last line is dropped)."""
    header: dict[str, Any] = {}
    records = []
    for line in path.read_text().splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue  # the program died mid-write
        if "device" in item:
            header = item
        else:
            records.append(item)
    return header, records


def group_launches(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Distinct launches per kernel (same arguments and options = one launch), in first-seen order."""
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for rec in records:
        ident = json.dumps([rec["args"], rec["kwargs"]], sort_keys=True)
        kept = groups.setdefault(rec["kernel"], {}).setdefault(ident, rec)
        if kept.get("specialization") is None and rec.get("specialization"):
            kept["specialization"] = rec["specialization"]
    # A kind is named after its kernel's function; kernels of one name in two modules are told apart by
    # their modules' last part ("attention.kernel", "norm.kernel").
    def short(path: str) -> str:
        return path.rsplit(":", 1)[-1].rsplit(".", 1)[-1]

    names = [short(path) for path in groups]
    def kind_name(path: str) -> str:
        if names.count(short(path)) == 1:
            return short(path)
        module = path.rsplit(":", 1)[0] if ":" in path else path.rsplit(".", 1)[0]
        return f"{module.rsplit('.', 1)[-1]}.{short(path)}"

    return {kind_name(path): list(launches.values()) for path, launches in groups.items()}


def keys_file_text(groups: dict[str, list[dict[str, Any]]], targets: list[str], command: list[str],
                   device: str | None) -> str:
    """A keys file with one kind per kernel and one key per distinct launch (axis ``v``)."""
    launches = {name: [{k: r[k] for k in ("kernel", "args", "kwargs")} for r in recs]
                for name, recs in groups.items()}
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f'''"""Launches captured by `regsurvey capture -- {' '.join(command)}`
on {when}{f' ({device})' if device else ''}: {count(sum(map(len, launches.values())), 'distinct launch')} of \
{count(len(launches), 'kernel')}. Each key replays one launch through Triton's own binder for the surveyed target.
"""

from math import inf, nan  # noqa: F401 - how the records below spell infinite and NaN arguments

import regsurvey as rs
from regsurvey.replay import replay

TARGETS = {targets!r}

LAUNCHES = {pprint.pformat(launches, width=110, sort_dicts=False)}

for _name, _records in LAUNCHES.items():
    _matrix = rs.Matrix(targets=TARGETS, v=list(range(len(_records))))
    _matrix.kind(axes=["v"], name=_name)(lambda v, _records=_records: replay(_records[v]))
    globals()[f"matrix_{{_name}}"] = _matrix
del _matrix
'''


def capture_environment(capture_file: Path, site_dir: Path, offline: str | None) -> dict[str, str]:
    """The environment the captured program runs in: our sitecustomize first on its path."""
    site_dir.mkdir(parents=True, exist_ok=True)
    (site_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
    package_parent = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    paths = [str(site_dir), package_parent] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[ENV_FILE] = str(capture_file)
    if offline:
        env[ENV_OFFLINE] = offline
    else:
        env.pop(ENV_OFFLINE, None)
    return env
