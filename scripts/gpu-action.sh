#!/usr/bin/env bash
# The Action on a GPU machine as a workflow runs it (issue 19.2): the tree of a release
# (this checkout with dist/evokernel.mjs as action/dist/evokernel.mjs, what
# `npm run release-action` tags), action.yml's own check and run steps (taken from the file,
# with the inputs a workflow would pass), no npm anywhere on PATH. Needs Node on PATH (the
# runner's own; gpu-batch.sh puts .device's there) and dist/evokernel.mjs (npm run bundle).
#   bash scripts/gpu-action.sh [TASK]    # default softmax; writes $OUT/action/*
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
task=${1:-softmax}
out=${OUT:-/tmp/evk-action-out}/action
work=$(mktemp -d)
mkdir -p "$out" "$work/release" "$work/workspace" "$work/runner-temp" "$work/bin"
trap 'rm -rf "$work"' EXIT

# The release's tree: the checkout plus the bundle where the tag carries it. Tracked files and
# new ones git does not ignore: a tree sent to a GPU machine may carry a stale index (the
# 2026-11-29 acceptance run's release tree lacked a module added since, and the harness failed).
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar -cf - 2>/dev/null) |
  tar -xf - -C "$work/release"
mkdir -p "$work/release/action/dist"
cp "$root/dist/evokernel.mjs" "$work/release/action/dist/evokernel.mjs"
# The job's checkout: the task as a repository's kernels/ folder.
cp -a "$root/kernels" "$work/workspace/kernels"
# npm must never run: a trap that records a call.
printf '#!/bin/sh\necho "npm called: $*" >> %s/npm-called.txt\nexit 99\n' "$out" >"$work/bin/npm"
chmod +x "$work/bin/npm"
cp "$work/bin/npm" "$work/bin/npx"

# action.yml's run: blocks, by step id (8-space indented under `run: |`).
step() {
  awk -v id="$1" '
    /^    - name:/ { inside = 0; want = 0 }
    $0 ~ "^      id: " id "$" { want = 1 }
    want && /^      run: \|/ { inside = 1; next }
    want && /^      run: / { sub(/^      run: /, ""); print; want = 0; next }
    inside { sub(/^        /, ""); print }
  ' "$work/release/action/action.yml"
}

export PATH="$work/bin:$PATH" GITHUB_ACTION_PATH="$work/release/action" \
  GITHUB_OUTPUT="$out/github-output.txt" GITHUB_STEP_SUMMARY="$out/step-summary.md" \
  RUNNER_TEMP="$work/runner-temp" EVOKERNEL_CLI="$work/release/action/dist/evokernel.mjs" \
  EVOKERNEL_PYTHON="${EVOKERNEL_PYTHON:-}" INPUT_SPEC="" INPUT_COMMAND=bench \
  INPUT_TASK="kernels/$task" INPUT_CANDIDATE=""
: >"$GITHUB_OUTPUT"
cd "$work/workspace" || exit 1
echo "== check step"
bash -e -c "$(step check)"
echo "check exit $?"
echo "== run step: bench kernels/$task from the bundle"
start=$(date +%s)
bash -e -c "$(step run)"
code=$?
echo "run exit $code after $(($(date +%s) - start)) s"
cp "$work/runner-temp/evokernel-result/result.json" "$out/result.json" 2>/dev/null
cat "$GITHUB_OUTPUT"
[ -f "$out/npm-called.txt" ] && echo "FAIL: npm was called" && exit 1
exit "$code"
