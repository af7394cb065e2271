#!/usr/bin/env bash
# First contact with a GPU machine: the harness alone (no Node), on every built-in task and
# on the corpus files present. Writes records under $OUT (or /tmp/smoke). Not a test: a probe.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/smoke}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/runner/harness EVOKERNEL_CACHE=/tmp/evkcache TORCH_EXTENSIONS_DIR=/tmp/evkcache/torch_ext PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
h() { "$py" -m evokernel_harness "$@"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
h device
t0=$(date +%s.%N)
ls kernels/*/kernel.cu runner/corpus/*/*.cu runner/corpus/tasks/*/kernel.cu 2>/dev/null \
  | xargs -P 16 -I{} sh -c "timeout 300 $py -m evokernel_harness build --candidate {} --out $OUT/build-\$(echo {} | tr / _).json >/dev/null 2>&1"
echo "parallel builds: $(echo "$(date +%s.%N) - $t0" | bc) s"
"$py" - "$OUT" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/build-*.json")):
    r = json.load(open(f))
    print(f"build {'ok ' if r['ok'] else 'ERR'} {r['seconds']:6.2f}s {r['format']:9s} {f.split('build-')[1]}" + ("" if r["ok"] else "\n" + r["log"][-600:]))
PY
h ceilings --out "$OUT/ceilings.json"; cat "$OUT/ceilings.json"; echo
for t in kernels/*/ runner/corpus/tasks/*/; do
  n=$(basename "$t")
  s=$(date +%s.%N)
  h verify --task "$t" --heldout --out "$OUT/verify-$n.json" 2> "$OUT/verify-$n.log"
  "$py" -c "import json,sys;r=json.load(open('$OUT/verify-$n.json'));print(f\"verify {'$n':22s} {r['status']:9s} {r['reason']} {r['message'][:220]}\")" 2>/dev/null || { echo "verify $n: harness failed"; tail -5 "$OUT/verify-$n.log"; }
  echo "  $(echo "$(date +%s.%N) - $s" | bc) s"
done
"$py" - <<'PY'
import json, os, subprocess, sys, time
man = "runner/corpus/manifest.json"
if not os.path.exists(man):
    sys.exit(0)
for e in json.load(open(man)):
    if e.get("format") == "torch-ext" and os.environ.get("SMOKE_TORCH_EXT") != "1":
        continue
    out = f"/tmp/smoke-corpus.json"
    cmd = [sys.executable, "-m", "evokernel_harness", e.get("check", "verify"), "--task", e["task"], "--out", out]
    if e["file"] != e["task"] and not e["file"].endswith("kernel.cu"):
        cmd += ["--candidate", e["file"]]
    if e.get("check") == "bench":
        cmd += ["--budget", "0.3", "--ceilings", os.environ.get("OUT", "/tmp/smoke") + "/ceilings.json"]
    s = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        r = json.load(open(out)) if p.returncode == 0 else {"reason": f"harness exit {p.returncode}", "message": p.stderr[-300:]}
    except subprocess.TimeoutExpired:
        r = {"reason": "timeout", "message": ""}
    got = r.get("reason")
    want = e.get("reasons") or [None]
    good = (e["expect"] == "pass" and r.get("ok")) or (e["expect"] == "reject" and got in want)
    print(f"corpus {'OK  ' if good else 'MISS'} {e['file']:60s} want {e['expect']}:{','.join(map(str, want))} got {got} {time.time()-s:5.1f}s {'' if good else r.get('message','')[:200]}")
PY
for t in softmax gemm_bias_relu rmsnorm_backward; do
  h bench --task kernels/$t --budget 0.5 --ceilings "$OUT/ceilings.json" --out "$OUT/bench-$t.json" 2> "$OUT/bench-$t.log" || tail -20 "$OUT/bench-$t.log"
  "$py" -c "
import json;r=json.load(open('$OUT/bench-$t.json'))
print('bench', r['task'], r['ok'], r['reason'], r['message'][:200])
for c in r['configs']:
    f=lambda s: f\"{s['medianMs']:.4f}\" if s else '-'
    print(f\"  {c['name']:22s} eager {f(c['eager'])} compile {f(c['compile'])} base {f(c['baseline'])} floor {c['floorMs']:.4f} {c['reason']}\")" 2>/dev/null
done
echo "serve:"; printf '{"id":"a","argv":["device","--out","/tmp/srv.json"],"timeoutS":60}\n{"id":"b","argv":["verify","--task","kernels/row_sum","--out","/tmp/srv2.json"],"timeoutS":120}\n' | h serve | cut -c1-300
