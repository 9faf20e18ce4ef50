"""GPU fidelity check: the offline survey of every demo key equals what a real launch loads.

Run on a machine with an NVIDIA GPU (never in CI)::

    python tests/gpu/fidelity.py [--target sm90] [--jobs 16] [--out tests/gpu/fidelity-results.json]
    python tests/gpu/fidelity.py --device-only   # step 0 alone: seconds, prints every mismatch
    python tests/gpu/fidelity.py --dry-run       # no GPU needed: runs step 0 against the stand-in itself
    python tests/gpu/fidelity.py --project tests/realworld/fla --out fla-fidelity.json   # another project

``--project`` takes any directory with a ``keys/`` (default: this repository's demo suite); one inside
a git repository that is not its root is copied to a temporary directory first, since a survey started
there would find the repository root's ``keys/``. The capture check (step 5) runs for the demo only.

0. Compares every device property a launcher can read under a survey (the stand-in: ``torch.cuda``'s
   ``get_device_properties`` fields, ``get_device_capability``, ``get_device_name`` and Triton's
   ``driver.active.utils.get_device_properties``) with what the real GPU reports (:func:`device_check`).
1. Surveys every key offline (``regsurvey run --format json``, the installed Triton, a stub driver).
2. Runs every key's kind body again for real: ``rs.tensor`` makes zero-filled CUDA tensors
   (REGSURVEY_MATERIALIZE=cuda), the project's launcher launches on the GPU, and each launch's
   CompiledKernel is kept (launched through ``JITFunction.run``, or directly as ``kernel[grid](...)``
   by a launcher that keeps compiled kernels). A pinned autotuner (``rs.pin_config``) tunes over its
   pinned config alone, as in the survey.
3. Compares, launch by launch: Triton's cache hash, the cubin's sha256, the driver's register count
   (CU_FUNC_ATTRIBUTE_NUM_REGS) against the survey's ``regs``, the driver's local memory per thread
   (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, Triton's ``n_spills * 4``) against ``stack_bytes``, the driver's
   static shared memory (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) plus Triton's dynamic ``shared`` against
   ``shared_bytes``, and cuOccupancyMaxActiveBlocksPerMultiprocessor (block of ``num_warps`` warps,
   dynamic shared memory ``shared``) against ``occupancy_blocks``. The driver is read through ctypes
   on libcuda (no cuda-python needed).
4. Writes the outcome (date, GPU, driver, Triton, keys checked, mismatches) as JSON.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The real GPU program the capture check records (step 5): the demo kernels' own checks.
DEMO_PROGRAM = ROOT / "tests" / "demo" / "test_demo_kernels.py"

# cuda.h's CUfunction_attribute (registers and local memory come from Triton's own n_regs/n_spills).
_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1

# torch properties that name one machine (PCI slot, UUID), not the GPU model: not compared.
_MACHINE_FIELDS = {"pci_bus_id", "pci_device_id", "pci_domain_id", "uuid"}


@functools.cache
def _libcuda() -> Any:
    """The CUDA driver library, loaded with ctypes (torch has already initialised it)."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        message = f"fidelity: cannot load libcuda.so.1 ({exc}); run this on a machine with an NVIDIA driver"
        raise SystemExit(message) from None


def _cu_check(result: int, call: str) -> None:
    if result != 0:
        name = ctypes.c_char_p()
        _libcuda().cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(f"{call} failed: CUresult {result} ({(name.value or b'?').decode()})")


