#!/usr/bin/env bash
# Probe: does a corpus survey hang or crawl on this machine, and where? Each run in the background; after
# PROBE_WAIT seconds still running: the process tree with CPU use, then every Python process's stacks
# (faulthandler on SIGRTMIN+3: LLVM takes SIGUSR1, registered by a sitecustomize in each process and again after each fork).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/device_run.sh setup || exit 1  # no such step: device_run's set-up alone (the wheels, the bytecode, versions)
mkdir -p /tmp/sc
cat > /tmp/sc/sitecustomize.py <<'PY'
import faulthandler, os, signal
def _register():
    os.makedirs("/tmp/tb", exist_ok=True)
    f = open(f"/tmp/tb/{os.getpid()}.txt", "w")
    faulthandler.register(signal.SIGRTMIN + 3, file=f, all_threads=True, chain=False)
    globals()["_file"] = f
_register()
os.register_at_fork(after_in_child=_register)
PY
export PYTHONPATH=/tmp/sc:/tmp/site:$PWD PYTHONUNBUFFERED=1 REGSURVEY_SERVER=off
python3 -V
dump() {  # $1: the files' stem: the process tree with CPU use, then every Python process's stacks
  ps -eo pid,ppid,etime,time,pcpu,rss,stat,wchan:20,args --forest | grep "python\|ptxas" > "$1.ps"
  pkill -RTMIN+3 -u "$(id -u)" -f python3; sleep 3
  for f in /tmp/tb/*.txt; do echo "#### $f"; cat "$f"; done > "$1.stacks.txt" 2>/dev/null
}
for run in ${PROBE_RUNS:-gemlite:16}; do
  IFS=: read -r lib j variant <<< "$run"; name=$lib-j$j${variant:+-$variant}
  extra=(); [ "$variant" = omp1 ] && extra=(env OMP_NUM_THREADS=1 MKL_NUM_THREADS=1)
  rm -rf /tmp/tb /tmp/p-$name; mkdir -p /tmp/tb
  cp -r tests/realworld/$lib /tmp/p-$name; rm -rf /tmp/p-$name/.regsurvey
  echo "== $name"
  start=$(date +%s.%N)
  ( cd /tmp/p-$name && REGSURVEY_TIMELINE=$OUT/$name.timeline.json TRITON_CACHE_DIR=/tmp/tc-$name exec "${extra[@]}" python3 -m regsurvey run -t ${PROBE_TARGET:-sm90} -j $j --timeout ${PROBE_KEY_TIMEOUT:-300} \
      --store /tmp/st-$name --format json > "$OUT/$name.json" 2> "$OUT/$name.err" ) &
  pid=$!
  for i in $(seq 1 ${PROBE_WAIT:-100}); do kill -0 $pid 2>/dev/null || break; sleep 1
    if (( i == ${PROBE_DUMP_AT:-0} )); then dump "$OUT/$name"; fi
    if (( i % 15 == 0 )); then echo "  t=$i s: $(ps -eo pcpu,comm --no-headers | awk '$2 ~ /python|ptxas|ld/ {s += $1; n++} END {print n " procs, " s "% CPU"}')"; fi
  done
  if kill -0 $pid 2>/dev/null; then
    echo "  still running after ${PROBE_WAIT:-100} s: tree and stacks"
    dump "$OUT/$name.end"
    kill -INT $pid; sleep 5; pkill -9 -f "regsurvey|forkserver" ; wait $pid
  else
    wait $pid; echo "  rc $? in $(python3 -c "import time; print(round(time.time() - $start, 1))") s"
  fi
  tail -c 1500 "$OUT/$name.err"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['rows']), 'rows', d.get('timing'))" "$OUT/$name.json" 2>&1 | tail -2
done
