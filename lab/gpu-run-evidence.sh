#!/usr/bin/env bash
# Issue 18's run-time evidence on the GPU machine (no Node.js needed): the run decides, not
# the static check.
#   bash lab/gpu-run-evidence.sh          # what issue 18 changed (about 10 minutes on an H100)
#   bash lab/gpu-run-evidence.sh --all    # the whole adversarial and correct corpora
#   bash lab/gpu-run-evidence.sh --adversarial   # the whole adversarial corpus only (--correct: the other)
#   EVK_ONLY="softmax/03 llama_ffw/20" bash lab/gpu-run-evidence.sh   # just those entries
# 1. the run-time evidence tests under the machine's Python (3.12: sys.monitoring);
# 2. the softmax corpus's correct kernels (evk, torch-ext, Triton: still pass) and the adversarial
#    corpus entries whose catching issue 18 moved from the static check to the
#    run (streams, fallbacks, threads, subclasses, caching) and the new hacks: each must be
#    refused with one of its manifest reasons;
# 3. the correct corpus's honest idioms (try/except around a build, cudnn.benchmark and
#    importlib, TF32 flags, torch.matmul beside an own kernel, two streams joined, a PyTorch
#    rewrite, BatchNorm with batch statistics, robust-kbench's Llama FFN with cuBLAS GEMMs and
#    an own SwiGLU, its cross-entropy returning shape (1,)): each must verify and be benchmarked.
# Prints OK/MISS per entry and "N/M entries met their expectation" per manifest; records go to
# $OUT (issue18-adversarial.json, issue18-correct.json, issue18-evidence.txt).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/evk-issue18}
mkdir -p "$out"
py=${EVK_PYTHON:-}
[ -z "$py" ] && { [ -x /opt/torch/.venv/bin/python ] && py=/opt/torch/.venv/bin/python || py=python3; }
export EVOKERNEL_SHARED_DATA=${EVOKERNEL_SHARED_DATA:-$PWD/.device/data}
export EVOKERNEL_CACHE=${EVOKERNEL_CACHE:-/tmp/evokernel-cache}
echo "# $(date -u +%H:%M:%S) $($py --version) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)"

(cd runner/harness && PYTHONPATH=. "$py" -m unittest tests.test_evidence -v) >"$out/issue18-evidence.txt" 2>&1
echo "evidence tests: exit $? ($(tail -1 "$out/issue18-evidence.txt"))"

rc=0
adversarial=(--only softmax/00 --only softmax/01b --only softmax/03 --only softmax/04 --only softmax/05 --only softmax/06b
  --only softmax/10c --only softmax/11c --only softmax/12 --only kb_batchnorm/ --only kb_gemm_add_relu/)
correct=(--only softmax_idioms/ --only gemm_bias_relu/ --only kb1_33_batchnorm/ --only llama_ffw/
  --only mnist_cross_entropy/21)
skip_adversarial= skip_correct=
case ${1:-} in
  --all) adversarial=() correct=() ;;
  --adversarial) adversarial=() skip_correct=1 ;;
  --correct) correct=() skip_adversarial=1 ;;
  "") ;;
  *) echo "usage: gpu-run-evidence.sh [--all|--adversarial|--correct]" >&2; exit 2 ;;
esac
# EVK_ONLY="NAME NAME…": just the entries (of either corpus) whose file names contain a NAME;
# only without a mode (--all, --adversarial and --correct run their corpus in full, so one batch
# can hold both `issue18` with EVK_ONLY and `issue18:correct`)
if [ -n "${EVK_ONLY:-}" ] && [ -z "${1:-}" ]; then
  adversarial=() correct=()
  for name in $EVK_ONLY; do adversarial+=(--only "$name") correct+=(--only "$name"); done
fi
if [ -z "$skip_adversarial" ]; then
  echo "# $(date -u +%H:%M:%S) the adversarial corpus"
  "$py" runner/corpus/run_manifest.py --manifest runner/corpus/manifest.json --out "$out/issue18-adversarial.json" \
    --cache /tmp/evk-corpus-cache --timeout 600 "${adversarial[@]}" || rc=1
fi
if [ -z "$skip_correct" ]; then
  echo "# $(date -u +%H:%M:%S) the correct corpus"
  "$py" runner/corpus/run_manifest.py --manifest runner/corpus/correct/manifest.json --out "$out/issue18-correct.json" \
    --cache /tmp/evk-corpus-cache --timeout 900 "${correct[@]}" || rc=1
fi
echo "# $(date -u +%H:%M:%S) done"
echo "issue18: exit $rc"
exit $rc
