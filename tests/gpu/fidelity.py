"""GPU fidelity check: the offline survey of every demo key equals what a real launch loads.

Run on a machine with an NVIDIA GPU (never in CI)::

    python tests/gpu/fidelity.py [--target sm90] [--jobs 16] [--out tests/gpu/fidelity-results.json]
    python tests/gpu/fidelity.py --project tests/realworld/fla --out fla-fidelity.json   # another project

``--project`` takes any directory with a ``keys/`` (default: this repository's demo suite); one inside
a git repository that is not its root is copied to a temporary directory first, since a survey started
there would find the repository root's ``keys/``. The capture check (step 5) runs for the demo only.

1. Surveys every key offline (``regsurvey run --format json``, the installed Triton, a stub driver).
2. Runs every key's kind body again for real: ``rs.tensor`` makes zero-filled CUDA tensors
   (REGSURVEY_MATERIALIZE=cuda), the project's launcher launches on the GPU, and each launch's
   CompiledKernel is kept.
3. Compares, launch by launch: Triton's cache hash, the cubin's sha256, the driver's register count
   (CU_FUNC_ATTRIBUTE_NUM_REGS) against the survey's ``regs``, and the driver's local memory per thread
   (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, Triton's ``n_spills * 4``) against ``stack_bytes``.
4. Writes the outcome (date, GPU, driver, Triton, keys checked, mismatches) as JSON.
"""

from __future__ import annotations

import argparse
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
    sys.path.insert(0, str(project))
    import torch
    from triton.runtime.jit import JITFunction

    from regsurvey import capture
    from regsurvey.keyfiles import expand_keys, load_kinds
    from regsurvey.targets import get_target

    kinds = {k.name: k for k in load_kinds(project, project / "keys")}
    launched: list[Any] = []
    original = JITFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = original(self, *args, grid=grid, warmup=warmup, **kwargs)
        launched.append((self.fn.__name__, kernel))
        return kernel

    JITFunction.run = run  # type: ignore[method-assign]
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
            for name, kernel in launched:
                kernel._init_handles()
                entries.append({
                    "kernel": name, "triton_hash": kernel.hash,
                    "cubin_sha256": hashlib.sha256(kernel.asm["cubin"]).hexdigest(),
                    "n_regs": kernel.n_regs, "local_bytes": kernel.n_spills * 4,
                })
            results[key.id] = entries if error is None else [{"error": error}]
    finally:
        JITFunction.run = original  # type: ignore[method-assign]
    return results


def compare(survey: dict[str, Any], real: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every difference between the offline survey and the real launches, one line each."""
    mismatches = []
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in survey["rows"]:
        rows.setdefault(row["key"], []).append(row)
    for key, key_rows in sorted(rows.items()):
        launches = real.get(key)
        if launches is None:
            mismatches.append(f"{key}: not launched on the GPU")
            continue
        if launches and "error" in launches[0]:
            mismatches.append(f"{key}: the real launch failed: {launches[0]['error']}")
            continue
        if len(launches) != len(key_rows):
            mismatches.append(f"{key}: {len(key_rows)} surveyed launches, {len(launches)} real ones")
            continue
        for row, real_launch in zip(sorted(key_rows, key=lambda r: r["launch"]), launches):
            if row["status"] != "ok":
                mismatches.append(f"{key}: survey says {row['status']}: {row['error']}")
                continue
            res = row["resources"]
            checks = [
                ("kernel", row["kernel"], real_launch["kernel"]),
                ("triton_hash", row["triton_hash"], real_launch["triton_hash"]),
                ("cubin sha256", row["object"]["sha256"], real_launch["cubin_sha256"]),
                ("regs", res["regs"], real_launch["n_regs"]),
                ("stack/local bytes", res["stack_bytes"], real_launch["local_bytes"]),
            ]
            for what, offline, gpu in checks:
                if offline != gpu:
                    mismatches.append(f"{key}#{row['launch']}: {what}: survey {offline}, GPU {gpu}")
            if (res["spill_store_bytes"] or res["spill_load_bytes"]) and not real_launch["local_bytes"]:
                mismatches.append(f"{key}: survey spills but the driver reports no local memory")
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
    program = program or [sys.executable, str(ROOT / "tests" / "test_demo_kernels.py"), "--device", "cuda"]
    cmd = [sys.executable, "-m", "regsurvey", "capture", "--records", str(records), "-o", str(keys_file)]
    cmd += ["--offline", target] if offline else []
    out = subprocess.run([*cmd, "--", *program], cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return 0, [f"capture failed: {out.stderr.strip()[-2000:]}"]
    from regsurvey import toolchain
    from regsurvey.capture import CaptureSession
    from regsurvey.keyfiles import expand_keys, load_kinds
    from regsurvey.targets import get_target

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
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--key", action="append", default=[], help="only keys matching (glob); repeatable")
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "gpu" / "fidelity-results.json")
    parser.add_argument("--project", type=Path, default=ROOT,
                        help="a directory with keys/ to check (default: the demo suite)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="regsurvey-fidelity-") as tmp:
        project = args.project.resolve()
        if project != ROOT:  # a survey inside a git repository surveys its root: survey a copy
            project = shutil.copytree(project, Path(tmp) / "project", ignore=shutil.ignore_patterns(".regsurvey"))
        survey = offline_survey(args.target, args.jobs, Path(tmp) / "store", args.key, project)
        survey_s = time.monotonic() - start
        keys = {r["key"] for r in survey["rows"]}
        real = real_launches(args.target, keys, project)
    mismatches = compare(survey, real)
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
