#!/usr/bin/env node
// Runs the Python that can import torch with the given arguments (npm run test:py).
// Same rule as runner/src/harness/exec.ts, written again here because this script must
// work before the TypeScript is built: $EVOKERNEL_PYTHON, else the first of python3,
// /usr/bin/python3 that imports torch.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";

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
const isDevice = (path) => {
  try {
    return statSync(path).isCharacterDevice();
  } catch {
    return false;
  }
};
const devNullWasDevice = isDevice("/dev/null");
const run = spawnSync(python, process.argv.slice(2), { stdio: "inherit" });
// A test that wrote a record "to" /dev/null, renamed over it as root, once replaced the device
// with a file and broke every later process of another uid on the machine: say so here.
if (devNullWasDevice && !isDevice("/dev/null")) {
  console.error(
    "/dev/null is no longer a character device after this run: a test replaced it (a file renamed over it?). Restore it (rm /dev/null; mknod -m 666 /dev/null c 1 3) and find the test",
  );
  process.exit(1);
}
process.exit(run.status ?? 1);
