#!/usr/bin/env bash
# What this session ran on the H200 device machine (16 cores, Triton 3.6 there), in one call:
# NVML's answers against the stand-in's (step `nvml`), the GPU fidelity check on the demo, the LLD study of issue #10 item 10, the isolation cost, and the
# fidelity check on the real-world corpus's sm90 keys (step `corpus`; its wheels: tests/realworld/requirements.txt's
# libraries and pyelftools, in .whl/ too). Step `speed11` (not in `all`): issue #11's speed criterion, 4faced4
# against this tree side by side (benchmarks/before_after.py; ~7 minutes).
# Wheels for regsurvey's dependencies travel in .whl/ (see the device tool's notes).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 REGSURVEY_SERVER=off
python3 -m compileall -q regsurvey >/dev/null
if [ -f .ray/ray-slim.tar.xz ]; then  # Ray 2.60 without its Java, RLlib, Data, Serve, Tune, Train (79 MB wheel)
  tar xJf .ray/ray-slim.tar.xz -C /tmp/site && echo "ray: $(python3 -c 'import ray; print(ray.__version__)')"
fi
nproc; python3 -c 'import triton, torch; print("triton", triton.__version__, "torch", torch.__version__)'
steps=" ${*:-all} "
want() { [[ "$steps" == *" $1 "* ]]; }  # a step named on the command line (several may be)
if want all || want nvml; then
  # NVML and nvidia-smi on the H200 against regsurvey's stand-in for sm90 (tests/gpu/nvml_answers.py):
  # the machine's answers become the fixture tests/compile/test_management.py holds the stand-in to.
  echo "== nvml"
  timeout 60 python3 tests/gpu/nvml_answers.py > "$OUT/nvml-h200.json"
  timeout 60 python3 tests/gpu/nvml_answers.py --compare > "$OUT/nvml-compare.json"; echo "nvml differences: rc $?"
fi
if want all || want facts; then
  # The H200 driver's figures the offline tests hold regsurvey to (tests/gpu/h200-driver-facts.json).
  echo "== driver facts"
  timeout 120 python3 tests/gpu/driver_facts.py --out "$OUT/h200-driver-facts.json"
fi
if want all || want fidelity; then
  echo "== fidelity (demo, sm90)"
  timeout 300 python3 tests/gpu/fidelity.py --jobs 16 --out "$OUT/fidelity-results.json" 2>&1 | tail -40
fi
if want all || want lld || want lld+isolation; then
  echo "== LLD: demo gfx942, -j 16, three cold surveys"
  for i in $(seq 1 ${LLD_RUNS:-3}); do
    TRITON_CACHE_DIR=/tmp/tc-lld-$i timeout 240 python3 -m regsurvey run -q --format json --force --target gfx942 \
      -j 16 --store /tmp/lld-store > "$OUT/lld-$i.json" 2> "$OUT/lld-$i.err"
    python3 - "$OUT/lld-$i.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
flaky = [r for r in rows if r.get("flaky") or r["status"] == "flaky"]
lld = [r for r in rows if "LLD" in (r.get("error") or "") or "LLD" in (r.get("flaky") or "")]
print(f"run: {len(rows)} rows, {sum(r['status'] == 'ok' for r in rows)} ok, {len(flaky)} retried or flaky, "
      f"{len(lld)} with an LLD message, wall {d['timing']['wall_s']} s")
for r in lld:
    print("  ", r["key"], r["status"], (r.get("flaky") or r.get("error") or "")[:300].replace("\n", " | "))
PY
  done
  echo "== LLD: links alone, 16 processes"
  timeout 200 python3 benchmarks/lld_concurrency.py --store /tmp/lld-store --procs 16 --rounds 20 --kernels 12
fi
if want all || want isolation || want lld+isolation; then
  echo "== isolation cost, demo, -j 16"
  timeout 300 python3 benchmarks/isolation_cost.py --jobs 16 --repeat 2
fi
if want all || want corpus; then
  # Not triton_kernels: it needs a newer Triton than the device's 3.6 (tests/realworld/RESULTS.md).
  for lib in ${CORPUS_LIBS:-liger_kernel fla gemlite flag_gems conch torchao}; do
    echo "== fidelity ($lib, sm90)"
    timeout 240 python3 tests/gpu/fidelity.py --project tests/realworld/$lib --jobs 16 --out "$OUT/$lib-fidelity.json" 2>&1 | tail -30
  done
