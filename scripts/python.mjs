#!/usr/bin/env node
// Runs the Python that can import torch with the given arguments (npm run test:py).
// Same rule as runner/src/harness/exec.ts, written again here because this script must
// work before the TypeScript is built: $EVOKERNEL_PYTHON, else the first of python3,
// /usr/bin/python3 that imports torch.
import { spawnSync } from "node:child_process";

function importsTorch(python) {
  const probe = spawnSync(python, ["-c", "import torch"], { stdio: "ignore" });
  return probe.status === 0;
}

function findPython() {
  if (process.env.EVOKERNEL_PYTHON) return process.env.EVOKERNEL_PYTHON;
  return ["python3", "/usr/bin/python3"].find(importsTorch);
}

const python = findPython();
if (!python) {
  console.error(
    "no Python that can import torch: install PyTorch (apt-get install python3-torch) or set EVOKERNEL_PYTHON",
  );
  process.exit(3);
}
const run = spawnSync(python, process.argv.slice(2), { stdio: "inherit" });
process.exit(run.status ?? 1);
