// Whether tests that start the Python harness can run here. In CI they must: a missing
// Python with torch is then a failure, not a skip.
import { findPython } from "../../runner/src/harness/exec.js";

export const python = await findPython();
export const inCi = Boolean(process.env["CI"]);
export const skipWithoutPython = python === null && !inCi;

if (skipWithoutPython) {
  console.warn("skipping harness tests: no Python that can import torch (set EVOKERNEL_PYTHON)");
}
