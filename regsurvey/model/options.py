"""What a survey is asked for: the selection (targets, kinds, keys) and how to run it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SurveyOptions:
    """What to survey and how."""

    targets: tuple[str, ...] | None = None  # override the matrices' targets
    kinds: tuple[str, ...] = ()  # only these kinds (glob patterns)
    keys: tuple[str, ...] = ()  # only keys whose id matches one of these glob patterns
    jobs: int = 1
    timeout: float = 600.0  # seconds per key
    triton_cache_dir: str | None = None  # a Triton cache of the survey's own (e.g. a cold one)
    reuse_results: bool = True  # take results of identical kernels from the content-addressed cache
    ray_address: str | None = None  # survey on this Ray cluster (engine/ray_executor.py); None: local workers
    # Another environment's Python interpreter, whose Triton and torch the workers use (--toolchain;
    # engine/other_toolchain.py); None: this process's own.
    toolchain: str | None = None
