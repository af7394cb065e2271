#!/usr/bin/env bash
# Lab benchmark (issue 33.7): KernelBench candidates that build their extension lazily, in
# ModelNew.__init__, verified with and without the build stage constructing them
# (EVOKERNEL_BUILD_PREPARE). Variants are made here from the correct corpus's load_inline
# candidates (the load_inline call moved into __init__, a variant number in the CUDA source so
# each compiles anew); every problem's candidates go to one `verify` at once, the problems side
# by side, each mode with a fresh cache. Prints verified a minute, the phases, and the share of
# nvidia-smi's samples (every 0.5 s) with the GPU idle.
#
#   bash scripts/gpu-prep.sh; then there: OUT=DIR bash lab/gpu-lazy-builds.sh [VARIANTS]
#   MODES="on" (default "off on"), PROBLEMS=1 (the first N of the three), SHARES="1 2 3"
#   (EVOKERNEL_GPU_SHARE for each run in turn: how many verifications share the GPU; default
#   the harness's own)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/evk-lazy}/lazy-builds
mkdir -p "$out"
variants=${1:-4}
data=${EVOKERNEL_SHARED_DATA:-$root/.device/data}
export EVOKERNEL_SHARED_DATA=$data
py=${EVOKERNEL_PYTHON:-python3}
problems=(
  "kernelbench/KernelBench/level1/23_Softmax.py=runner/corpus/correct/kb1_23_softmax/10_py_inline_three_pass_rows.py"
  "kernelbench/KernelBench/level1/19_ReLU.py=runner/corpus/correct/kb1_19_relu/09_py_inline_grid_stride_any_size.py"
  "kernelbench/KernelBench/level1/40_LayerNorm.py=runner/corpus/correct/kb1_40_layernorm/14_py_inline_multiblock_two_pass.py"
)
problems=("${problems[@]:0:${PROBLEMS:-3}}")
"$py" - "$out/cands" "$variants" "$root" "${problems[@]}" <<'PY'
import os, re, sys
out, n, root, pairs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
for pair in pairs:
    problem, cand = pair.split("=")
    src = open(os.path.join(root, cand)).read()
    call = re.search(r"^_ext = load_inline\((.*?)^\)\n", src, re.S | re.M)
    assert call, cand
    body = call.group(1)
    src = src[: call.start()] + src[call.end():]
    src = src.replace("_ext.", "self._ext.")
    src = re.sub(r"(class ModelNew\(nn\.Module\):\n    def __init__\(self[^)]*\):\n        super\(ModelNew, self\)\.__init__\(\)\n)",
                 lambda m: m.group(1) + "        self._ext = load_inline(" + body.replace("\n", "\n    ") + ")\n", src)
    assert "self._ext = load_inline(" in src, cand
    folder = os.path.join(out, os.path.basename(problem)[:-3])
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        v = src.replace('_CUDA_SRC = r"""', f'_CUDA_SRC = r"""\n#define EVK_LAZY_VARIANT {i}', 1)
        v = re.sub(r'name="([^"]+)"', lambda m: f'name="{m.group(1)}_lazy{i}"', v, count=1)
        open(os.path.join(folder, f"lazy{i}.py"), "w").write(v)
PY
[ $? -eq 0 ] || { echo "gpu-lazy-builds: could not make the variants" >&2; exit 2; }
for share in ${SHARES:-default}; do
for mode0 in ${MODES:-off on}; do
  export EVOKERNEL_BUILD_PREPARE=$mode0
  if [ "$share" = default ]; then unset EVOKERNEL_GPU_SHARE; mode=$mode0; else export EVOKERNEL_GPU_SHARE=$share; mode=$mode0-share$share; fi
  export EVOKERNEL_CACHE=$(mktemp -d /tmp/evk-lazy-cache-XXXX)
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 500 >"$out/util-$mode.txt" 2>/dev/null &
  smi=$!
  start=$(date +%s.%N)
  for pair in "${problems[@]}"; do
    problem=${pair%%=*}
    name=$(basename "$problem" .py)
    args=()
    for f in "$out/cands/$name"/*.py; do args+=(--candidate "$f"); done
    node "$root/dist/evokernel.mjs" verify "$data/$problem" "${args[@]}" --json >"$out/$mode-$name.json" 2>"$out/$mode-$name.log" &
  done
  wait $(jobs -p | grep -v "^$smi$")
  took=$(awk "BEGIN { print $(date +%s.%N) - $start }")
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  node -e '
    const fs = require("fs");
    const [mode, took, dir] = process.argv.slice(1);
    const rows = fs.readdirSync(dir).filter((f) => f.startsWith(mode + "-") && f.endsWith(".json"))
      .flatMap((f) => { try { return JSON.parse(fs.readFileSync(dir + "/" + f, "utf8")).candidates ?? []; } catch { return []; } });
    const ok = rows.filter((c) => c.ok).length;
    const sum = (k) => rows.reduce((a, c) => a + (c.seconds?.[k] ?? 0), 0);
    const util = fs.readFileSync(dir + "/util-" + mode + ".txt", "utf8").trim().split("\n").map(Number).filter((x) => !Number.isNaN(x));
    const idle = util.length ? util.filter((x) => x === 0).length / util.length : NaN;
    const alone = rows.filter((c) => JSON.stringify(c).includes("verified again alone")).length;
    const prepared = rows.filter((c) => /evk-prepare: ModelNew constructed/.test(c.build?.log ?? "")).length;
    const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
    console.log(`prepare=${mode}: ${ok}/${rows.length} verified in ${Number(took).toFixed(0)} s = ${(ok / (took / 60)).toFixed(1)} a minute; ` +
      `build ${sum("compile").toFixed(0)} s, verify ${sum("verify").toFixed(0)} s in all (median verify ${med(rows.map((c) => c.seconds?.verify ?? 0)).toFixed(1)} s); ` +
      `GPU idle in ${(idle * 100).toFixed(0)} % of ${util.length} samples; ${prepared} constructed in the build stage; ${alone} verified again alone after sharing the GPU`);
    for (const c of rows.filter((c) => !c.ok)) console.log(`  not verified: ${c.candidate}: ${c.status} ${c.reason}: ${String(c.message).slice(0, 300)}`);
  ' "$mode" "$took" "$out" | tee -a "$out/summary.txt"
done
done
