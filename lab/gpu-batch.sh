#!/usr/bin/env bash
# Several GPU runs in one lease, kept busy across calls of the device tool (each call has a
# 10-minute limit; the runs take longer together). The first call starts the runs in a
# process session of their own, from a copy of the checkout (a later call re-sends the tree,
# which must not change files under a running command); every call then waits and returns
# what has finished so far:
#   bash lab/gpu-batch.sh start STEP...   # then waits like `wait` (EVK_BATCH_WAIT seconds, 560:
#                                             # under the device call's limit, or the call returns nothing)
#   bash lab/gpu-batch.sh wait [SECONDS]  # default 560: until all steps end or SECONDS pass
# Steps (run one after another, in the order given):
#   acceptance[:P1,P2…]  the GPU acceptance run (scripts/gpu-acceptance.sh), every path or those named
#   lazy-builds[:N]  lazily building KernelBench candidates, N variants a problem (lab/gpu-lazy-builds.sh; MODES, PROBLEMS)
#   selftest  adversarial corpus (lab/gpu-results.sh selftest --quick)
#   correct   the "correct but unusual" corpus (lab/gpu-results.sh correct)
#   e2e       the app end to end on three PR kernels (scripts/e2e-local.mjs)
#   llm       optimize --proposer llm against the scripted stand-in (lab/gpu-llm-standin.sh)
#   llm-throughput[:TASK]  the LLM path's rate: the stand-in answering at once with the template's
#             combinations (lab/llm-throughput.mjs; EVK_CANDIDATES replies, EVK_PARALLEL in flight)
#   action[:TASK]  the Action's steps from a release's tree, bench TASK (softmax) from the bundle, no npm (scripts/gpu-action.sh)
#   builds    torch-extension build throughput (lab/bench-builds.sh)
#   sandbox   the sandbox: hostile probe, CUDA and bench inside vs outside (lab/gpu-sandbox.sh)
#   screen[:T1,T2…]  the search's screen against bench on the built-in kernels (lab/screen-check.py)
#   timer-probe:T1,T2…  where the screen's timing seconds go, per configuration (lab/timer-probe.py)
#   copy-floor:T1,T2…  a device copy of each configuration's bytes as a share of its floor: what
#             the floor asks at that size (lab/copy-floor.py)
#   spawn-cost  a harness process's start with and without the sandbox, and a static check in
#             a sandbox of its own against one in the CPU fork server (runner/scripts/sandbox-spawn.ts, dist/sandbox-spawn.mjs)
#   correct-only:NAME,…  the correct corpus's entries whose file names contain a NAME
#   run-evidence  static findings as evidence: run-time evidence tests, the adversarial entries issue 18
#             changed and its honest idioms (lab/gpu-run-evidence.sh; run-evidence:all for both corpora in full, run-evidence:adversarial or run-evidence:correct for one; issue18, its name until 2026-11-29, still works)
#   handoff[:MB,MB…]     a trial's outputs handed to the judge, the new way and the old (lab/handoff-bench.py)
#   compare-bench        the output comparison's cost: its float32 pass against float64 alone (lab/compare-bench.py)
#   stream-probe:FILE,…  what the stream check sees of each softmax candidate FILE (lab/stream-probe.py)
#   e2e-optimize         the slower softmax PR with `pullRequests: optimize` (a review)
#   A+B       A and B at once (builds overlap; GPU work takes turns through the GPU lock)
#   A~B       A then B, as one of the steps run at once ('A+B~C': A beside B-then-C)
#   STEP@GPUS the step sees only those GPUs (CUDA_VISIBLE_DEVICES=GPUS): 'acceptance@0+correct@1'
#             runs the two side by side, each on a GPU of its own
#   tuner:T1,T2…        optimize with the tuner on those tasks (EVK_CANDIDATES, EVK_MINUTES)
#   shape-tuner:T1,T2…  the same with the shape-keyed tuner
#   gpu-spread          the same ops timed on each visible GPU in turn: how much GPUs of one model differ
#   scaling:T1,T2…      one search over 1, 2… GPUs (EVK_GPU_SETS, default "0 0,1"), same seed, one after
#                       another: rates, lanes and where the time went (lab/gpu-results.sh scaling)
#   sweep[:T1,T2…]      every combination of the template kernels' tunables: checked on every
#                       configuration, timed against eager and torch.compile (lab/template-sweep.py;
#                       EVK_SWEEP_ARGS adds options, e.g. "--deadline 420")
# Each step's files go to $OUT/<step>.tgz when it ends (a step cut short: what it wrote so
# far), the steps' console output to $OUT/batch.log. Needs dist/ and .device/ carried along.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
batch=${EVK_BATCH_DIR:-/tmp/evk-batch}
out=${OUT:-/tmp/evk-batch-out}
mkdir -p "$out"

