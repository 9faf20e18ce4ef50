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
    found = release(version)
    return found is not None and SUPPORTED_TRITON[0] <= found <= SUPPORTED_TRITON[1]


def supported_text() -> str:
    """The supported releases in words: ``3.6 to 3.9``."""
    (a, b), (c, d) = SUPPORTED_TRITON
    return f"{a}.{b} to {c}.{d}"


def release(version: str) -> tuple[int, int] | None:
    """The (major, minor) release of Triton ``version`` (``3.6.0``, ``3.9.0+git1a2b3c``); None if unreadable."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else None


# The first Triton release that builds each target (every release after it does too), as a compile of one
# small kernel per target with each PyPI wheel from 3.0.0 to 3.9.0 found (Linux x86-64, Python 3.11; AMD
# before 3.5 linked by an ld.lld given in TRITON_HIP_LLD_PATH); the releases before say:
# - gfx950: 3.1.0 "unsupported target: 'gfx950'" (Triton's own AMD backend); 3.2.0 builds it (triton#5452,
#   "[release/3.2.x] Add gfx950 target definition").
# - gfx1250: 3.5.1 "unsupported target: 'gfx1250'" (its LLVM knows the processor); 3.4.0 the same, and its LLVM,
#   given a module alone, prints "'gfx1250' is not a recognized processor for this target (ignoring processor)"
#   and builds for "gfx000"; 3.6.0 builds it (triton#8131, "[AMD] Add gfx1250 skeleton").
# - sm100, sm120: 3.2.0's ptxas (CUDA 12.4) "Value 'sm_100' is not defined for option 'gpu-name'" (and LLVM
#   knows no sm_120); 3.3.0 builds both with its ptxas-blackwell (CUDA 12.8); 3.3.1 fixes the compile of some
#   kernels for sm_120 (triton#6771, as pytorch#153951 names it).
# - sm103: 3.5.1's ptxas (CUDA 12.8) "Value 'sm_103a' is not defined for option 'gpu-name'" (3.3's LLVM knows
#   no sm_103a either); 3.6.0 builds it with its ptxas-blackwell (CUDA 12.9: triton#10331 lists the ptxas of
#   each wheel).
# - gfx942, gfx1100, gfx1151, gfx1201, sm90: 3.0.0 builds them, the oldest release tried.
# benchmarks/first_triton.py makes those compiles again in each environment it is given.
FIRST_BUILDING_RELEASE: dict[str, tuple[int, int]] = {
    "gfx942": (3, 0), "gfx950": (3, 2), "gfx1100": (3, 0), "gfx1151": (3, 0), "gfx1201": (3, 0), "gfx1250": (3, 6),
    "sm90": (3, 0), "sm100": (3, 3), "sm103": (3, 6), "sm120": (3, 3),
}


def cannot_build_text(target: str, version: str, why: str) -> str:
    """The one line that refuses a survey of ``target`` with Triton ``version``, which cannot build for it
    (``why``, as :func:`regsurvey.compile.toolchain.cannot_build` says): ``target gfx1250: Triton 3.4.0
    cannot build for it (its LLVM does not know gfx1250); Triton 3.6 or newer can``. Where ``version`` is
    already that release or newer, what it runs is not what the release ships (a ``TRITON_PTXAS_PATH``, a
    build of its own): the line says so."""
    first = FIRST_BUILDING_RELEASE.get(target)
    if first is None:
        since = "regsurvey knows no Triton release that can"
    else:
        since = f"Triton {first[0]}.{first[1]} or newer can"
        installed = release(version)
        if installed is not None and installed >= first:
            since += ", with the compilers it ships"
    return f"target {target}: Triton {version} cannot build for it ({why}); {since}"


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
