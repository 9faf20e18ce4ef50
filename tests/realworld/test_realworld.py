"""The real-world corpus: public Triton kernel libraries surveyed through their own launchers.

Each directory beside this file is a project whose ``keys/`` call one installed library's public
launchers (``liger_kernel``, ``fla``, ``gemlite``, ``flag_gems``, ``conch``, ``triton_kernels``, ``torchao``;
install them with ``pip install --no-deps -r tests/realworld/requirements.txt``; and vLLM, ``vllm``, installed
into a directory of its own and put on ``PYTHONPATH``: see ``vllm/requirements.txt``). Each is surveyed for
gfx942, gfx950, sm90 and sm100 (torchao: not gfx942, see its keys file) in one ``regsurvey run`` from a copy
outside any git repository (inside this one, ``-C`` would find the repository root's ``keys/``), with a
Triton cache of its own so that Triton's metadata of every build can be read back. Then:

* every key builds (a real launch would build each one: the keys leave out launchers that cannot be
  surveyed at all, see each keys file), except the builds the installed toolchain is known to fail on
  (``KNOWN_FAILURES``), which fail with that error;
* every figure of every build equals a second, independent reading of the stored object (but the few
  whose difference is measured and explained, ``KNOWN_READING_DIFFERENCES``, which differ by exactly that
  much): AMD from
  LLVM's comments and metadata in the stored amdgcn (``; NumVgprs``, ``; NumAgprs``, ``; TotalNumSgprs``,
  ``; ScratchSize``, ``Folded Spill`` bytes, ``.sgpr_spill_count``, ``.kernarg_segment_size``), the LDS
  from the kept TTGIR's buffers allocated again (not Triton's metadata), and the occupancy from LLVM's
  ``; Occupancy`` of a kernel declaring that LDS and the note's workgroup size;
  NVIDIA from ``ptxas -v`` on the stored PTX (registers, stack, spills, static shared memory),
  ``cuobjdump -res-usage`` on the cubin and Triton's ``shared``, occupancy recomputed from those by
  CUDA's occupancy rules;
* each target surveyed alone compiles the same kernels as the three together (a library that caches
  the device when imported must not carry one target's choices into another's keys).

The default test run surveys :data:`IN_DEFAULT_RUN` (the fastest libraries) in full and imports every
project's keys files for every target (:func:`test_every_keys_file_lists_its_keys_on_every_target`); the
other libraries' surveys are ``slow``: run them with ``python -m pytest -m realworld`` (minutes per
library on two cores). A library that is not installed skips, unless ``REGSURVEY_CORPUS_REQUIRED`` is
set (``.ci/run`` sets it: there a missing library is a failure). vLLM is found on ``REGSURVEY_VLLM_SITE``
(the directory ``pip install --target`` made) when set. ``tests/realworld/RESULTS.md`` has the last outcome;
``REGSURVEY_REALWORLD_OUT=DIR`` keeps each library's survey JSON there, and
``python tests/realworld/summary.py DIR`` prints its table.
"""

from __future__ import annotations

import base64
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from regsurvey.model.results import Row

from ..readings import (
    amd_lds_reading,
    amd_loop_spill_reading,
    amd_occupancy_reading,
    amd_register_comments,
    asm_comment,
    asm_metadata,
    cuda_blocks_per_sm,
    note_metadata,
    note_wave_mode,
    note_waves,
    nv_info_entries,
    nvdisasm_text,
    nvidia_loop_spill_reading,
    ptxas_reading,
    stored_text,
    vgpr_spills,
)

pytestmark = [pytest.mark.realworld]

HERE = Path(__file__).parent
TARGETS = ("gfx942", "gfx950", "sm90", "sm100")
# project directory -> the module its keys import
LIBRARIES = {"liger_kernel": "liger_kernel", "fla": "fla", "gemlite": "gemlite", "flag_gems": "flag_gems",
             "conch": "conch", "triton_kernels": "triton_kernels", "torchao": "torchao", "vllm": "vllm"}
