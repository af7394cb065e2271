#!/usr/bin/env bash
# Everything a GPU batch needs carried along, prepared here (the GPU machine has no Node.js and
# reaches nothing): the bundle (dist/), Node packed into .device/node.xz
# (../shared/tools/pack-node-for-device.sh), the public task data under .device/data, and the
# commit the tree was sent at (.device/commit: the device's git metadata can be stale, so
# gpu-batch.sh's log names this one). Then, with the device tool, carry [".device", "dist"]:
#   bash lab/gpu-batch.sh start STEP...      # waits EVK_BATCH_WAIT seconds (560)
#   bash lab/gpu-batch.sh wait 560           # again within 30 s, until ALL DONE
# Keep the wait under the call's own time limit: a call cut off by its limit returns nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build >/dev/null
npm run bundle >/dev/null
bash ../shared/tools/pack-node-for-device.sh >/dev/null
mkdir -p .device/data
for d in kernelbench robust-kbench; do
  [ -d ".device/data/$d" ] || cp -r "../shared/data/$d" .device/data/
done
git rev-parse --short HEAD >.device/commit
[ -z "$(git status --porcelain --untracked-files=no)" ] || echo "+ uncommitted changes" >>.device/commit
echo "ready: $(tr '\n' ' ' <.device/commit)($(du -sh .device dist | awk '{print $2 " " $1}' | tr '\n' ' '))"
