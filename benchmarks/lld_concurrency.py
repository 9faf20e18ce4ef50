"""Is "LLD failed to link hsaco" (issue #10, item 10) regsurvey's doing or the toolchain's?

Takes every gfx942 amdgcn text a survey stored (``--store``), then links each one many times with
Triton's own ``make_hsaco`` (``amd.assemble_amdgcn`` + the in-process ``amd.link_hsaco``), in N
processes at once, with no regsurvey code in the loop, and counts failures and their messages.
Figures, not assertions: run it where the flaky failures were seen (the 16-core device machine).

    python benchmarks/lld_concurrency.py --store .regsurvey --procs 16 --rounds 20
"""

from __future__ import annotations

import argparse
import gzip
import multiprocessing
import time
from pathlib import Path


def _texts(store: Path, limit: int) -> list[str]:
    found = []
    for path in sorted(store.glob("objects/**/*.amdgcn.gz")):
        text = gzip.decompress(path.read_bytes()).decode()
        if "gfx942" in text:
            found.append(text)
    # the largest first: the failures were seen on a heavy kernel
    return sorted(found, key=len, reverse=True)[:limit]


def _link_loop(args: tuple[list[str], int, int]) -> tuple[int, int, list[str]]:
    texts, rounds, seed = args
    from triton._C.libtriton import llvm
    from triton.backends.amd.compiler import HIPBackend, HIPOptions

    llvm.init_targets()  # what triton.compile does first in a process

    options = HIPOptions(arch="gfx942")
    done = failed = 0
    messages: list[str] = []
    for r in range(rounds):
        for i, text in enumerate(texts):
            if (i + r + seed) % 2:  # interleave differently in each process
                continue
            try:
                HIPBackend.make_hsaco(text, {}, options)
                done += 1
            except Exception as exc:  # the failure under study
                failed += 1
                messages.append(f"{type(exc).__name__}: {str(exc)[:200]}")
    return done, failed, messages[:5]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=Path(".regsurvey"))
    parser.add_argument("--procs", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--kernels", type=int, default=12)
    parser.add_argument("--method", default="fork", choices=("fork", "spawn", "forkserver"))
    args = parser.parse_args()
    texts = _texts(args.store, args.kernels)
    if not texts:
        raise SystemExit(f"no gfx942 amdgcn text under {args.store}/objects: survey gfx942 first")
    import triton

    start = time.perf_counter()
    ctx = multiprocessing.get_context(args.method)
    with ctx.Pool(args.procs) as pool:
        results = pool.map(_link_loop, [(texts, args.rounds, s) for s in range(args.procs)])
    done = sum(r[0] for r in results)
    failed = sum(r[1] for r in results)
    print(f"triton {triton.__version__}, {args.method}: {len(texts)} gfx942 kernels "
          f"({min(map(len, texts))}-{max(map(len, texts))} chars of amdgcn), {args.procs} processes x "
          f"{args.rounds} rounds: {done} links ok, {failed} failed in {time.perf_counter() - start:.1f} s")
    for r in results:
        for m in r[2]:
            print("  ", m)


if __name__ == "__main__":
    main()