# Surveyed in full by the default test run (the fastest: conch compiles its 192 builds in about 35 s, Liger
# its 40 in about 11); the others are `slow`.
IN_DEFAULT_RUN = ("conch", "liger_kernel")
# Targets surveyed only where named (`--target`), by vendor: each library's survey on each group is `slow`
# (`pytest -m slow -k "opt_in and amd"` surveys the AMD ones).
OPT_IN_TARGETS = {"nvidia": ("sm103", "sm120"), "amd": ("gfx1100", "gfx1151", "gfx1201", "gfx1250")}
# Libraries whose kinds name fewer targets (the keys file says why).
LIBRARY_TARGETS = {"torchao": ("gfx950", "sm90", "sm100")}
# Builds the installed toolchain fails on (as it would on a GPU): (library, key pattern, target, kernel
# pattern) -> (start of the error line, text in it, the Triton versions seen to fail).
KNOWN_FAILURES = {
    # Hopper's mxfp4 matmul: Triton 3.9.0 emits `fma` with operands ptxas refuses (128 such lines).
    ("triton_kernels", "moe/*/*/mxfp4", "sm90", "_matmul*"): (
        "ptxas-blackwell error at PTX line", "Arguments mismatch for instruction 'fma'", ("3.9.0",)),
    # sm120's persistent MoE matmul with a scatter index: triton_kernels takes the TMA scatter path on every
    # capability from 10.0, and ptxas has no `.tile::scatter4` for sm_120a (triton#11859, fixed in
    # triton_kernels by triton#11862, after the version pinned here): 6 builds, as on an RTX 5090. A build
    # that fails keeps the Python name (`_p_matmul`); those that build, the compiled one (`_p_matmul_NNT_...`).
    ("triton_kernels", "moe/*", "sm120", "_p_matmul"): (
        "ptxas-blackwell error at PTX line", "Feature '.tile::scatter4' not supported on .target 'sm_120a'",
        ("3.9.0",)),
}
# Figures whose second reading from the code differs from the compiler's own by a measured cause: (library,
# key pattern, target, kernel pattern, figure) -> (survey minus reading, exactly; the Triton versions seen).
# gfx1250's flash attention: LLVM counts a VGPR spill as frame-index elimination writes its store (194), and
# its control-flow optimizer then merges two identical block tails that end in the same spill store
# (`scratch_store_b32 off, v120, off offset:4`), leaving 193 stores in the code. Measured from the pass-by-pass
# dump of the stored LLIR (`LLVM_IR_ENABLE_DUMP=1`): 194 spill dwords after prolog-epilog, 193 after
# branch-folder (with branch folding off, block placement merges the same tails).
KNOWN_READING_DIFFERENCES = {
    ("flag_gems", "attention/*", "gfx1250", "_attn_fwd", "vgpr_spill"): (1, ("3.9.0",)),
}
SURVEY_TIMEOUT_S = 3600
# Keys that compile for longer than `run`'s default --timeout (600 s a key): (library, target) -> the seconds
# a key may take there. torchao's blockwise fp8 GEMM on RDNA 3 and 3.5, which compute fp8 in emulation: one
# key's 49 builds took 1887 s of compile on gfx1100 (8 to 109 s each; gfx950 about 6 s), 1067 s at -j 2 on
# this 2-core machine; at 600 s every such key timed out.
KEY_TIMEOUT_S = {("torchao", "gfx1100"): 3600, ("torchao", "gfx1151"): 3600}


def library_env(library: str) -> dict[str, str]:
    """The environment a survey of ``library``'s project runs in: this one, with vLLM's own directory on
    ``PYTHONPATH`` for vLLM."""
    env = dict(os.environ)
    site = os.environ.get("REGSURVEY_VLLM_SITE")
    if library == "vllm" and site:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH")) if p)
    return env


