// The local backend's GPUs per job (EVOKERNEL_GPUS_PER_JOB, src/app/dispatch/local.ts): one
// GPU each to several jobs, or several GPUs to one job's search, as CUDA_VISIBLE_DEVICES.
import { describe, expect, it } from "vitest";
import { gpuGroups } from "../../../src/app/dispatch/local.js";
import { appSettings } from "../../../src/app/settings.js";

describe("gpuGroups", () => {
  it("gives each job one GPU by default, or groups of several", () => {
    expect(gpuGroups(4, 1)).toEqual(["0", "1", "2", "3"]);
    expect(gpuGroups(4, 2)).toEqual(["0,1", "2,3"]);
    expect(gpuGroups(8, 8)).toEqual(["0,1,2,3,4,5,6,7"]);
    // a GPU past the last whole group stays idle
    expect(gpuGroups(5, 2)).toEqual(["0,1", "2,3"]);
  });

  it("refuses more GPUs a job than the machine has, naming both settings", () => {
    expect(() => gpuGroups(2, 4)).toThrow(
      "EVOKERNEL_GPUS_PER_JOB is a whole number from 1 to EVOKERNEL_GPUS (2), not 4",
    );
    expect(() => gpuGroups(2, 1.5)).toThrow("EVOKERNEL_GPUS_PER_JOB is a whole number");
  });

  it("reads EVOKERNEL_GPUS_PER_JOB beside EVOKERNEL_GPUS", () => {
    const env = { EVOKERNEL_LOCAL_REPO: "/srv/kernels", EVOKERNEL_GPUS: "4" };
    expect(appSettings(env).local).toMatchObject({ gpus: 4, gpusPerJob: 1 });
    expect(appSettings({ ...env, EVOKERNEL_GPUS_PER_JOB: "2" }).local).toMatchObject({
      gpus: 4,
      gpusPerJob: 2,
    });
  });
});