fi
if want speed11; then
  # Issue #11's speed criterion: cold -j 1, warm re-run, diff, and a cold -j 16 with a warm server, each
  # side by side with 4faced4 (the commit before the change), interleaved (benchmarks/before_after.py).
  # The old checkout is a worktree of this repository's history (the device's copy of .git; if it has
  # none, carry .git); OLD_RS names another checkout instead. Not part of `all`: alone it takes ~7 minutes.
  OLD=${OLD_RS:-/tmp/old-rs}
  git() { command git -c safe.directory='*' "$@"; }  # the copied tree belongs to another user
  if [ ! -f "$OLD/regsurvey/__init__.py" ]; then
    if ! timeout 30 git rev-parse -q --verify '4faced4^{commit}' >/dev/null; then
      echo "speed11: no git history of 4faced4 here (carry .git, or set OLD_RS to a checkout of it)"; exit 1
    fi
    timeout 30 git worktree prune
    timeout 120 git worktree add -q -f --detach "$OLD" 4faced4 || { echo "speed11: git worktree add failed"; exit 1; }
  fi
  timeout 60 python3 -m compileall -q "$OLD/regsurvey" >/dev/null
  echo "== issue #11 speed: 4faced4 ($OLD) against this tree, demo ${SPEED11_TARGETS:-sm90}"
  timeout "${SPEED11_TIMEOUT:-520}" python3 benchmarks/before_after.py --old "$OLD" --targets "${SPEED11_TARGETS:-sm90}" \
    --jobs 1 --repeat "${SPEED11_REPEAT:-3}" --diff --server-jobs "${SPEED11_SERVER_JOBS:-16}" 2>&1 | tee "$OUT/speed11.txt"
fi
if want speed34 || want ray34; then
  # Issue #34's speed criterion: the one scheduler against 7bee059 (the commit before it, carried as
  # .old-rs/: `git archive 7bee059 regsurvey pyproject.toml keys decode_layer benchmarks tests/__init__.py
  # tests/engine/__init__.py tests/engine/hosts.py | tar x -C .old-rs`), sm90 demo, interleaved.
  [ -f .old-rs/regsurvey/__init__.py ] || { echo "speed34: no .old-rs/ (carry it)"; exit 1; }
  timeout 60 python3 -m compileall -q .old-rs/regsurvey >/dev/null
fi
if want speed34; then
  echo "== issue #34 speed: cold -j ${SPEED34_JOBS:-1} and warm${SPEED34_DIFF+, diff}${SPEED34_SERVER:+, -j $SPEED34_SERVER with a server}"
  timeout "${SPEED34_TIMEOUT:-520}" python3 benchmarks/before_after.py --old .old-rs --targets sm90 \
    --jobs "${SPEED34_JOBS:-1}" --repeat "${SPEED34_REPEAT:-2}" ${SPEED34_DIFF+--diff} \
    ${SPEED34_SERVER:+--server-jobs $SPEED34_SERVER} 2>&1 | tee "$OUT/speed34-j${SPEED34_JOBS:-1}.txt"
fi
if want ray34; then
  # Ray one node of 16 CPUs and four simulated nodes of 4 against the local pool, each version in turn.
  for side in ${RAY34_ORDER:-new old}; do
    dir=.; [ $side = old ] && dir=.old-rs
    echo "== issue #34 Ray: $side ($dir), demo sm90, 16 CPUs, 4 nodes"
    (cd $dir && PYTHONPATH=/tmp/site:$PWD timeout "${RAY34_TIMEOUT:-260}" python3 benchmarks/ray_scaling.py \
      --targets sm90 --cpus 16 --nodes 4) 2>&1 | grep -v "^\s*$\|INFO\|WARNING" | tee "$OUT/ray34-$side.txt"
  done
fi
if want imports; then
  # What a first survey waits for before its first compile: the worker forkserver's imports (three runs).
  echo "== imports of a worker: torch, triton, regsurvey's preload (Triton's own hash, the backends)"
  for i in 1 2 3; do
    timeout 120 python3 -c 'import time; t = time.perf_counter(); import torch; a = time.perf_counter(); import triton; b = time.perf_counter(); import regsurvey.engine.worker_preload; c = time.perf_counter(); print(f"torch {a - t:.2f} s, triton {b - a:.2f} s, preload {c - b:.2f} s")'
  done