def require_library(library: str) -> None:
    """Skip (fail, under ``REGSURVEY_CORPUS_REQUIRED``) where ``library`` is not installed."""
    module, site = LIBRARIES[library], os.environ.get("REGSURVEY_VLLM_SITE")
    found = importlib.util.find_spec(module) is not None or bool(
        library == "vllm" and site and importlib.machinery.PathFinder.find_spec(module, [site]))
    if found:
        return
    how = ("pip install --no-deps --target DIR -r tests/realworld/vllm/requirements.txt, and "
           "REGSURVEY_VLLM_SITE=DIR" if library == "vllm" else
           "pip install --no-deps -r tests/realworld/requirements.txt")
    if os.environ.get("REGSURVEY_CORPUS_REQUIRED"):
        pytest.fail(f"{module} is not installed ({how}) and REGSURVEY_CORPUS_REQUIRED is set")
    pytest.skip(f"{module} is not installed ({how})")


class Corpus:
    """The surveys of one library: the three targets together, then each alone, in one store."""

    def __init__(self, library: str, work: Path, named: tuple[str, ...] = ()):
        require_library(library)
        self.library = library
        self.project = work / library
        self.named = named  # targets named with --target (the opt-in ones), else the matrices'
        self.targets = named or LIBRARY_TARGETS.get(library, TARGETS)
        shutil.copytree(HERE / library, self.project, ignore=shutil.ignore_patterns("__pycache__", ".regsurvey"))
        self.store = work / "store"
        self.triton_cache = work / "triton-cache"
        self.survey, self.wall_s = self.run(None)
        keep = os.environ.get("REGSURVEY_REALWORLD_OUT")  # where RESULTS.md's figures come from
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            out = Path(keep) / f"{'-'.join((library, *named))}.json"
            out.write_text(json.dumps({**self.survey, "test_wall_s": self.wall_s}))

    def run(self, target: str | None) -> tuple[dict[str, Any], float]:
        """``regsurvey run`` of the project for its matrices' targets (gfx942, gfx950, sm90, sm100; a kind may
        name fewer) or for ``target`` alone: the survey JSON and the wall time."""
        env = {**library_env(self.library), "TRITON_CACHE_DIR": str(self.triton_cache), "REGSURVEY_SERVER": "off"}
        start = time.monotonic()
        only = ["--target", target or ",".join(self.named)] if target or self.named else []
        surveyed = (target,) if target else self.targets
        key_s = max((s for (library, t), s in KEY_TIMEOUT_S.items() if library == self.library and t in surveyed),
                    default=None)
        slow = ["--timeout", str(key_s)] if key_s else []
        out = subprocess.run([sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json",
                              "--store", str(self.store), *only, *slow],
                             cwd=self.project, env=env, capture_output=True, text=True,
                             timeout=SURVEY_TIMEOUT_S * (4 if key_s else 1))
        assert out.returncode == 0, out.stderr[-3000:]
        return json.loads(out.stdout), time.monotonic() - start

    def triton_metadata(self, row: dict[str, Any]) -> dict[str, Any]:
        """Triton's own metadata of the row's kernel, from the Triton cache the survey compiled into."""
        digest = bytes.fromhex(row["triton_hash"])
        for name in (base64.b32encode(digest).decode().rstrip("="), row["triton_hash"]):  # 3.9 / older
            entry = self.triton_cache / name
            found = [p for p in entry.glob("*.json") if not p.name.startswith("__grp__")]
            if found:
                return json.loads(found[0].read_text())
        raise AssertionError(f"no Triton cache entry for {row['key']} {row['target']} ({row['triton_hash']})")


_corpora: dict[str, Corpus] = {}


def _libraries(default: tuple[str, ...]) -> list[Any]:
    """Every library, those not in ``default`` marked ``slow``."""
    return [pytest.param(library, marks=() if library in default else pytest.mark.slow)
            for library in sorted(LIBRARIES)]


@pytest.fixture(params=_libraries(IN_DEFAULT_RUN))
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """The library's surveys, made once per test session."""
    library = request.param
    if library not in _corpora:
        _corpora[library] = Corpus(library, tmp_path_factory.mktemp(f"realworld-{library}"))
    return _corpora[library]


