#!/usr/bin/env bash
# The sandbox on the GPU machine (issue 16's GPU evidence; gpu-batch.sh step "sandbox"):
#  1. dist/sandbox-probe.mjs: the hostile probe through the harness's start path, inside and
#     outside the sandbox, with canaries planted; a 4096² matmul inside against outside.
#  2. one job's bench of kernels/softmax and kernels/row_sum inside the sandbox and outside,
#     A B A B, JSON records kept (the timings must agree within their noise).
#  3. a hostile candidate verified in a job inside the sandbox: its record carries what it found.
# Needs dist/ (npm run bundle) and node on PATH. Files go to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/evk-sandbox}
mkdir -p "$out"
export EVOKERNEL_CACHE=${EVOKERNEL_CACHE:-/tmp/evk-sandbox-cache}

echo "== probe $(date -u +%H:%M:%S)"
node dist/sandbox-probe.mjs test/security/fixtures >"$out/probe.json" 2>"$out/probe.err"
echo "exit $?"
python3 - "$out/probe.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
print("inside leaks:", r["probeInside"].get("leaks"), "pids:", r["probeInside"].get("seen", {}).get("pids"))
print("outside leaks:", len(r["probeOutside"].get("leaks", [])))
for side in ("inside", "outside"):
    m = [x["median_ms"] for x in r["matmul"][side] if "median_ms" in x]
    print(side, "matmul medians ms:", [round(v, 4) for v in m], "median", round(statistics.median(m), 4) if m else None)
PY

for round in 1 2; do
  for mode in on off; do
    for task in softmax row_sum; do
      echo "== bench $task sandbox=$mode round $round $(date -u +%H:%M:%S)"
      EVOKERNEL_SANDBOX=$mode node dist/evokernel.mjs bench "kernels/$task" --no-compile --json \
        >"$out/bench-$task-$mode-$round.json" 2>"$out/bench-$task-$mode-$round.err"
      echo "exit $?"
    done
  done
done

echo "== hostile candidate in a job $(date -u +%H:%M:%S)"
# one file: the harness loads a candidate from its build cache, where nothing is beside it
candidate="$out/hostile_candidate.py"
sed '/^if __name__ == "__main__":/,$d' test/security/fixtures/hostile_probe.py >"$candidate"
cat test/security/fixtures/hostile_candidate.py >>"$candidate"
node dist/evokernel.mjs verify kernels/softmax --candidate "$candidate" --json \
  >"$out/hostile-verify.json" 2>"$out/hostile-verify.err"
echo "exit $?"
grep -o 'EVK-PROBE {[^}]*}' "$out/hostile-verify.json" | head -1