fi
if want ray-check; then
  echo "== ray: a 2-CPU instance here"
  timeout 120 python3 -c 'import ray, time; t = time.time(); ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR"); print(ray.cluster_resources(), f"{time.time() - t:.1f} s"); ray.shutdown()'
fi
if want speed15; then
  # Issue #15's first-survey figures on 16 cores: compiles per distinct Triton hash of a first survey of the
  # whole demo at -j 16 (two targets: 8 workers share each), before (the tree before #15's in-flight locks,
  # carried as .old-rs/ with this script's compile_once.py beside it) and now; then this tree's first survey
  # and warm-server survey against the bound max(longest key, compile seconds / N) (survey_speed.py).
  if [ -f .old-rs/regsurvey/__init__.py ]; then
    mkdir -p .old-rs/benchmarks && cp benchmarks/compile_once.py .old-rs/benchmarks/
    echo "== compiles per hash, before (.old-rs), demo gfx950+sm90, -j 16"
    (cd .old-rs && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 benchmarks/compile_once.py -j 16 -C "$OLDPWD" -t gfx950 -t sm90) 2>&1 | tee "$OUT/compile_once_old.txt"
  fi
  echo "== compiles per hash, now, demo gfx950+sm90, -j 16"
  timeout 200 python3 benchmarks/compile_once.py -j 16 -t gfx950 -t sm90 2>&1 | tee "$OUT/compile_once_new.txt"
  echo "== first survey and warm server against the bound, -j 16"
  timeout "${SPEED15_TIMEOUT:-300}" python3 benchmarks/survey_speed.py --scaling-only --jobs 16 --server-jobs 16 \
    --repeat "${SPEED15_REPEAT:-2}" 2>&1 | tee "$OUT/speed15.txt"
fi
if want keyreuse; then
  # Issue 37 item 2: keys not run again, with records and without (REGSURVEY_KEY_REUSE=off, the commit
  # before), side by side, -j 16, and every build of the incremental survey against a --force survey.
  for project in ${KEYREUSE_PROJECTS:-demo tests/realworld/flag_gems}; do
    if [ "$project" = demo ]; then arg=""; else arg="--project $project"; fi
    echo "== key reuse: $project"
    timeout "${KEYREUSE_TIMEOUT:-280}" python3 benchmarks/key_reuse.py $arg --jobs 16 --targets ${KEYREUSE_TARGETS:-gfx950,sm90} 2>&1 | tail -20
  done