@pytest.fixture(params=[pytest.param((library, vendor), marks=pytest.mark.slow, id=f"{library}-{vendor}")
                        for library in sorted(LIBRARIES) for vendor in OPT_IN_TARGETS])
def opt_in_corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """The library's survey on one vendor's targets surveyed only where named (:data:`OPT_IN_TARGETS`), made
    once per test session; `slow`: the default run keeps to the matrices' targets."""
    library, vendor = request.param
    name = f"{library}-opt-in-{vendor}"
    if name not in _corpora:
        _corpora[name] = Corpus(library, tmp_path_factory.mktemp(f"realworld-{name}"), OPT_IN_TARGETS[vendor])
    return _corpora[name]


# One target's listing, in a process of its own (as a survey's worker for that target imports the keys
# files: a library that settles its platform at import must see that target's GPU).
_LIST_KEYS = """
import json, sys, warnings
from pathlib import Path
warnings.filterwarnings("ignore")
from regsurvey.engine.worker import Worker
root, target, objects = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
worker = Worker(root, root / "keys", Path(objects), target)
listed = worker.listing(None)
mine = [k for k in listed.keys if k.target == target]
print(json.dumps({"keys": [k.id for k in mine], "kinds": sorted({k.kind for k in mine}),
                  "declared": [[kind, list(targets)] for kind, targets in listed.declared],
                  "notes": list(worker.take_notes())}))
"""


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_every_keys_file_lists_its_keys_on_every_target(library: str, tmp_path: Path) -> None:
    """Every corpus project's keys files import, in a worker for each target as a survey's would, and
    every kind lists keys on each target it names, with no sign that the library found no GPU: what a
    survey does before it compiles anything, for the libraries the default run does not survey."""
    require_library(library)
    project = tmp_path / library
    shutil.copytree(HERE / library, project, ignore=shutil.ignore_patterns("__pycache__", ".regsurvey"))
    env = {**library_env(library), "REGSURVEY_SERVER": "off"}
    targets = LIBRARY_TARGETS.get(library, TARGETS)
    problems = []

    def listing(target: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _LIST_KEYS, str(project), target, str(tmp_path / "objects")],
                              cwd=project, env=env, capture_output=True, text=True, timeout=600)

    with ThreadPoolExecutor(2) as pool:  # two targets at a time: each process mostly imports
        outs = list(pool.map(listing, targets))
    for target, out in zip(targets, outs):
        if out.returncode != 0:
            problems.append(f"{target}: the keys files do not import: {out.stderr.strip()[-1500:]}")
            continue
        listed = json.loads(out.stdout.strip().splitlines()[-1])
        wanted = {kind for kind, kinds_targets in listed["declared"] if target in kinds_targets}
        if not listed["keys"] or set(listed["kinds"]) != wanted:
            problems.append(f"{target}: kinds with keys {listed['kinds']}, kinds naming {target} {sorted(wanted)}")
        problems += [f"{target}: {note}" for note in listed["notes"]]
    assert not problems, f"{library}:\n" + "\n".join(problems)


def test_every_key_builds(corpus: Corpus) -> None:
    every_key_builds(corpus)


def test_every_key_builds_on_the_opt_in_targets(opt_in_corpus: Corpus) -> None:
    every_key_builds(opt_in_corpus)


def _known_here(table: dict[tuple[str, ...], tuple[Any, ...]], corpus: Corpus) -> dict[tuple[str, ...], Any]:
    """The entries of ``table`` (:data:`KNOWN_FAILURES`, :data:`KNOWN_READING_DIFFERENCES`: keyed by library,
    key pattern, target, kernel pattern and more; the Triton versions seen last in each value) that apply to
    this corpus' survey with the installed Triton, keyed without the library."""
    import triton

    return {where[1:]: value for where, value in table.items()
            if where[0] == corpus.project.name and where[2] in corpus.targets and triton.__version__ in value[-1]}


