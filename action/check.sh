#!/usr/bin/env bash
# The Action's check before it runs anything: the bundled runner is at this ref, and the
# node on PATH is one evokernel supports (^20.18.1 or >= 22, Probot's range). Writes
# node=ok to $GITHUB_OUTPUT when it is; otherwise the Action installs Node with
# actions/setup-node, and the run step calls this again with --require, which fails with
# what to do instead of a syntax error from an old Node.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -f "$here/dist/evokernel.mjs" ]; then
  echo "::error::No bundled runner at this ref ($here/dist/evokernel.mjs is missing). 'uses:' must name a release tag made by 'npm run release-action' (docs/INSTALL.md, step 1), not a branch."
  exit 2
fi
version="$(node -p 'process.versions.node' 2>/dev/null || true)"
supported() {
  local major minor patch
  IFS=. read -r major minor patch <<<"$1"
  [ "$major" -ge 22 ] && return 0
  [ "$major" -eq 20 ] || return 1
  [ "$minor" -gt 18 ] || { [ "$minor" -eq 18 ] && [ "$patch" -ge 1 ]; }
}
if [ -n "$version" ] && supported "$version"; then
  echo "evokernel runs on Node.js $version ($(command -v node))"
  if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "node=ok" >>"$GITHUB_OUTPUT"; fi
  exit 0
fi
if [ "${1:-}" = "--require" ]; then
  echo "::error::evokernel needs Node.js ^20.18.1 or >= 22 and found ${version:-none} on PATH. Put one on the runner's PATH (docker/gpu-runner.Dockerfile does), or let the Action's actions/setup-node step install it (it needs to reach GitHub's download host)."
  exit 3
fi
echo "Node.js ${version:-not found} on PATH is not one evokernel supports (^20.18.1 or >= 22): the next step installs it"
