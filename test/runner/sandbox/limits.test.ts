// The sandbox's process-count and file-size caps (issue 34.3; sandbox.ts, sandboxLimits; applied
// by enter.sh's prlimit) are sized from the machine: 256 processes a CPU (1024 to 8192), half the
// free space of the scratch folder's filesystem for one file (256 MiB to 16 GiB); the settings
// win, and one that is not a number is refused naming it.
import { describe, expect, it } from "vitest";
import { sandboxLimits } from "../../../runner/src/sandbox/sandbox.js";

const MIB = 2 ** 20;
const GIB = 2 ** 30;

describe("sandboxLimits", () => {
  it("sizes the process count from the CPUs", () => {
    expect(sandboxLimits({ cpus: 2, freeBytes: 100 * GIB }, {}).nproc).toBe(1024);
    expect(sandboxLimits({ cpus: 16, freeBytes: 100 * GIB }, {}).nproc).toBe(4096);
    expect(sandboxLimits({ cpus: 64, freeBytes: 100 * GIB }, {}).nproc).toBe(8192);
    expect(sandboxLimits({ cpus: 256, freeBytes: 100 * GIB }, {}).nproc).toBe(8192);
  });

  it("sizes a file's cap from the free space, half of it, 256 MiB to 16 GiB", () => {
    expect(sandboxLimits({ cpus: 2, freeBytes: 10 * GIB }, {}).fsize).toBe(5 * GIB);
    expect(sandboxLimits({ cpus: 2, freeBytes: 100 * GIB }, {}).fsize).toBe(16 * GIB);
    expect(sandboxLimits({ cpus: 2, freeBytes: 100 * MIB }, {}).fsize).toBe(256 * MIB);
    expect(sandboxLimits({ cpus: 2, freeBytes: undefined }, {}).fsize).toBe(16 * GIB);
  });

  it("lets the settings win, and refuses one that is not a number", () => {
    const env = { EVOKERNEL_SANDBOX_NPROC: "100", EVOKERNEL_SANDBOX_FSIZE: "1048576" };
    expect(sandboxLimits({ cpus: 64, freeBytes: 100 * GIB }, env)).toEqual({
      nproc: 100,
      fsize: 1048576,
    });
    expect(() =>
      sandboxLimits({ cpus: 2, freeBytes: GIB }, { EVOKERNEL_SANDBOX_FSIZE: "16G" }),
    ).toThrow("EVOKERNEL_SANDBOX_FSIZE=16G is not a whole number above 0");
  });
});
