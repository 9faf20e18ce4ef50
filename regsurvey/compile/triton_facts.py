"""What regsurvey knows of Triton beyond calling it: the releases it works with, the names of a compile's
texts, the variables that place Triton's cache, the warning it prints in every process, the arguments it
appends to a kernel's, and how its TTIR names a kernel's parameters. Each was read in Triton's source, 3.6
and 3.9 alike unless said.

The modules outside ``compile/`` that need one import it from here (the engine, the analysis); the layers
that may not import ``compile/`` (``objects/``, ``lint/``, ``pressure/``) are passed what they need.
Standard library only and cheap to import: the worker reads it before Triton is imported.
:mod:`.toolchain` stays the one module that calls into Triton.
"""

from __future__ import annotations

import re
import warnings

from ..model.targets import Target

# The Triton releases regsurvey works with, oldest and newest (major, minor): pyproject.toml's
# ``triton>=3.6,<3.10``, docs/figures.md's "Triton versions". What ``--toolchain`` accepts in another
# environment (engine/other_toolchain.py).
SUPPORTED_TRITON = ((3, 6), (3, 9))


def supported_triton(version: str) -> bool:
    """Whether Triton ``version`` (``3.6.0``, ``3.9.0+git1a2b3c``) is a release regsurvey works with."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return found is not None and SUPPORTED_TRITON[0] <= (int(found[1]), int(found[2])) <= SUPPORTED_TRITON[1]


def supported_text() -> str:
    """The supported releases in words: ``3.6 to 3.9``."""
    (a, b), (c, d) = SUPPORTED_TRITON
    return f"{a}.{b} to {c}.{d}"


# The keys of a compiled kernel's ``asm`` (``CompiledKernel.asm``): its texts, from Triton's IR to the
# target's assembly, and the object (bytes).
TTIR = "ttir"
TTGIR = "ttgir"  # holds the shared-memory buffers Triton allocates: the LDS the object does not record
LLIR = "llir"
AMDGCN = "amdgcn"
PTX = "ptx"
HSACO = "hsaco"
CUBIN = "cubin"
# Not Triton's: the log of ``ptxas -v`` that made a cubin, which compile.toolchain catches and keeps among
# the compile's texts (and beside its stored object) under this name.
PTXAS_LOG = "ptxas_log"


def object_key(target: Target) -> str:
    """The key of the compiled object in ``asm``: ``hsaco`` or ``cubin`` (also its extension in the store)."""
    return HSACO if target.is_amd else CUBIN


def code_key(target: Target) -> str:
    """The key of the target's assembly text in ``asm``: ``amdgcn`` or ``ptx``."""
    return AMDGCN if target.is_amd else PTX


# Triton's settings are environment variables under this prefix (``triton.knobs``).
ENV_PREFIX = "TRITON_"
# Where Triton keeps its compile cache: TRITON_CACHE_DIR, else TRITON_HOME's .triton/cache (knobs.cache).
CACHE_DIR_VAR = "TRITON_CACHE_DIR"
HOME_VAR = "TRITON_HOME"
# Whether Triton fuses multiplies and adds (its default flips in 3.10): recorded in a survey's toolchain.
FP_FUSION_VAR = "TRITON_DEFAULT_FP_FUSION"
# How Triton 3.9 starts the warning it gives while FP_FUSION_VAR is unset (triton/_utils.py,
# FP_FUSION_DEFAULT_WARNING), once per process; 3.6 gives none.
FP_FUSION_UNSET_WARNING = f"{FP_FUSION_VAR} is unset"


def ignore_fp_fusion_warning() -> None:
    """Silence the warning of an unset :data:`FP_FUSION_VAR` in this process: the survey records the
    setting in its toolchain block, and the warning would repeat once per worker."""
    warnings.filterwarnings("ignore", message=FP_FUSION_UNSET_WARNING)


# The pointer arguments Triton appends to every kernel's, after its own non-constexpr ones, on both
# backends: a global scratch buffer, then a profile scratch buffer. Its launchers always pass both
# (backends/*/driver.py: ``params.append("&global_scratch")``, ``params.append("&profile_scratch")`` in
# 3.6; "+ 2 for global & profile scratch" in 3.9's driver.c), so the object always has them: on AMD the
# last two arguments before the hidden ones, each an 8-byte global buffer; on NVIDIA the last two .param.
APPENDED_ARGS = ("global_scratch", "profile_scratch")

# A TTIR kernel's signature: ``tt.func public @name(%arg0: !tt.ptr<f32> loc("x_ptr"), ...)``, its
# parameters the kernel's non-constexpr ones, in order, each located by its Python name.
_TTIR_FUNC = re.compile(r"tt\.func\s+(?:public\s+)?@[\w$.]+\((.*?)\)\s*(?:attributes|\{)", re.S)
_TTIR_PARAM = re.compile(r"%([\w$.]+)\s*:")
_TTIR_LOC = re.compile(r'loc\("([^"]+)"')


def arg_names_from_ttir(ttir: str) -> list[str] | None:
    """The kernel's non-constexpr Python parameters in order, from Triton's ``ttir`` (``loc("x_ptr")``);
    the TTIR's own names where not every parameter is located; None without a kernel signature."""
    m = _TTIR_FUNC.search(ttir)
    if not m:
        return None
    params = _TTIR_PARAM.findall(m[1])
    located = _TTIR_LOC.findall(m[1])
    return located if len(located) == len(params) else params
