#!/usr/bin/env bash
# Torch-extension build throughput (issue 7), on the GPU machine (no Node.js there: the
# bundle from `npm run bundle` and .device/node.xz travel with the run):
#   bash lab/bench-builds.sh [MANIFEST]     # default runner/corpus/correct/manifest.json
# Its shared: tasks (KernelBench, robust-kbench) resolve under $EVOKERNEL_SHARED_DATA, by
# default .device/data when present: on the development machine,
#   mkdir -p .device/data && cp -r ../shared/data/kernelbench ../shared/data/robust-kbench .device/data/
# and carry .device/data with the run; entries whose task is not there are skipped (said so).
# Verifies the torch-extension and load_inline candidates of MANIFEST plus generated
# variants of the corpus's torch-ext softmax (block sizes: distinct sources, distinct cold
# builds; as many as make about 22 candidates, at least 9) through one `evokernel verify --manifest` command:
#   cold        every candidate, fresh EVOKERNEL_CACHE (fresh torch_extensions, PCH, objects)
#   warm        9 of them again, same cache (verification only)
#   concurrent  3 verify commands at once, 3 of those 9 each, fresh cache
# and samples compiler processes (cc1plus, cicc, cudafe++, ptxas) every 0.5 s against the
# cores. While the warm phase runs (GPU-bound), one torch-ext .cu and one binding unit are
# compiled alone, with the commands torch wrote in the cold run: nvcc --time phases, and
# main.cpp without and with the precompiled header. EVK_BENCH_OFF=1 adds a phase with
# EVOKERNEL_FASTPATH=0 (binding units as torch wrote them). Prints and writes
# $OUT/summary.txt; raw records in $OUT (at most 8 files). EVK_BENCH_COLD_S caps the cold phase (default 290 s; the others 120 and 170 s); the whole
# run takes about 7-8 minutes on the H100 machine (verification, ~7 s a candidate, included).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/evokernel-bench-builds}
mkdir -p "$out"
if ! command -v node >/dev/null; then
  xz -d -c .device/node.xz > /tmp/node && chmod +x /tmp/node && export PATH=/tmp:$PATH
fi
root=$(pwd)
# shared: task paths of the manifest: the data carried along in .device/data, if it was
if [ -z "${EVOKERNEL_SHARED_DATA:-}" ] && [ -d .device/data ]; then
  export EVOKERNEL_SHARED_DATA=$root/.device/data
fi
work=$(mktemp -d /tmp/evk-bench-builds.XXXXXX)
manifest=${1:-runner/corpus/correct/manifest.json}
cold_s=${EVK_BENCH_COLD_S:-290}  # worst case 290 + 120 + 170 s: inside a 10-minute run
started=$(date +%s)
evk() { node "$root/dist/evokernel.mjs" "$@"; }
# machine-wide build slots of this run only (a stale run's locks cannot interfere)
export EVOKERNEL_BUILD_SLOTS="$work/slots"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
  echo "# node $(node --version), $(nvcc --version | tail -1), $(python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1), $(nproc) cores, $(g++ --version | head -1)"
  echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$out/device.txt"

# --- the candidates: the manifest's torch-ext / load_inline entries, and variants ----------
python3 - "$manifest" "$work" "$root" <<'EOF' | tee -a "$out/device.txt"
import json, os, re, sys
manifest, work, root = sys.argv[1:4]
shared = os.environ.get("EVOKERNEL_SHARED_DATA") or os.path.join(os.path.dirname(root), "shared", "data")
def where(p):
    if p.startswith("shared:"):
        return os.path.join(shared, p[len("shared:"):])
    return p if os.path.isabs(p) else os.path.join(root, p)
entries, skipped = [], []
if os.path.exists(os.path.join(root, manifest)) or os.path.exists(manifest):
    path = manifest if os.path.exists(manifest) else os.path.join(root, manifest)
    for e in json.load(open(path)):
        f, t = where(e["file"]), where(e["task"])
        if not os.path.exists(f) or not os.path.exists(t.split("#")[0]):
            skipped.append(f"{e['file']} (task or file not here)")
            continue
        src = open(f, errors="replace").read()
        ext = f.endswith(".cu") and ("PYBIND11_MODULE" in src or "TORCH_LIBRARY" in src)
        inline = f.endswith(".py") and ("load_inline" in src or "cpp_extension" in src)
        if ext or inline:
            entries.append({"file": f, "task": t, "origin": "manifest"})
else:
    skipped.append(f"{manifest} (no such manifest)")