run_steps() {  # STEP or STEP+STEP (those at once: the GPU lock keeps their GPU work apart)
  local group chain step
  for group in "$@"; do
    for chain in ${group//+/ }; do
      ( for step in ${chain//\~/ }; do run_step "$step"; done ) &
    done
    wait
  done
  touch "$batch/all.done"
}

run_step() {
  local step=$1 name arg gpus=
  # STEP@GPUS: the step sees only those GPUs (CUDA_VISIBLE_DEVICES)
  case $step in *@*) gpus=${step##*@} step=${step%@*} ;; esac
  {
    name=${step%%:*}
    arg=${step#*:}
    [ "$arg" = "$step" ] && arg=
    local dir=$batch/steps/${step//[:,\/]/_}  # a step naming files has slashes too
    mkdir -p "$dir"
    echo "== $step${gpus:+ on GPU $gpus} start $(date -u +%H:%M:%S)"
    (
      cd "$batch/repo" || exit 1
      export OUT=$dir
      [ -z "$gpus" ] || export CUDA_VISIBLE_DEVICES=$gpus
      case $name in
        acceptance) bash scripts/gpu-acceptance.sh ${arg//,/ } ;;
        lazy-builds) bash lab/gpu-lazy-builds.sh ${arg:-4} ;;
        selftest) bash lab/gpu-results.sh selftest --quick ;;
        correct) EVK_TIMEOUT=${EVK_TIMEOUT:-150} bash lab/gpu-results.sh correct ;;
        correct-only)  # correct-only:NAME,NAME…: the correct corpus's entries whose file names contain one of them
          python3 -c 'import json, sys; names = sys.argv[1].split(","); json.dump([e for e in json.load(open("runner/corpus/correct/manifest.json")) if any(n in e["file"] for n in names)], open("/tmp/correct-subset.json", "w"))' "$arg" &&
            EVK_MANIFEST=/tmp/correct-subset.json EVK_TIMEOUT=${EVK_TIMEOUT:-150} nice -n 10 bash lab/gpu-results.sh correct
          ;;
        e2e-optimize)  # the slower softmax PR with pullRequests: optimize (the tuner): a review with a suggestion
          bash test/fixtures/e2e-pr/make.sh /tmp/e2e-kernels &&
            node scripts/e2e-local.mjs --out "$dir/e2e" --timeout-min "${EVK_E2E_MIN:-6}" \
              --config "$(printf 'pullRequests: optimize\ndispatch: local\nproposer: tuner\nbudget: { candidates: %s, minutes: %s }\n' "${EVK_E2E_CANDIDATES:-6}" "${EVK_E2E_MINUTES:-1}")" \
              --change kernels/softmax/kernel.cu=/tmp/e2e-kernels/softmax_slower.cu
          ;;
        e2e)
          bash test/fixtures/e2e-pr/make.sh /tmp/e2e-kernels &&
            node scripts/e2e-local.mjs --out "$dir/e2e" --timeout-min "${EVK_E2E_MIN:-9}" \
              --change kernels/cross_entropy/kernel.cu=/tmp/e2e-kernels/cross_entropy_faster.cu \
              --change kernels/softmax/kernel.cu=/tmp/e2e-kernels/softmax_slower.cu \
              --change kernels/row_sum/kernel.cu=/tmp/e2e-kernels/row_sum_wrong.cu
          ;;
        run-evidence | issue18) bash lab/gpu-run-evidence.sh ${arg:+--$arg} ;;
        stream-probe)
          for f in ${arg//,/ }; do
            echo "== $f"
            PYTHONPATH=runner/harness python3 -m evokernel_harness build --candidate "$f" --cache /tmp/evk-probe-cache --out "$dir/build.json" &&
              python3 lab/stream-probe.py kernels/softmax "$f" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["artifact"])' "$dir/build.json")"
          done
          ;;
        llm) bash lab/gpu-llm-standin.sh ${arg//,/ } ;;
        llm-throughput)
          node lab/llm-throughput.mjs --task "${arg:-softmax}" --replies "${EVK_CANDIDATES:-40}" \
            --parallel "${EVK_PARALLEL:-4}" --out "$dir/${arg:-softmax}"
          ;;
        action) bash scripts/gpu-action.sh ${arg:-softmax} ;;
        builds) bash lab/bench-builds.sh ;;
        sandbox) bash lab/gpu-sandbox.sh ;;
        sweep) python3 lab/template-sweep.py ${arg//,/ } --out "$dir/sweep" ${EVK_SWEEP_ARGS:-} ;;
        compare-bench) python3 lab/compare-bench.py --json "$dir/compare-bench.json" ;;
        handoff) python3 lab/handoff-bench.py ${arg:+--sizes-mb "$arg"} | tee "$dir/handoff.txt" ;;
        screen) python3 lab/screen-check.py ${arg//,/ } --json "$dir/screen-check.json" ;;
        timer-probe) python3 lab/timer-probe.py ${arg//,/ } --json "$dir/timer-probe.json" ;;
        spawn-cost) node dist/sandbox-spawn.mjs --json "$dir/spawn-cost.json" ;;
        copy-floor) python3 lab/copy-floor.py ${arg//,/ } --json "$dir/copy-floor.json" ;;
        gpu-spread) python3 lab/gpu-spread.py --json "$dir/gpu-spread.json" ;;
        scaling) bash lab/gpu-results.sh scaling $(printf 'kernels/%s ' ${arg//,/ }) ;;
        tuner | shape-tuner)
          EVK_PROPOSER=$name bash lab/gpu-results.sh optimize $(printf 'kernels/%s ' ${arg//,/ })
          ;;
        *) echo "unknown step $step" ;;
      esac
      echo "exit $?"
    ) >"$dir/console.txt" 2>&1
    echo "== $step end $(date -u +%H:%M:%S): $(tail -1 "$dir/console.txt")"
    touch "$dir.done"
  }
}

