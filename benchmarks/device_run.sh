#!/usr/bin/env bash
# What this session ran on the H200 device machine (16 cores, Triton 3.6 there), in one call:
# the GPU fidelity check on the demo, the LLD study of issue #10 item 10, the isolation cost, and the
# fidelity check on the real-world corpus's sm90 keys (step `corpus`; its wheels: tests/realworld/requirements.txt's
# libraries and pyelftools, in .whl/ too).
# Wheels for regsurvey's dependencies travel in .whl/ (see the device tool's notes).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 REGSURVEY_SERVER=off
python3 -m compileall -q regsurvey >/dev/null
nproc; python3 -c 'import triton, torch; print("triton", triton.__version__, "torch", torch.__version__)'
step=${1:-all}
if [ "$step" = all ] || [ "$step" = fidelity ]; then
  echo "== fidelity (demo, sm90)"
  timeout 300 python3 tests/gpu/fidelity.py --jobs 16 --out "$OUT/fidelity-results.json" 2>&1 | tail -40
fi
if [ "$step" = all ] || [ "$step" = lld ] || [ "$step" = lld+isolation ]; then
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
if [ "$step" = all ] || [ "$step" = isolation ] || [ "$step" = lld+isolation ]; then
  echo "== isolation cost, demo, -j 16"
  timeout 300 python3 benchmarks/isolation_cost.py --jobs 16 --repeat 2
fi
if [ "$step" = all ] || [ "$step" = corpus ]; then
  for lib in ${CORPUS_LIBS:-liger_kernel fla gemlite flag_gems}; do
    echo "== fidelity ($lib, sm90)"
    timeout 240 python3 tests/gpu/fidelity.py --project tests/realworld/$lib --jobs 16 --out "$OUT/$lib-fidelity.json" 2>&1 | tail -30
  done
fi
