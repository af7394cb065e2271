#!/usr/bin/env bash
# The GPU runs whose output is committed in docs/RESULTS.md. On the GPU machine (which has
# no Node.js) with .device/node.xz and dist/ carried along:
#   bash lab/gpu-results.sh selftest   # the adversarial corpus + every task's own kernel
#   bash lab/gpu-results.sh bench      # every task: baseline, eager, torch.compile, floor
#   bash lab/gpu-results.sh correct    # the "correct but unusual" corpus: each must verify
#        and be benchmarked
# Public task data (the manifests' shared: tasks) from EVOKERNEL_SHARED_DATA, default .device/data.
#   bash lab/gpu-results.sh optimize [TASK...]   # the tuner on each task (all by default),
#        budget from EVK_CANDIDATES (24) and EVK_MINUTES (3); results and logs in optimize.tgz;
#        EVK_PROPOSER=shape-tuner for the shape-keyed tuner (a value set per class of shapes)
#   bash lab/gpu-results.sh scaling [TASK...]    # issue 38.2: the same search (seed 1) on each
#        GPU set of EVK_GPU_SETS (default "0 0,1"), one after another; budget EVK_SCALING_CANDIDATES (96),
#        EVK_MINUTES (4); where the time went (lab/search-phases.mjs) and each lane in scaling.txt
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/evokernel-results}
mkdir -p "$out"
if ! command -v node >/dev/null; then
  xz -d -c .device/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
fi
export EVOKERNEL_CACHE=${EVOKERNEL_CACHE:-/tmp/evokernel-cache}
export EVOKERNEL_SHARED_DATA=${EVOKERNEL_SHARED_DATA:-$PWD/.device/data}
evk() { node dist/evokernel.mjs "$@"; }
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  echo "# node $(node --version), nvcc $(nvcc --version | tail -1)"
  evk device
} | tee "$out/device.txt"
case "${1:-selftest}" in
  selftest)
    evk selftest --manifest runner/corpus/manifest.json 2>"$out/selftest.log" | tee "$out/selftest.txt"
    [ "${2:-}" = "--quick" ] && exit 0
    evk selftest --manifest runner/corpus/isolation/manifest.json 2>>"$out/selftest.log" | tee -a "$out/selftest.txt"
    for t in kernels/*/; do
      evk verify "$t" --heldout 2>>"$out/verify.log" | tail -n +1
    done | tee "$out/verify.txt"
    ;;
  correct)
    evk selftest --manifest "${EVK_MANIFEST:-runner/corpus/correct/manifest.json}" --timeout "${EVK_TIMEOUT:-120}" --json \
      2>"$out/correct.log" >"$out/correct.json"
    echo "exit $?"
    node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1]));for(const x of r.rows)console.log([x.met?"met ":"MISS",x.expect,x.got?.reason??x.got?.status??"",x.file].join("  "));console.log(JSON.stringify(r.summary))' "$out/correct.json" | tee "$out/correct.txt"
    ;;
  bench)
    for t in kernels/*/; do
      echo "## $(basename "$t")"
      evk bench "$t" 2>>"$out/bench.log"
    done | tee "$out/bench.txt"
    ;;
  optimize)
    shift
    tasks=("$@")
    [ ${#tasks[@]} -eq 0 ] && tasks=(kernels/*/)
    for t in "${tasks[@]}"; do
      name=$(basename "$t")
      mkdir -p "$out/optimize/$name"
      echo "## $name $(date -u +%H:%M:%S)"
      evk optimize "$t" --proposer "${EVK_PROPOSER:-tuner}" --seed 1 --candidates "${EVK_CANDIDATES:-24}" \
        --minutes "${EVK_MINUTES:-3}" --archive "$out/optimize/$name/archive.jsonl" \
        --out "$out/optimize/$name" 2>"$out/optimize/$name.log"
      echo "exit $?"
      # after every task: what a time limit cuts short is not lost
      tar -czf "$out/optimize.tgz" -C "$out" --exclude=candidates optimize
    done | tee "$out/optimize.txt"
    rm -rf "$out/optimize"
    ;;
  scaling)
    shift
    for t in "$@"; do
      name=$(basename "$t")
      for gpus in ${EVK_GPU_SETS:-0 0,1}; do
        run=$out/scaling/$name-gpus-${gpus//,/_}
        mkdir -p "$run"
        echo "## $name on GPUs $gpus $(date -u +%H:%M:%S)"
        evk optimize "$t" --proposer "${EVK_PROPOSER:-tuner}" --seed 1 --candidates "${EVK_SCALING_CANDIDATES:-96}" \
          --minutes "${EVK_MINUTES:-4}" --gpus "$gpus" --archive "$run/archive.jsonl" --out "$run" \
          2>"$run.log" | tail -3
        echo "exit ${PIPESTATUS[0]}"
        node lab/search-phases.mjs "$run/archive.jsonl"
        node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1]));const s=r.search;console.log("lanes",JSON.stringify(s.lanes??null),"evaluated",s.evaluated,"seconds",s.seconds,"stoppedBy",JSON.stringify(s.stoppedBy),"win",r.win,"speedup",JSON.stringify(r.speedup))' "$run/result.json"
        tar -czf "$out/scaling.tgz" -C "$out" --exclude=candidates scaling
      done
    done | tee "$out/scaling.txt"
    rm -rf "$out/scaling"
    ;;
esac