collect() {
  local dir step
  cp "$batch/log" "$out/batch.log" 2>/dev/null
  for dir in "$batch"/steps/*/; do
    [ -d "$dir" ] || continue
    step=$(basename "$dir")
    tar -czf "$out/$step.tgz" -C "$batch/steps" "$step" 2>/dev/null
  done
}

case ${1:-wait} in
  start)
    shift
    [ $# -gt 0 ] || { echo "name the steps: selftest correct e2e llm builds screen tuner:T,… shape-tuner:T,…" >&2; exit 2; }
    # one batch at a time: a second start would delete the running one's results, and its
    # end would then mark the new one done
    if [ -f "$batch/pid" ] && kill -0 "$(cat "$batch/pid")" 2>/dev/null; then
      echo "a batch is still running (pid $(cat "$batch/pid")): gpu-batch.sh wait, or kill it first" >&2
      exit 4
    fi
    [ -f "$root/dist/evokernel.mjs" ] && [ -f "$root/.device/node.xz" ] ||
      { echo "carry dist and .device (npm run bundle; ../shared/tools/pack-node-for-device.sh)" >&2; exit 3; }
    rm -rf "$batch" && mkdir -p "$batch/steps"
    cp -a "$root" "$batch/repo"
    xz -d -c "$root/.device/node.xz" >/tmp/node && chmod +x /tmp/node
    export PATH=/tmp:$PATH PYTHONUNBUFFERED=1
    {
      echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
      echo "# commit $(tr '\n' ' ' 2>/dev/null <"$root/.device/commit" || echo "unknown (run scripts/gpu-prep.sh)"), steps: $*"
    } >"$batch/log"
    setsid bash "$0" _run "$@" >>"$batch/log" 2>&1 </dev/null &
    echo $! >"$batch/pid"
    shift $#
    set -- wait
    ;&
  wait)
    limit=${2:-${EVK_BATCH_WAIT:-560}}
    t0=$(date +%s)
    while [ ! -f "$batch/all.done" ] && [ $(($(date +%s) - t0)) -lt "$limit" ]; do sleep 5; done
    collect
    cat "$out/batch.log" 2>/dev/null
    [ -f "$batch/all.done" ] && echo "ALL DONE" || echo "still running after ${limit} s"
    ;;
  _run)
    shift
    export PATH=/tmp:$PATH PYTHONUNBUFFERED=1
    run_steps "$@"
    ;;
  *) echo "usage: gpu-batch.sh start STEP... | wait [SECONDS]" >&2; exit 2 ;;
esac