def _row_is(where: tuple[str, ...], row: dict[str, Any]) -> bool:
    """Whether ``row`` is a build ``where`` (key pattern, target, kernel pattern, ...) names."""
    import fnmatch

    keys, target, kernels = where[:3]
    return (target == row["target"] and fnmatch.fnmatchcase(row["key"], keys)
            and fnmatch.fnmatchcase(row["kernel"] or "", kernels))


def every_key_builds(corpus: Corpus) -> None:
    """Every build of the corpus' survey builds, but the known failures of this Triton (which must fail so)."""
    rows = corpus.survey["rows"]
    assert {r["target"] for r in rows} == set(corpus.targets)
    known = _known_here(KNOWN_FAILURES, corpus)
    failing, expected, fixed = [], 0, []
    for r in rows:
        error = Row.from_dict(r).error_line if r["status"] != "ok" else None
        match = next((want for where, want in known.items() if _row_is(where, r)), None)
        if match is None and error is not None:
            failing.append(f"{r['key']} {r['target']} {r['kernel']}#{r['launch']}: {r['error']}")
        elif match is not None and error is not None and error.startswith(match[0]) and match[1] in error:
            expected += 1
        elif match is not None and error is not None:
            failing.append(f"{r['key']} {r['target']} {r['kernel']}#{r['launch']}: not the known failure: {error}")
        elif match is not None:
            fixed.append(f"{r['key']} {r['target']} {r['kernel']}")
    assert not failing, f"{len(failing)} of {len(rows)} builds fail:\n" + "\n".join(failing)
    assert not fixed, "known failures that now build (drop them from KNOWN_FAILURES):\n" + "\n".join(fixed)
    assert expected or not known, f"none of the known failures was seen: {sorted(known)}"


def test_every_figure_equals_a_second_reading(corpus: Corpus) -> None:
    every_figure_equals_a_second_reading(corpus)


def test_every_figure_equals_a_second_reading_on_the_opt_in_targets(opt_in_corpus: Corpus) -> None:
    every_figure_equals_a_second_reading(opt_in_corpus)


def every_figure_equals_a_second_reading(corpus: Corpus) -> None:
    """Every figure of every build the corpus' survey built equals its second reading (LLVM's comments,
    ptxas re-run, cuobjdump, Triton's metadata, each vendor's occupancy rules as the tests write them)."""
    known = {where: delta for where, (delta, _) in _known_here(KNOWN_READING_DIFFERENCES, corpus).items()}
    seen = set()
    mismatches: dict[str, list[str]] = defaultdict(list)
    checked = 0
    for row in corpus.survey["rows"]:
        if row["status"] != "ok":
            continue
        checked += 1
        if row["target"].startswith("gfx"):
            reading = amd_reading(corpus, row)
        else:
            reading = nvidia_reading(corpus, row)
        differs = {where[3]: where for where in known if _row_is(where, row)}  # figure -> its entry
        for figure, value in reading.items():
            surveyed = row["resources"].get(figure)
            where = differs.get(figure)
            if where is not None and isinstance(surveyed, int) and surveyed - value == known[where]:
                seen.add(where)
                continue
            if surveyed != value:
                config = "" if row["config"] is None else f" config {row['config']}"
                mismatches[figure].append(f"{row['key']} {row['target']} {row['kernel']}#{row['launch']}{config}: "
                                          f"survey {surveyed}, reading {value}")
    assert checked, "no build to check"
    assert seen == set(known), f"known reading differences not seen: {sorted(set(known) - seen)}"
    assert not mismatches, "\n".join(
        f"{figure}: {len(lines)} of {checked} builds differ, e.g.\n  " + "\n  ".join(lines[:5])
        for figure, lines in sorted(mismatches.items()))