base = open(os.path.join(root, "runner/corpus/softmax/00b_torch_ext_block_row.cu")).read()
task = os.path.join(root, "kernels/softmax")
gen = os.path.join(work, "generated")
os.makedirs(gen)
kernel = base.split("\nPYBIND11_MODULE")[0]
# enough variants for about 22 cold builds in all, at least 3 of each kind
per_kind = max(3, -(-(22 - len(entries)) // 3))
threads = [32, 64, 96, 128, 192, 384, 512, 1024][:min(8, per_kind)]
for n in threads:  # A: torch-ext .cu (torch's load(): one nvcc unit)
    f = os.path.join(gen, f"a_ext_threads{n}.cu")
    open(f, "w").write(base.replace("#define THREADS 256", f"#define THREADS {n}"))
    entries.append({"file": f, "task": task, "origin": "variant A (torch-ext .cu)"})
for n in threads:  # B: load_inline, one extension name: same binding unit for all
    cuda = kernel.replace("#define THREADS 256", f"#define THREADS {n}")
    py = ("import torch\nfrom torch.utils.cpp_extension import load_inline\n\n"
          f"CUDA = r'''{cuda}'''\n\n"
          "_ext = load_inline(name='evk_softmax_rows', cpp_sources='torch::Tensor forward(torch::Tensor x);',\n"
          "                   cuda_sources=CUDA, functions=['forward'], extra_cuda_cflags=['-O3'])\n\n\n"
          "def forward(x):\n    return _ext.forward(x)\n")
    f = os.path.join(gen, f"b_inline_threads{n}.py")
    open(f, "w").write(py)
    entries.append({"file": f, "task": task, "origin": "variant B (load_inline, shared bindings)"})
for n in threads[:min(4, per_kind)]:  # C: load_inline, a name of its own: bindings differ (PCH, no object hit)
    src = open(os.path.join(gen, f"b_inline_threads{n}.py")).read()
    f = os.path.join(gen, f"c_inline_named{n}.py")
    open(f, "w").write(src.replace("name='evk_softmax_rows'", f"name='softmax_rows_{n}'"))
    entries.append({"file": f, "task": task, "origin": "variant C (load_inline, own bindings)"})
full = [{"file": e["file"], "task": e["task"], "hack": None, "expect": "pass", "reasons": [], "check": "verify"} for e in entries]
json.dump(full, open(os.path.join(work, "all.json"), "w"), indent=1)
# 9 of each kind's mix for the shorter phases: A, B and C variants, 3 each
pick = lambda tag, k: [e for e in full if tag in e["file"]][:k]
nine = pick("/a_ext_", 3) + pick("/b_inline_", 3) + pick("/c_inline_", 3)
json.dump(nine, open(os.path.join(work, "warm.json"), "w"))
for i in range(3):
    json.dump(nine[i::3], open(os.path.join(work, f"third{i}.json"), "w"))
json.dump(nine, open(os.path.join(work, "off.json"), "w"))
json.dump(entries, open(os.path.join(work, "origins.json"), "w"))
print(f"# candidates: {len(full)} ({sum(e['origin'] == 'manifest' for e in entries)} from {manifest}, "
      f"{sum(e['origin'] != 'manifest' for e in entries)} generated variants of runner/corpus/softmax/00b_torch_ext_block_row.cu: "
      f"A {len(threads)} torch-ext .cu with THREADS in {threads}, B {len(threads)} load_inline sharing bindings, "
      f"C {min(4, per_kind)} load_inline with extension names of their own)")
for s in skipped:
    print(f"# skipped: {s}")
EOF

# --- sampling compiler processes -----------------------------------------------------------
sampler() {  # $1: file; runs until killed
  while :; do
    echo "$(date +%s.%N) $(ps -eo comm= | grep -cE '^(cc1plus|cicc|cudafe\+\+|ptxas)$')"
    sleep 0.5
  done > "$1"
}
run_phase() {  # name, limit s, cache, manifest(s)...: one verify command per manifest, all at once
  local name=$1 phase_s=$2 cache=$3
  shift 3
  mkdir -p "$cache"
  sampler "$work/$name.samples" &
  local spid=$! t0 t1 pids=() i=0
  t0=$(date +%s.%N)
  for m in "$@"; do
    # stderr lines time-stamped: when the last build ended, not only the last verification
    EVOKERNEL_CACHE=$cache timeout "$phase_s" node "$root/dist/evokernel.mjs" verify --manifest "$m" --json \
      2> >(while IFS= read -r line; do echo "$(date +%s.%N) $line"; done > "$work/$name.$i.log") \
      > "$work/$name.$i.json" &
    pids+=($!)
    i=$((i + 1))
  done
  for p in "${pids[@]}"; do wait "$p"; done
  t1=$(date +%s.%N)
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  echo "$name $t0 $t1" >> "$work/phases.txt"
  echo "## $name: $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s"
}
alone() {  # one .cu and one binding unit compiled alone, as torch wrote them in the cold run
  local a c cflags post ccflags ccpost gch
  a=$(dirname "$(ls "$work"/cache-cold/*/build.ninja 2>/dev/null | head -1)")
  c=$(ls -d "$work"/cache-cold/*/torch_extensions/softmax_rows_* 2>/dev/null | head -1)
  [ -n "$a" ] && [ -f "$a/build.ninja" ] || { echo "no torch-ext build to time"; return; }
  ccflags=$(sed -n 's/^cuda_cflags = //p' "$a/build.ninja")
  ccpost=$(sed -n 's/^cuda_post_cflags = //p' "$a/build.ninja")
  ( cd "$work" && TIMEFORMAT='nvcc .cu alone: %R s wall, %U s user' && time eval "nvcc --time nvcc-phases.csv $ccflags -c $a/candidate.cu -o alone-cu.o $ccpost" ) 2>&1 &
  if [ -n "$c" ] && [ -f "$c/build.ninja" ]; then
    cflags=$(sed -n 's/^cflags = //p' "$c/build.ninja")
    post=$(sed -n 's/^post_cflags = //p' "$c/build.ninja")
    gch=$(ls "$work"/cache-cold/pch/*/evk_torch_extension.h.gch 2>/dev/null | head -1)
    ( cd "$work" && TIMEFORMAT='main.cpp alone, as torch wrote it: %R s wall, %U s user' && time eval "c++ $cflags -c $c/main.cpp -o alone-plain.o $post" ) 2>&1 &
    if [ -n "$gch" ]; then
      ( cd "$work" && TIMEFORMAT='main.cpp alone, precompiled header: %R s wall, %U s user' && time eval "c++ -Winvalid-pch -include ${gch%.gch} $cflags -c $c/main.cpp -o alone-pch.o $post" ) 2>&1 &
    fi
  fi
  wait
  if [ -f "$work/alone-plain.o" ] && [ -f "$work/alone-pch.o" ]; then
    cmp -s <(objdump -d "$work/alone-plain.o" | tail -n +3) <(objdump -d "$work/alone-pch.o" | tail -n +3) \
      && echo "main.cpp object code with and without the precompiled header: identical" \
      || echo "main.cpp object code with and without the precompiled header: DIFFERENT"
  fi
  [ -f "$work/nvcc-phases.csv" ] && awk -F, 'NR > 1 { printf "  nvcc phase %-28s %8.0f ms\n", $2, $7 }' "$work/nvcc-phases.csv"
}
run_phase cold "$cold_s" "$work/cache-cold" "$work/all.json"
alone > "$work/alone.txt" 2>&1 &
alone_pid=$!
run_phase warm 120 "$work/cache-cold" "$work/warm.json"
wait "$alone_pid"
run_phase concurrent 170 "$work/cache-concurrent" "$work/third0.json" "$work/third1.json" "$work/third2.json"
if [ "${EVK_BENCH_OFF:-0}" = 1 ]; then
  export EVOKERNEL_FASTPATH=0
  run_phase fastpath-off 170 "$work/cache-off" "$work/off.json"
  unset EVOKERNEL_FASTPATH
fi

# --- the figures ---------------------------------------------------------------------------
python3 - "$work" "$(nproc)" <<'EOF' | tee "$out/summary.txt"
import glob, json, os, re, statistics, sys
work, cores = sys.argv[1], int(sys.argv[2])
origins = {e["file"]: e["origin"] for e in json.load(open(os.path.join(work, "origins.json")))}
phases = {}
for line in open(os.path.join(work, "phases.txt")):
    name, t0, t1 = line.split()
    phases[name] = float(t1) - float(t0)
def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p
    lo = int(k)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (k - lo)
print(f"# torch-extension build throughput, {cores} cores")
print("phase | commands | candidates | passed | wall s | candidates/min | build s median (p20-p80), uncached | "
      "max compilers at once (mean while any) vs cores")
print("---|---|---|---|---|---|---|---")
detail = {}
build_wall = {}
for name in ("cold", "warm", "concurrent", "fastpath-off"):
    files = sorted(glob.glob(os.path.join(work, f"{name}.*.json")))
    if not files:
        continue
    results, broken = [], 0
    for f in files:
        try:
            doc = json.load(open(f))
        except (OSError, ValueError):
            broken += 1
            # cut short: the candidates that ended, from their progress lines
            for line in open(f[:-5] + ".log", errors="replace"):
                m = re.search(r"\] (\S+): (passed|\S+).*\(compile ([\d.]+) s(, cached)?, verify ([\d.]+) s", line)
                if m:
                    results.append({"candidate": m.group(1), "ok": m.group(2) == "passed", "status": m.group(2),
                                    "reason": None, "message": "", "seconds": {"verify": float(m.group(5))},
                                    "build": {"ok": True, "cached": bool(m.group(4)), "seconds": float(m.group(3)), "log": ""}})
            continue
        for t in doc.get("tasks", []):
            results += t["candidates"]
    builds = [r["build"]["seconds"] for r in results if r.get("build") and r["build"]["ok"] and not r["build"]["cached"]]
    passed = sum(r["ok"] for r in results)
    samples = [int(l.split()[1]) for l in open(os.path.join(work, f"{name}.samples")) if len(l.split()) == 2]
    busy = [s for s in samples if s > 0]
    wall = phases.get(name, float("nan"))
    n = len(results)
    t0 = None
    last_build = 0.0
    for f in glob.glob(os.path.join(work, f"{name}.*.log")):
        for line in open(f, errors="replace"):
            stamp, _, text = line.partition(" ")
            try:
                t = float(stamp)
            except ValueError:
                continue
            t0 = t if t0 is None else min(t0, t)
            if text.startswith("build ") and not text.rstrip().endswith("…"):
                last_build = max(last_build, t)
    build_wall[name] = (last_build - t0) if t0 is not None and last_build else float("nan")
    note = f" ({broken} command(s) wrote no JSON: timed out?)" if broken else ""
    print(f"{name} | {len(files)} | {n} | {passed} | {wall:.1f} | {n / (wall / 60):.1f} | "
          + (f"{statistics.median(builds):.1f} ({pct(builds, 0.2):.1f}-{pct(builds, 0.8):.1f}), n={len(builds)}" if builds else "all cached")
          + f" | {max(samples, default=0)} ({statistics.mean(busy) if busy else 0:.1f}) vs {cores}{note}")
    detail[name] = results
print()
for name, w in build_wall.items():
    builds = [r for r in detail[name] if r.get("build") and not r["build"]["cached"]]
    if builds and w == w:
        print(f"{name}: the last of {len(builds)} builds ended {w:.1f} s after the start: "
              f"{len(builds) / (w / 60):.1f} builds/min (GPU verification after that is the rest of the wall)")
import re
units = {}
for name, rs in detail.items():
    for r in rs:
        for line in ((r.get("build") or {}).get("log") or "").splitlines():
            m = re.search(r"evk-fastpath: (compiled|linked) (\S+) in ([\d.]+) s \(([^)]*)\)", line)
            if m:
                kind = m.group(4).split(",")[0]
                unit = m.group(2) if m.group(1) == "compiled" else "link"
                unit = "main.cpp" if unit == "main.cpp" else ("link" if unit == "link" else ".cu")
                units.setdefault((name, unit, kind), []).append(float(m.group(3)))
if units:
    print("\n## compile seconds per unit, as the wrappers measured them (median, n)")
    for (name, unit, kind), xs in sorted(units.items()):
        print(f"{name} {unit} ({kind}): {statistics.median(xs):.1f} s, n={len(xs)}")
alone = os.path.join(work, "alone.txt")
if os.path.exists(alone):
    print("\n## compiled alone during the warm phase (one process each, 3 at once)")
    print(open(alone).read().rstrip())
print()
print("## per candidate, cold (build s; cached; verify s; verdict)")
for r in detail.get("cold", []):
    b = r.get("build") or {}
    log = b.get("log") or ""
    fast = [l.split("evk-fastpath: ", 1)[1][:90] for l in log.splitlines() if "evk-fastpath: " in l]
    print(f"{os.path.basename(r['candidate'])} [{origins.get(r['candidate'], '?')}]: build {b.get('seconds', 0):.1f} s"
          f"{' cached' if b.get('cached') else ''}; verify {r['seconds']['verify']:.1f} s; "
          f"{'passed' if r['ok'] else r['status'] + ' ' + str(r.get('reason'))}; fast path: {'; '.join(fast) or '-'}")
fails = [r for rs in detail.values() for r in rs if not r["ok"]]
for r in fails[:5]:
    print(f"\n## FAILED {r['candidate']}: {r['status']} {r.get('reason')}\n{(r.get('message') or '')[-1500:]}")
EOF
cp "$work"/cold.0.json "$out/cold.json" 2>/dev/null
cp "$work"/warm.0.json "$out/warm.json" 2>/dev/null
tar -czf "$out/logs.tgz" -C "$work" --exclude='cache-*' --exclude=slots . 2>/dev/null
echo "# total $(( $(date +%s) - started )) s; outputs in $out (summary.txt, device.txt, cold.json, warm.json, logs.tgz)"
rm -rf "$work"