fi
if want targets37; then
  # Issue 37's four targets (first survey, warm server, known costs, incremental) against the commit before
  # (4532b35, carried as .old-rs/: `git archive 4532b35 regsurvey pyproject.toml | tar x -C .old-rs`), -j 16.
  [ -f .old-rs/regsurvey/__init__.py ] || { echo "targets37: no .old-rs/ (carry it)"; exit 1; }
  timeout 60 python3 -m compileall -q .old-rs/regsurvey >/dev/null
  for spec in ${TARGETS37_PROJECTS:-demo flag_gems:flag_gems.ops.rms_norm torchao:torchao.kernel.blockwise_quantization fla:fla.modules.norm.l2norm}; do
    project=${spec%%:*}; touch=${spec#*:}
    if [ "$project" = demo ]; then arg=""; else arg="--project tests/realworld/$project --touch $touch"; fi
    echo "== issue 37 targets: $project"
    timeout "${TARGETS37_TIMEOUT:-290}" python3 benchmarks/targets37.py --old .old-rs $arg --jobs 16 \
      --targets ${TARGETS37_TARGETS:-gfx950,sm90} 2>&1 | tee "$OUT/targets37-$project.txt"
  done
fi
if want corpus15; then
  # Issue #15's first-survey figures on a real-world corpus library (its wheels in .whl/): first surveys,
  # known costs, and both with a warm server, each against the bound, at -j 16.
  for lib in ${CORPUS15_LIBS:-flag_gems}; do
    echo "== first survey against the bound: $lib, ${CORPUS15_TARGETS:-gfx950,sm90}, -j 16"
    timeout "${CORPUS15_TIMEOUT:-420}" python3 benchmarks/survey_speed.py --scaling-only --project tests/realworld/$lib \
      --targets "${CORPUS15_TARGETS:-gfx950,sm90}" --jobs 16 --repeat "${CORPUS15_REPEAT:-1}" 2>&1 | tee "$OUT/corpus15-$lib.txt"
  done
fi
if want ray15; then
  # Issue #15's Ray figures on 16 cores: the local pool against Ray on one node of 16 CPUs and on 4 simulated
  # nodes of 4, on a corpus library, then generated checkouts of growing size (benchmarks/ray_scaling.py).
  echo "== Ray against the local pool: ${RAY15_PROJECT:-tests/realworld/flag_gems}"
  timeout "${RAY15_TIMEOUT:-280}" python3 benchmarks/ray_scaling.py --project "${RAY15_PROJECT:-tests/realworld/flag_gems}" \
    --cpus 16 --nodes "${RAY15_NODES:-4}" 2>&1 | grep -v "^\s*$\|INFO\|WARNING" | tee "$OUT/ray15-project.txt"
  [ -n "${RAY15_BUILDS-x}" ] || exit 0
  echo "== Ray against the local pool: generated checkouts of ${RAY15_BUILDS:-100,500,2000} builds"
  timeout "${RAY15_SYNTH_TIMEOUT:-280}" python3 benchmarks/ray_scaling.py --synthetic "${RAY15_BUILDS:-100,500,2000}" \
    --cpus 16 --nodes 4 2>&1 | grep -v "^\s*$\|INFO\|WARNING" | tee "$OUT/ray15-synthetic.txt"
fi
if want hosts15; then
  # The same on hosts on a network (network namespaces, each node a /tmp and a home of its own; needs root,
  # iproute2, util-linux): the local pool, one host of 16 CPUs, 4 hosts of 4, each compared build for build.
  # No iproute2 there: Debian's `ip` may travel in .iproute/ (bin/ip, its libraries in lib/, RUNPATH set).
  command -v ip >/dev/null || export PATH=$PWD/.iproute/bin:$PATH
  ip netns add rs-probe && ip netns del rs-probe || { echo "hosts15: no network namespaces here"; exit 0; }
  # The hosts mount a /tmp of their own: the packages in /tmp/site would be out of their sight.
  echo "== Ray on hosts against the local pool: ${HOSTS15_PROJECT:-tests/realworld/flag_gems}"
  timeout "${HOSTS15_TIMEOUT:-400}" python3 benchmarks/ray_scaling.py --project "${HOSTS15_PROJECT:-tests/realworld/flag_gems}" \
    --cpus 16 --nodes "${HOSTS15_NODES:-4}" --hosts 2>&1 | grep -v "^\s*$\|INFO\|WARNING" | tee "$OUT/hosts15.txt"
fi
if want prune38 || want prune38-table || want prune38-gfx950; then
  # Issue 38: what a prune table saves torchao's 48-config blockwise fp8 GEMM (q_a: K 7168, N 1536) when Triton
  # tunes it on the H200 from cold caches (benchmarks/prune_tuning.py; torchao's wheel in .whl/). prune38-table:
  # the table regsurvey makes here for sm90 (the device's Triton), and the tuning with and without it;
  # prune38-gfx950: the gfx950 table of tests/fixtures/prune (7 configs that spill or cannot launch on an
  # MI355X) read on the H200, timing what those configs cost to benchmark here (not a pruning sm90 would make).
  if want prune38 || want prune38-table; then
    echo "== prune: torchao q_a, sm90 table"
    rm -rf /tmp/torchao && cp -r tests/realworld/torchao /tmp/torchao && git -C /tmp/torchao init -q
    timeout 240 python3 -m regsurvey prune -C /tmp/torchao --target sm90 --key 'fp8_linear/q_a/*' -j 16 \
      -o "$OUT/prune-sm90.json"
    timeout 330 python3 benchmarks/prune_tuning.py --table "$OUT/prune-sm90.json" --tokens "${PRUNE38_TOKENS:-4}" \
      --out "$OUT/prune-tuning-sm90.json"
  fi
  if want prune38 || want prune38-gfx950; then
    echo "== prune: torchao q_a, the gfx950 table read on the H200"
    timeout 60 python3 -m regsurvey prune --commit tests/fixtures/prune/torchao_gfx950.json -o "$OUT/prune-gfx950.json"
    timeout 500 python3 benchmarks/prune_tuning.py --table "$OUT/prune-gfx950.json" --table-target gfx950 \
      --tokens "${PRUNE38_TOKENS:-4}" --out "$OUT/prune-tuning-gfx950.json"
  fi
fi