def driver_kernel_figures(kernel: Any) -> dict[str, int]:
    """What the CUDA driver says about a loaded Triton kernel (a CompiledKernel after ``_init_handles``).

    ``shared_bytes`` is the driver's static shared memory (SHARED_SIZE_BYTES, which leaves out the
    1 KiB per-block reserve) plus the dynamic shared memory Triton launches with (metadata ``shared``);
    ``occupancy_blocks`` is cuOccupancyMaxActiveBlocksPerMultiprocessor for a block of ``num_warps``
    warps with that dynamic shared memory.
    """
    cuda = _libcuda()
    function = ctypes.c_void_p(kernel.function)

    def attribute(which: int, name: str) -> int:
        value = ctypes.c_int()
        _cu_check(cuda.cuFuncGetAttribute(ctypes.byref(value), which, function), f"cuFuncGetAttribute({name})")
        return value.value

    dynamic = int(kernel.metadata.shared)
    blocks = ctypes.c_int()
    _cu_check(cuda.cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(blocks), function, 32 * int(kernel.metadata.num_warps), ctypes.c_size_t(dynamic)),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor")
    static = attribute(_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES")
    return {
        "static_shared": static,
        "shared_bytes": static + dynamic,
        "occupancy_blocks": blocks.value,
    }


def launcher_view() -> dict[str, Any]:
    """Every device property a launcher can read on device 0, through torch and Triton, by name."""
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    view: dict[str, Any] = {
        f"torch.cuda.get_device_properties(0).{name}": getattr(props, name)
        for name in dir(props)
        if not name.startswith("_") and name not in _MACHINE_FIELDS and not callable(getattr(props, name))
    }
    view["torch.cuda.get_device_capability(0)"] = tuple(torch.cuda.get_device_capability(0))
    view["torch.cuda.get_device_name(0)"] = torch.cuda.get_device_name(0)
    for key, value in triton.runtime.driver.active.utils.get_device_properties(0).items():
        view[f"triton utils.get_device_properties(0)[{key!r}]"] = value
    return view


def stand_in_view(target: str) -> dict[str, Any]:
    """:func:`launcher_view` as a kind body sees it while ``target`` is surveyed (regsurvey's stand-in)."""
    sys.path.insert(0, str(ROOT))
    from regsurvey.compile import toolchain
    from regsurvey.keys.session import CaptureSession
    from regsurvey.model.targets import get_target

    with toolchain.capturing(CaptureSession(get_target(target))):
        return launcher_view()


def device_check(target: str = "sm90", *, dry_run: bool = False) -> list[str]:
    """Every device property on which regsurvey's stand-in for ``target`` and the real GPU differ.

    One line per difference, naming the property and both values. The real side is read outside
    any survey; with ``dry_run`` it is the stand-in too (no GPU needed: checks this script, not the
    figures).
    """
    stand_in = stand_in_view(target)
    real = stand_in_view(target) if dry_run else launcher_view()
    mismatches = []
    for name in sorted(set(stand_in) | set(real)):
        if name not in real:
            mismatches.append(f"device {name}: stand-in {stand_in[name]!r}, the real driver has no such property")
        elif name not in stand_in:
            mismatches.append(f"device {name}: stand-in lacks it, the real GPU reports {real[name]!r}")
        elif stand_in[name] != real[name]:
            mismatches.append(f"device {name}: stand-in {stand_in[name]!r}, real GPU {real[name]!r}")
    return mismatches


def offline_survey(target: str, jobs: int, store: Path, keys: list[str], project: Path = ROOT) -> dict[str, Any]:
    """The survey regsurvey makes with no GPU involved (stub driver, offline compile)."""
    cmd = [sys.executable, "-m", "regsurvey", "run", "-q", "--format", "json", "--target", target,
           "-j", str(jobs), "--store", str(store)] + [a for k in keys for a in ("--key", k)]
    out = subprocess.run(cmd, cwd=project, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"offline survey failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


def real_launches(target: str, key_ids: set[str], project: Path = ROOT) -> dict[str, list[dict[str, Any]]]:
    """Run every selected key's kind body on the GPU; the kernels each launch loaded, per key id."""
    os.environ["REGSURVEY_MATERIALIZE"] = "cuda"
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(project))
    import torch
    from triton.runtime.jit import JITFunction

    from regsurvey.keys import session as capture
    from regsurvey.keys.keyfiles import expand_keys, load_kinds
    from regsurvey.model.targets import get_target

    kinds = {k.name: k for k in load_kinds(project, project / "keys")}
    launched: list[Any] = []
    original = JITFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        launched.append((self.fn.__name__, kernel))
        return kernel

    from triton.runtime.autotuner import Autotuner

    original_tune = Autotuner.run

    def tune(self: Any, *args: Any, **kwargs: Any) -> Any:
        # A pin (rs.pin_config) holds on the GPU too: the tuner sees the pinned config alone.
        session = capture.current_session()
        pinned = session.pinned_configs.get(id(self)) if session is not None else None
        if pinned is None:
            return original_tune(self, *args, **kwargs)
        configs = self.configs
        self.configs = [configs[pinned]]
        try:
            return original_tune(self, *args, **kwargs)
        finally:
            self.configs = configs

    from triton.compiler.compiler import CompiledKernel

    original_getitem = CompiledKernel.__getitem__

    def getitem(self: Any, grid: Any) -> Any:
        # A kernel a launcher kept and launches itself (FlagGems' LibEntry: `kernel[grid](...)`).
        launched.append((self.name, self))
        return original_getitem(self, grid)

    JITFunction.run = run  # type: ignore[method-assign]
    Autotuner.run = tune  # type: ignore[method-assign]
    CompiledKernel.__getitem__ = getitem  # type: ignore[method-assign]
    results: dict[str, list[dict[str, Any]]] = {}
    try:
        for key in expand_keys(list(kinds.values()), [target]):
            if key.id not in key_ids:
                continue
            launched.clear()
            # A session (no capture hook) so rs.target() answers; launches go to the real driver.
            token = capture.begin(capture.CaptureSession(get_target(target)))
            try:
                kinds[key.kind].body(**key.axes_dict)
                torch.cuda.synchronize()
                error = None
            except Exception as exc:  # a launch that fails on the GPU is a finding, not a crash
                error = f"{type(exc).__name__}: {exc}"
            finally:
                capture.end(token)
            entries = []
            seen: set[str] = set()
            for name, kernel in launched:
                if kernel is None or kernel.hash in seen:  # an autotuner's benchmark runs: once per kernel
                    continue
                seen.add(kernel.hash)
                kernel._init_handles()
                entry = {
                    "kernel": name, "triton_hash": kernel.hash,
                    "cubin_sha256": hashlib.sha256(kernel.asm["cubin"]).hexdigest(),
                    "n_regs": kernel.n_regs, "local_bytes": kernel.n_spills * 4,
                }
                try:
                    entry.update(driver_kernel_figures(kernel))
                except RuntimeError as exc:  # one kernel the driver will not describe: a finding, not a crash
                    error = error or f"reading {name}'s figures from the driver: {exc}"
                entries.append(entry)
            results[key.id] = entries if error is None else [{"error": error}]
    finally:
        JITFunction.run = original  # type: ignore[method-assign]
        Autotuner.run = original_tune  # type: ignore[method-assign]
        CompiledKernel.__getitem__ = original_getitem  # type: ignore[method-assign]
    return results


def compare(survey: dict[str, Any], real: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every difference between the offline survey and the real launches, one line each.

    Launches are matched by Triton's cache hash: every kernel the GPU loaded must be a surveyed row
    with the same figures; a surveyed row the GPU did not load is a mismatch unless it is one of an
    autotuner's configs (the GPU's autotuner ran or picked another). Skipped keys are not builds.
    """
    mismatches = []
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in survey["rows"]:
        if row["status"] != "skipped":
            rows.setdefault(row["key"], []).append(row)
    for key, key_rows in sorted(rows.items()):
        launches = real.get(key)
        if launches is None:
            mismatches.append(f"{key}: not launched on the GPU")
            continue
        if launches and "error" in launches[0]:
            mismatches.append(f"{key}: the real launch failed: {launches[0]['error']}")
            continue
        by_hash = {r["triton_hash"]: r for r in key_rows if r["status"] == "ok"}
        for row in key_rows:
            if row["status"] != "ok":
                mismatches.append(f"{key}: survey says {row['status']}: {row['error']}")
        for real_launch in launches:
            row = by_hash.pop(real_launch["triton_hash"], None)
            if row is None:
                mismatches.append(f"{key}: the GPU loaded {real_launch['kernel']} ({real_launch['triton_hash'][:12]}), "
                                  "which the survey did not compile")
                continue
            res = row["resources"]
            checks = [
                ("kernel", row["kernel"], real_launch["kernel"]),
                ("cubin sha256", row["object"]["sha256"], real_launch["cubin_sha256"]),
                ("regs", res["regs"], real_launch["n_regs"]),
                ("stack/local bytes", res["stack_bytes"], real_launch["local_bytes"]),
                ("shared_bytes (driver SHARED_SIZE_BYTES + Triton's dynamic shared)", res["shared_bytes"],
                 real_launch["shared_bytes"]),
                ("occupancy_blocks (cuOccupancyMaxActiveBlocksPerMultiprocessor)", res["occupancy_blocks"],
                 real_launch["occupancy_blocks"]),
            ]
            for what, offline, gpu in checks:
                if offline != gpu:
                    mismatches.append(f"{key}#{row['launch']}: {what}: survey {offline}, GPU {gpu}")
            if (res["spill_store_bytes"] or res["spill_load_bytes"]) and not real_launch["local_bytes"]:
                mismatches.append(f"{key}: survey spills but the driver reports no local memory")
        for row in by_hash.values():
            if row.get("config") is None:
                mismatches.append(f"{key}#{row['launch']}: surveyed {row['kernel']}, which the GPU did not load")
    return mismatches


def capture_check(target: str, workdir: Path, program: list[str] | None = None,
                  offline: bool = False) -> tuple[int, list[str]]:
    """`regsurvey capture` of a real GPU program, replayed offline: the same specialization?

    The program is the demo kernels' numeric checks on the GPU. Each launch's specialization that
    Triton computed on the GPU (recorded by the capture) must equal the one the generated keys file's
    replay computes offline for the same target.
    """
    keys_file = workdir / "keys" / "captured.py"
    records = workdir / "records.jsonl"
    program = program or [sys.executable, str(DEMO_PROGRAM), "--device", "cuda"]
    cmd = [sys.executable, "-m", "regsurvey", "capture", "--records", str(records), "-o", str(keys_file)]
    cmd += ["--offline", target] if offline else []
    out = subprocess.run([*cmd, "--", *program], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return 0, [f"capture failed: {out.stderr.strip()[-2000:]}"]
    from regsurvey.compile import toolchain
    from regsurvey.keys.keyfiles import expand_keys, load_kinds
    from regsurvey.keys.session import CaptureSession
    from regsurvey.model.targets import get_target

    gpu = {}
    for line in records.read_text().splitlines()[1:]:
        rec = json.loads(line)
        if rec["specialization"]:
            gpu[json.dumps([rec["kernel"], rec["args"], rec["kwargs"]], sort_keys=True)] = rec["specialization"]
    sys.path.insert(0, str(ROOT))
    kinds = {k.name: k for k in load_kinds(workdir, workdir / "keys")}
    mismatches, checked = [], 0
    for key in expand_keys(list(kinds.values()), [target]):
        record = sys.modules["regsurvey_keys_captured"].LAUNCHES[key.kind][key.axes_dict["v"]]
        ident = json.dumps([record["kernel"], record["args"], record["kwargs"]], sort_keys=True)
        if ident not in gpu:
            continue  # this launch hit Triton's in-process cache on the GPU: no specialization recorded
        session = CaptureSession(get_target(target))
        try:
            with toolchain.capturing(session):
                kinds[key.kind].body(**key.axes_dict)
        except Exception as exc:
            mismatches.append(f"capture {key.id}: replay failed: {type(exc).__name__}: {exc}")
            continue
        checked += 1
        if [launch.specialization_data for launch in session.launches] != [gpu[ident]]:
            mismatches.append(f"capture {key.id}: offline replay specializes differently from the GPU launch")
    return checked, mismatches


def environment() -> dict[str, Any]:
    """GPU, driver and toolchain versions of this machine."""
    import torch
    import triton

    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, check=False).stdout.strip()
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "gpu": torch.cuda.get_device_name(),
            "nvidia_smi": smi, "torch": torch.__version__, "cuda": torch.version.cuda,
            "triton": triton.__version__, "python": sys.version.split()[0]}


def main(argv: list[str] | None = None) -> int:
    """Run the check; exit status 1 on any mismatch."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="sm90")
    parser.add_argument("--project", type=Path, default=ROOT,
                        help="the project (a directory with keys/) whose keys are checked (default: the demo)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--key", action="append", default=[], help="only keys matching (glob); repeatable")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "gpu" / "fidelity-results.json")
    parser.add_argument("--device-only", action="store_true",
                        help="only compare the stand-in device with the real one (step 0), print, exit")
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: run step 0 with the stand-in on both sides, to check this script")
    args = parser.parse_args(argv)
    if args.dry_run or args.device_only:
        device_mismatches = device_check(args.target, dry_run=args.dry_run)
        print(f"device check ({'dry run' if args.dry_run else 'real GPU'}, {args.target}): "
              f"{len(device_mismatches)} mismatches")
        for line in device_mismatches:
            print("  " + line)
        return 1 if device_mismatches else 0
    start = time.monotonic()
    # Before anything compiles: Triton's own driver answers here, not the stand-in.
    device_mismatches = device_check(args.target)
    with tempfile.TemporaryDirectory(prefix="regsurvey-fidelity-") as tmp:
        project = args.project.resolve()
        if project != ROOT:  # a survey inside a git repository surveys its root: survey a copy
            project = shutil.copytree(project, Path(tmp) / "project", ignore=shutil.ignore_patterns(".regsurvey"))
        survey = offline_survey(args.target, args.jobs, Path(tmp) / "store", args.key, project)
        survey_s = time.monotonic() - start
        keys = {r["key"] for r in survey["rows"]}
        real = real_launches(args.target, keys, project)
    mismatches = device_mismatches + compare(survey, real)
    captured = 0
    if project == ROOT:  # the capture check replays the demo's own numeric checks
        with tempfile.TemporaryDirectory(prefix="regsurvey-capture-") as tmp:
            captured, capture_mismatches = capture_check(args.target, Path(tmp))
        mismatches += capture_mismatches
    outcome = {
        **environment(), "project": str(args.project),
        "target": args.target, "keys_checked": len(keys), "launches_checked": len(survey["rows"]),
        "captured_launches_replayed": captured,
        "survey_toolchain": survey["toolchain"], "mismatches": mismatches,
        "offline_survey_s": round(survey_s, 1), "total_s": round(time.monotonic() - start, 1),
        "spilling_keys": sorted({r["key"] for r in survey["rows"] if r["resources"].get("spill_store_bytes")}),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(outcome, indent=1) + "\n")
    print(f"{outcome['gpu']}: {len(keys)} keys, {len(survey['rows'])} launches checked, "
          f"{captured} captured launches replayed, "
          f"{len(mismatches)} mismatches -> {args.out}")
    for line in mismatches:
        print("  " + line)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
