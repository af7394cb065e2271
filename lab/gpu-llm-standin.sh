#!/usr/bin/env bash
# Issue 9 on the GPU machine: `optimize --proposer llm` against the scripted stand-in for
# Anthropic's Messages API (test/fixtures/llm-standin), one task at a time, then
# lab/check-llm-run.mjs on what each run wrote. Needs dist/evokernel.mjs (npm run
# bundle, carried along), a bare node (/tmp/node, or .device/node.xz), nvcc and python3 with
# torch. No API key: the key below is a dummy the stand-in never checks.
#   bash lab/gpu-llm-standin.sh [TASK...]    # default: softmax rmsnorm row_sum layernorm
# Output under $OUT (default /tmp/evokernel-llm-standin): llm-standin.txt (each task's
# summary and checks) and llm-standin.tgz (per task: requests.jsonl, archive.jsonl,
# out/result.json, out/best.cu, optimize.log, check.txt; the candidates' sources left out).
# Exit 0 when every task's checks passed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/evokernel-llm-standin}
mkdir -p "$out"
[ -x /tmp/node ] && export PATH=/tmp:$PATH
if ! command -v node >/dev/null; then
  xz -d -c .device/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
fi
if [ ! -f dist/evokernel.mjs ]; then
  echo "dist/evokernel.mjs is missing: run npm run bundle here and carry dist/ along" >&2
  exit 3
fi
export EVOKERNEL_CACHE=${EVOKERNEL_CACHE:-/tmp/evokernel-cache}
tasks=("$@")
[ ${#tasks[@]} -eq 0 ] && tasks=(softmax rmsnorm row_sum layernorm)
work=$(mktemp -d)
failed=0

run_task() {
  local name=$1 script=test/fixtures/llm-standin/$1.json dir=$work/llm-standin/$1
  if [ ! -f "$script" ]; then
    echo "no script $script: pass one of $(ls test/fixtures/llm-standin/*.json | xargs -n1 basename | sed 's/.json//' | tr '\n' ' ')"
    return 1
  fi
  mkdir -p "$dir"
  node test/fixtures/llm-standin/server.mjs --script "$script" --requests "$dir/requests.jsonl" \
    >"$dir/standin.txt" 2>"$dir/standin.log" &
  local standin=$!
  for _ in $(seq 50); do [ -s "$dir/standin.txt" ] && break; sleep 0.1; done
  local url config proposals task
  url=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).url)' "$dir/standin.txt")
  config=$(node -e 'console.log(require(process.argv[1]).config)' "$PWD/$script")
  # the task the replies were written against (the first built-in kernels, kept as fixtures)
  task=$(node -e 'console.log(require(process.argv[1]).task)' "$PWD/$script")
  proposals=$(node -e 'console.log(require(process.argv[1]).replies.filter((r) => r.status === undefined).length)' "$PWD/$script")
  echo "## $name ($config, $proposals proposals) $(date -u +%H:%M:%S)"
  ANTHROPIC_API_KEY=sk-ant-standin-not-a-key ANTHROPIC_BASE_URL=$url \
    node dist/evokernel.mjs optimize "$task" --proposer llm --config "$config" \
    --candidates "$proposals" --parallel 1 --seed 1 --archive "$dir/archive.jsonl" \
    --out "$dir/out" 2>"$dir/optimize.log"
  echo "optimize exit $?"
  kill "$standin" 2>/dev/null
  wait "$standin"
  local best=()
  [ -f "$dir/out/best.cu" ] && best=(--best "$dir/out/best.cu")
  node lab/check-llm-run.mjs --script "$script" --requests "$dir/requests.jsonl" \
    --archive "$dir/archive.jsonl" --result "$dir/out/result.json" "${best[@]}" --real-gpu | tee "$dir/check.txt"
  local checked=${PIPESTATUS[0]}
  echo "check exit $checked $(date -u +%H:%M:%S)"
  return "$checked"
}

{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# node $(node --version), nvcc $(nvcc --version | tail -1), $(git rev-parse --short HEAD 2>/dev/null)"
  for t in "${tasks[@]}"; do
    run_task "$t" || failed=1
    # after every task: what a time limit cuts short is not lost
    tar -czf "$out/llm-standin.tgz" -C "$work" --exclude=candidates llm-standin
  done
  echo "all tasks' checks passed: $([ $failed -eq 0 ] && echo yes || echo NO)"
  exit $failed
} | tee "$out/llm-standin.txt"
status=${PIPESTATUS[0]}
rm -rf "$work"
exit "$status"