def test_each_target_alone_compiles_the_same_kernels(corpus: Corpus) -> None:
    together = _kernels(corpus.survey)
    differences = []
    for target in corpus.targets:
        alone = _kernels(corpus.run(target)[0])
        # --target overrides a kind's own targets: compare the keys the joint survey has.
        for key in sorted(k for k in together if k[1] == target):
            with_others, by_itself = together.get(key, []), alone.get(key, [])
            if with_others != by_itself:
                differences.append(f"{key[0]} {key[1]}: {len(with_others)} launches with the other targets, "
                                   f"{len(by_itself)} alone; {len(set(with_others) ^ set(by_itself))} differ, e.g. "
                                   f"{sorted(set(with_others) ^ set(by_itself), key=repr)[:2]}")
    assert not differences, f"{len(differences)} keys differ:\n" + "\n".join(differences)


def _kernels(survey: dict[str, Any]) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    """Per (key, target): what each launch compiled (or that it failed)."""
    kernels: dict[tuple[str, str], list[tuple[Any, ...]]] = defaultdict(list)
    for row in survey["rows"]:
        kernels[(row["key"], row["target"])].append(
            (row["launch"], row["config"], row["kernel"], row["triton_hash"] if row["status"] == "ok" else "error"))
    return {k: sorted(v, key=repr) for k, v in kernels.items()}


# AMD ------------------------------------------------------------------------------------------------

def amd_reading(corpus: Corpus, row: dict[str, Any]) -> dict[str, int]:
    """The row's AMD figures as LLVM's amdgcn text gives them; the LDS from the kept TTGIR's buffers, and
    the occupancy from LLVM told that LDS and the note's workgroup size (not from Triton's metadata)."""
    text = stored_text(corpus.store, row, "amdgcn")
    hsaco = (corpus.store / row["object"]["path"]).read_bytes()
    note = note_metadata(hsaco)
    lds = amd_lds_reading(stored_text(corpus.store, row, "ttgir"), hsaco)
    vgpr, agpr, vgpr_total = amd_register_comments(text)
    reading = {
        "vgpr": vgpr,
        "agpr": agpr,
        "sgpr": asm_comment(text, "TotalNumSgprs"),
        "scratch_bytes": asm_comment(text, "ScratchSize"),
        "vgpr_spill": vgpr_spills(text),  # to scratch and to AGPRs
        "sgpr_spill": asm_metadata(text, "sgpr_spill_count"),
        "kernarg_bytes": asm_metadata(text, "kernarg_segment_size"),
        "lds_bytes": lds,
        "occupancy": amd_occupancy_reading(text, lds_bytes=lds, num_warps=note_waves(note), target=row["target"],
                                           **note_wave_mode(note)),
        **amd_loop_spill_reading(text),  # LLVM's own loop comments
    }
    # The object's own note says what the text says (else the stored text is not this object's).
    assert note[".vgpr_count"] == vgpr_total, row["key"]
    assert note[".sgpr_count"] == reading["sgpr"] and note[".sgpr_spill_count"] == reading["sgpr_spill"], row["key"]
    assert note[".private_segment_fixed_size"] == reading["scratch_bytes"], row["key"]
    return reading


# NVIDIA ---------------------------------------------------------------------------------------------


