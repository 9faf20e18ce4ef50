"""What a prune table saves a real autotuner on a GPU (issue 38): torchao's blockwise fp8 GEMM (48 configs,
DeepSeek-V3's q_a projection, K 7168, N 1536) tuned from cold caches with every config, then with the configs
``regsurvey prune`` found not worth benchmarking on this GPU dropped (``regsurvey.tuning.prune_by_survey``).

For each token count and each set it prints the time to tune (the first call: every kept config compiled and
timed by Triton's autotuner, ``torch.cuda.synchronize`` included), the configs benchmarked, the winner, and
the winner's kernel time (``triton.testing.do_bench`` of the op once tuned). Each (set, token count) runs in
a child interpreter of its own with an empty ``TRITON_CACHE_DIR``, so neither set finds the other's
compiles. Needs a GPU, torch, Triton and torchao; the table is made on the same machine (its Triton) first::

    cp -r tests/realworld/torchao /tmp/torchao && git -C /tmp/torchao init -q
    python3 -m regsurvey prune -C /tmp/torchao --target sm90 --key 'fp8_linear/q_a/*' -o /tmp/prune.json
    python3 benchmarks/prune_tuning.py --table /tmp/prune.json --tokens 4,64

``--table-target T`` reads the table's entries of another target than the running GPU's (to time what
benchmarking those configs costs here, where they may well run): the figures then measure the cost of the
configs, not a pruning this GPU would make.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
K, N, BLOCK = 7168, 1536, 128


def _tuner_and_op() -> tuple[Any, Any]:
    """torchao's op and the Autotuner inside it (a local of the function that builds its kernels)."""
    from torchao.kernel import blockwise_quantization as blockwise

    op = blockwise._get_triton_impls().gemm
    cells = dict(zip(op._init_fn.__code__.co_freevars, op._init_fn.__closure__ or ()))
    return op, cells["blockwise_fp8_gemm_kernel"].cell_contents


def child(table: str | None, table_target: str | None, tokens: int, rep: int) -> dict[str, Any]:
    """One set, one token count, in this (fresh) process: tune from cold, then time the winner."""
    import torch
    import triton.testing

    from regsurvey.tuning import prune_by_survey

    op, tuner = _tuner_and_op()
    configs = len(tuner.configs)
    benched: list[Any] = []
    original_bench = tuner._bench

    def counting_bench(*args: Any, config: Any, **kwargs: Any) -> Any:
        benched.append(config)
        return original_bench(*args, config=config, **kwargs)

    tuner._bench = counting_bench
    prune = None
    if table is not None:
        prune = prune_by_survey(table, tuner, target=table_target)
        tuner.early_config_prune = prune
    fp8 = torch.float8_e4m3fn
    a = torch.randn(tokens, K, device="cuda").to(fp8)
    b = torch.randn(N, K, device="cuda").to(fp8)
    a_s = torch.rand(tokens, K // BLOCK, device="cuda")
    b_s = torch.rand(N // BLOCK, K // BLOCK, device="cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    op._init_fn(a, a_s, b, b_s, BLOCK)
    torch.cuda.synchronize()
    tune_s = time.perf_counter() - start
    best = tuner.best_config
    kernel_ms = triton.testing.do_bench(lambda: op._init_fn(a, a_s, b, b_s, BLOCK), rep=rep)
    return {"tokens": tokens, "set": "pruned" if table else "full", "configs": configs, "benchmarked": len(benched),
            "pruned": [p.config for p in prune.last_pruned] if prune is not None else [],
            "target": prune.target if prune is not None else None, "tune_s": round(tune_s, 3),
            "winner": {"kwargs": best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages},
            "kernel_ms": round(kernel_ms, 5), "device": torch.cuda.get_device_name()}


def run_child(table: str | None, table_target: str | None, tokens: int, rep: int) -> dict[str, Any]:
    """:func:`child` in a child interpreter with an empty Triton cache."""
    with tempfile.TemporaryDirectory(prefix="prune-tuning-cache-") as cache:
        env = {**os.environ, "TRITON_CACHE_DIR": cache,
               "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        argv = [sys.executable, __file__, "--child", "--tokens", str(tokens), "--rep", str(rep)]
        argv += ["--table", table] if table else []
        argv += ["--table-target", table_target] if table_target else []
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"child failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", help="a regsurvey prune table (JSON; a child for the full set has none)")
    parser.add_argument("--table-target", help="read this target's entries (default: the running GPU's)")
    parser.add_argument("--tokens", default="4,64", help="token counts (comma-separated)")
    parser.add_argument("--rep", type=int, default=200, help="do_bench's rep (ms) for the winner's kernel time")
    parser.add_argument("--out", help="also write the results here (JSON)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    tokens = [int(t) for t in args.tokens.split(",")]
    if not args.child and not args.table:
        parser.error("--table is required")
    if args.child:
        print(json.dumps(child(args.table, args.table_target, tokens[0], args.rep)))
        return
    results = []
    for count in tokens:
        full = run_child(None, None, count, args.rep)
        pruned = run_child(args.table, args.table_target, count, args.rep)
        results += [full, pruned]
        print(f"tokens {count} on {full['device']} (table read for {pruned['target']}): "
              f"{len(pruned['pruned'])} of {full['configs']} configs pruned {pruned['pruned']}")
        for r in (full, pruned):
            print(f"  {r['set']:>6}: tune {r['tune_s']:8.2f} s, {r['benchmarked']:2d} configs benchmarked, "
                  f"winner {r['winner']} -> {r['kernel_ms'] * 1000:.2f} us")
        print(f"  tuning {full['tune_s'] / max(pruned['tune_s'], 1e-9):.2f}x faster pruned; winner's kernel "
              f"{pruned['kernel_ms'] / full['kernel_ms']:.3f}x the full set's")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
