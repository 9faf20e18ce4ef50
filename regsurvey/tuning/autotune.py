"""``prune_by_survey``: a prune table plugged into ``triton.autotune(prune_configs_by=...)``, at run time.

Runs in the project's own process (a serving engine, a training step), so it imports nothing heavy: not
torch or Triton at import (torch is asked for the running GPU at the first launch, by then imported by the
project anyway), nothing of regsurvey's compile side, only the table's model.

While regsurvey itself surveys the project (a kind body runs under capture), it keeps every config: the
survey must see the configs the table prunes, or the next ``regsurvey prune`` would not list them again.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..keys.session import current_session
from ..model.prune import PrunedConfig, PruneTable, PruneTableError
from ..model.targets import UnknownTargetError, get_target

EarlyPrune = Callable[..., list[Any]]


def load_table(table: PruneTable | str | os.PathLike[str]) -> PruneTable:
    """The table itself, or read from its file (PruneTableError for a file that is not one; OSError where it
    cannot be read)."""
    if isinstance(table, PruneTable):
        return table
    return PruneTable.from_json(Path(table).read_text())


def running_target() -> str | None:
    """The regsurvey target of the GPU this process runs on (``gfx942``, ``sm90`` ...), from torch's device
    properties (``gcnArchName`` on ROCm, the compute capability on CUDA); None without a GPU or on one
    regsurvey does not survey."""
    torch = importlib.import_module("torch")
    try:
        if not torch.cuda.is_available():
            return None
        device = torch.cuda.current_device()
        if getattr(torch.version, "hip", None):
            name = str(torch.cuda.get_device_properties(device).gcnArchName).split(":")[0]
        else:
            major, minor = torch.cuda.get_device_capability(device)
            name = f"sm{major}{minor}"
        return get_target(name).name
    except (UnknownTargetError, RuntimeError, AssertionError):
        return None


def value_of(value: Any) -> Any:
    """A config kwarg or launch argument as the table writes constexprs (``Row.build``): a JSON scalar as it
    is, a ``triton.language`` dtype by its name, anything else by its ``repr``."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if type(value).__module__.startswith("triton.language") and type(value).__name__ == "dtype":
        return str(value)
    inner = getattr(value, "value", None)  # a tl.constexpr
    if type(value).__name__ == "constexpr" and inner is not value:
        return value_of(inner)
    return repr(value)


def matches(pruned: PrunedConfig, config: Any, launch_args: dict[str, Any]) -> bool:
    """True when the autotuner's ``config`` (a ``triton.Config``) launched with ``launch_args`` is ``pruned``:
    the same warps and stages, every kwarg of the config the constexpr the build had, and every other
    constexpr of the build that the launch passes the value it passes."""
    if pruned.num_warps is not None and getattr(config, "num_warps", None) != pruned.num_warps:
        return False
    if pruned.num_stages is not None and getattr(config, "num_stages", None) != pruned.num_stages:
        return False
    kwargs = dict(getattr(config, "kwargs", {}) or {})
    for name, value in kwargs.items():
        if name not in pruned.constexprs or value_of(value) != pruned.constexprs[name]:
            return False
    return all(value_of(launch_args[name]) == value for name, value in pruned.constexprs.items()
               if name not in kwargs and name in launch_args)


def kernel_name(kernel: Any) -> str:
    """The name a table lists a kernel by: a string as it is, else the name of the function under a
    ``@triton.jit`` (and ``@triton.autotune``/``@triton.heuristics``) wrapper."""
    if isinstance(kernel, str):
        return kernel
    seen = 0
    while not hasattr(kernel, "__name__") or hasattr(kernel, "fn"):
        kernel = getattr(kernel, "fn", None)
        seen += 1
        if kernel is None or seen > 16:
            raise TypeError("kernel is neither a name nor a Triton kernel")
    return str(kernel.__name__)


class SurveyPrune:
    """The ``early_config_prune`` function :func:`prune_by_survey` returns (see there)."""

    def __init__(self, table: PruneTable, kernel: str, target: str | None, then: EarlyPrune | None):
        self.table, self.kernel, self.then = table, kernel, then
        self._target = target
        self._asked = target is not None
        self.last_pruned: list[PrunedConfig] = []  # what the last call pruned, for a project's log

    @property
    def target(self) -> str | None:
        """The target the table is read for: the one given, else the running GPU's (asked once)."""
        if not self._asked:
            self._target, self._asked = running_target(), True
        return self._target

    def pruned_configs(self) -> tuple[PrunedConfig, ...]:
        """The table's pruned configs of this kernel on this target."""
        return tuple(c for c in self.table.configs.get(self.target or "", ()) if c.kernel == self.kernel)

    def __call__(self, configs: Sequence[Any], named_args: dict[str, Any], **kwargs: Any) -> list[Any]:
        configs = list(self.then(configs, named_args, **kwargs)) if self.then is not None else list(configs)
        self.last_pruned = []
        if current_session() is not None or not configs:  # regsurvey surveying: every config is a row
            return configs
        table = self.pruned_configs()
        if not table:
            return configs
        launch_args = {**named_args, **kwargs}
        verdicts = [next((p for p in table if matches(p, c, launch_args)), None) for c in configs]
        kept = [c for c, v in zip(configs, verdicts) if v is None]
        if not kept:  # every config pruned: the least bad one stays (an autotuner needs one)
            least = min(range(len(configs)), key=lambda i: _badness(verdicts[i]))
            kept = [configs[least]]
            verdicts[least] = None
        self.last_pruned = [v for v in verdicts if v is not None]
        return kept


def _badness(pruned: PrunedConfig | None) -> tuple[int, int]:
    if pruned is None:
        return (-1, 0)
    return (pruned.reason.badness, pruned.spill_bytes)


def prune_by_survey(table: PruneTable | str | os.PathLike[str], kernel: Any, *, target: str | None = None,
                    then: EarlyPrune | None = None) -> SurveyPrune:
    """An ``early_config_prune`` for ``triton.autotune``: drop the configs of ``kernel`` that ``table`` (a
    ``regsurvey prune`` file, or its loaded :class:`PruneTable`) prunes on the running GPU's target::

        @triton.autotune(configs=CONFIGS, key=["N", "K"],
                         prune_configs_by={"early_config_prune": prune_by_survey("prune.json", "gemm_kernel")})
        @triton.jit
        def gemm_kernel(...): ...

    ``kernel``: the kernel's name as the table lists it (its function's ``__name__``), or the kernel
    itself. ``target``: the table's target to read (default: the running GPU's, from torch, asked at the
    first launch); a GPU the table has no configs for prunes nothing. ``then``: the project's own
    ``early_config_prune``, run first. Configs are matched by their values, never by their index: a config
    list reordered since the survey prunes the same configs. At least one config is always kept: where the
    table prunes them all, the least bad (spilling before not launching before not building, the least
    spill first). The file is read here, once: a table of another schema raises PruneTableError now, not
    at the first launch.
    """
    loaded = load_table(table)
    if target is not None:
        target = get_target(target).name
    return SurveyPrune(loaded, kernel_name(kernel), target, then)


__all__ = ["PruneTableError", "SurveyPrune", "load_table", "prune_by_survey", "running_target"]