def cuobjdump_resources(corpus: Corpus, row: dict[str, Any]) -> dict[str, int]:
    """REG, STACK, SHARED and LOCAL of the cubin, as ``cuobjdump -res-usage`` prints them."""
    from regsurvey.objects.nvidia_object import tool_path

    out = subprocess.run([tool_path("cuobjdump"), "-res-usage", str(corpus.store / row["object"]["path"])],
                         capture_output=True, text=True, check=True).stdout
    return {name: int(value) for name, value in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", out)}


def required_threads(corpus: Corpus, row: dict[str, Any]) -> list[int]:
    """The block sizes the cubin's own ``.nv.info.<kernel>`` requires (EIATTR_REQNTID: x, y, z)."""
    import struct

    entries = nv_info_entries((corpus.store / row["object"]["path"]).read_bytes())
    return [x * y * z for attr, payload in entries if attr == 0x10 and len(payload) == 12
            for x, y, z in [struct.unpack("<III", payload)]]


def nvidia_reading(corpus: Corpus, row: dict[str, Any]) -> dict[str, int]:
    """The row's NVIDIA figures from ptxas, cuobjdump and Triton's metadata."""
    ptxas = ptxas_reading(corpus.store, row, smem=True)
    res = cuobjdump_resources(corpus, row)
    assert (res["REG"], res["STACK"]) == (ptxas["regs"], ptxas["stack_bytes"]), row["key"]
    # Static shared memory as the driver reports it: ptxas's "bytes smem". (cuobjdump's SHARED is the
    # whole .nv.shared section, which on sm_90 starts with the driver's 1 KiB reserve.)
    metadata = corpus.triton_metadata(row)
    shared = int(metadata["shared"]) + ptxas.pop("smem")
    # A block's warps: Triton's compiled num_warps, which is the launch's unless the kernel is warp-specialized
    # (triton_kernels' persistent matmul on sm100 is launched with 4 and runs blocks of 8); the cubin's
    # .reqntid says the same.
    warps = int(metadata["num_warps"])
    assert [warps * 32] == required_threads(corpus, row), row["key"]
    # CUDA's occupancy rules per compute capability, written in tests/readings.py.
    blocks = cuda_blocks_per_sm(regs=ptxas["regs"], shared=shared, warps=warps, target=row["target"])
    # The spills in loops: the SASS's backward branches, where ptxas spilled at all.
    spilled = ptxas["spill_store_bytes"] or ptxas["spill_load_bytes"]
    loops = (nvidia_loop_spill_reading(nvdisasm_text((corpus.store / row["object"]["path"]).read_bytes()))
             if spilled else {"loop_spill_ops": 0, "loop_spill_depth": 0})
    return {**ptxas, "shared_bytes": shared, "occupancy_blocks": blocks, "occupancy_warps": blocks * warps, **loops}


def test_register_pressure_is_within_what_was_allocated(corpus: Corpus) -> None:
    """Issue #13 on code nobody here wrote: every build's peak of live registers (``regsurvey explain``'s)
    is at most what the compiler allocated, and its spill instructions add up to the surveyed spills."""
    from regsurvey.kept_pressure import pressure_of
    from regsurvey.model.results import Row
    from regsurvey.store.objectstore import ObjectStore

    objects = ObjectStore(corpus.store / "objects")
    allocated = {"vgpr": "vgpr", "agpr": "agpr", "sgpr": "sgpr", "gpr": "regs"}
    problems, checked = [], 0
    for data in corpus.survey["rows"]:
        row = Row.from_dict(data)
        if not row.ok or row.object is None:
            continue
        checked += 1
        p = pressure_of(row, objects)
        for c in p.classes:
            peak, figure = (p.peaks[c].live[c] if c in p.peaks else 0), allocated.get(c)
            if figure in row.resources and peak > row.resources[figure]:
                problems.append(f"{row.row_id} {row.target}: {c} peak {peak} > {figure} {row.resources[figure]}")
        stores = sum(s.size for s in p.spills if s.kind == "store" and s.medium != "vgpr-lane")
        surveyed = row.resources.get("vgpr_spill", row.resources.get("spill_store_bytes"))
        if surveyed is not None and stores != surveyed:
            problems.append(f"{row.row_id} {row.target}: spill stores {stores}, surveyed {surveyed}")
        lanes = sum(s.size for s in p.spills if s.kind == "store" and s.medium == "vgpr-lane")
        if "sgpr_spill" in row.resources and lanes != row.resources["sgpr_spill"]:
            problems.append(f"{row.row_id} {row.target}: SGPR spill stores {lanes}, surveyed "
                            f"{row.resources['sgpr_spill']}")
    assert checked, "no build to check"
    assert not problems, f"{len(problems)} of {checked} builds:\n" + "\n".join(problems[:20])
