// The contracts the app and the runner share: the config file and its error messages, the
// job spec through workflow_dispatch and back, globs and which tasks a change touches.
import { describe, expect, it } from "vitest";
import { selectChangedTasks } from "../../src/shared/changed-tasks.js";
import { DEFAULT_CONFIG, parseConfig } from "../../src/shared/config.js";
import { isUnder, matchesGlob } from "../../src/shared/glob.js";
import {
  decodeJobInputs,
  encodeJobInputs,
  MAX_INPUTS_CHARS,
  type JobSpec,
} from "../../src/shared/job.js";
import { compareSpreads, isRegression, summarizeSpeedup } from "../../src/shared/speedup.js";

describe("parseConfig", () => {
  it("an empty file is every default", () => {
    expect(parseConfig(null)).toEqual({ ok: true, config: DEFAULT_CONFIG });
    expect(DEFAULT_CONFIG).toMatchObject({
      tasks: ["kernels"],
      pullRequests: "bench",
      budget: { candidates: 30, minutes: 15, usd: 5 },
      proposer: "auto",
      regressionThreshold: 3,
      runner: ["self-hosted", "gpu"],
      dispatch: "actions",
      workflow: "evokernel.yml",
    });
  });

  it("reads every option, a single runner label as a list", () => {
    const parsed = parseConfig({
      tasks: ["ops/*"],
      paths: ["csrc/**/*.cuh"],
      pullRequests: "optimize",
      budget: { candidates: 10 },
      proposer: "tuner",
      model: "claude-sonnet-4-5",
      regressionThreshold: 5,
      runner: "gpu-h100",
      dispatch: "local",
      workflow: "kernels.yml",
      nightly: { schedule: "30 2 * * 1-5", budget: { minutes: 60 } },
    });
    // toMatchObject: options added later (with their defaults) do not break this test.
    expect(parsed).toMatchObject({
      ok: true,
      config: {
        tasks: ["ops/*"],
        paths: ["csrc/**/*.cuh"],
        pullRequests: "optimize",
        budget: { candidates: 10, minutes: 15, usd: 5 },
        proposer: "tuner",
        model: "claude-sonnet-4-5",
        regressionThreshold: 5,
        runner: ["gpu-h100"],
        dispatch: "local",
        workflow: "kernels.yml",
        nightly: {
          schedule: "30 2 * * 1-5",
          tasks: "all",
          budget: { candidates: 30, minutes: 60, usd: 5 },
        },
      },
    });
  });

  it("names the key and what to write instead", () => {
    const parsed = parseConfig({
      pullRequest: "bench",
      pullRequests: "fast",
      budget: { minutes: "ten", candidate: 3 },
      runner: 7,
      regressionThreshold: -1,
      nightly: { schedule: "daily" },
      tasks: [],
    });
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.errors).toMatchSnapshot();
  });

  it("a file that is no mapping", () => {
    const parsed = parseConfig("pullRequests bench");
    expect(parsed.ok ? [] : parsed.errors).toEqual([
      "the file: invalid input: expected object, received string; write a mapping of options, e.g. `pullRequests: bench`",
    ]);
  });
});

const SHA = "a".repeat(40);
const spec: JobSpec = {
  schema: 1,
  id: "review-42-aaaaaaa-1",
  kind: "review",
  repo: { owner: "acme", name: "kernels" },
  sha: SHA,
  baseSha: "b".repeat(40),
  pr: 42,
  tasks: ["kernels/softmax", "kernels/linear_relu#backward"],
  optimize: true,
  budget: { candidates: 10, minutes: 5, usd: 1 },
  proposer: "tuner",
  regressionThreshold: 3,
  requestedBy: "octocat",
};

describe("job spec through workflow_dispatch", () => {
  it("round-trips through one `spec` input", () => {
    const inputs = encodeJobInputs(spec);
    expect(Object.keys(inputs)).toEqual(["spec"]);
    expect(decodeJobInputs(inputs)).toEqual({ ok: true, spec });
    expect(decodeJobInputs(inputs.spec)).toEqual({ ok: true, spec });
  });

  it("refuses what it cannot trust, saying where", () => {
    const bad = { ...spec, sha: "HEAD", tasks: ["../etc/passwd"], extra: 1 };
    const decoded = decodeJobInputs({ spec: JSON.stringify(bad) });
    expect(decoded.ok).toBe(false);
    expect(decoded.ok ? [] : decoded.errors).toMatchSnapshot();
    expect(decodeJobInputs({ spec: "{not json" })).toMatchObject({ ok: false });
    expect(decodeJobInputs({})).toMatchObject({ ok: false });
  });

  it("refuses a spec over workflow_dispatch's limit", () => {
    const tasks = Array.from({ length: 5000 }, (_, index) => `kernels/task_${index}`);
    expect(() => encodeJobInputs({ ...spec, tasks })).toThrow(/split it into several/);
    expect(decodeJobInputs({ spec: "x".repeat(MAX_INPUTS_CHARS + 1) })).toMatchObject({
      ok: false,
    });
  });
});

describe("globs and changed tasks", () => {
  it("matches the patterns people write", () => {
    expect(matchesGlob("kernels/softmax/kernel.cu", "kernels/**/*.cu")).toBe(true);
    expect(matchesGlob("kernels/kernel.cu", "kernels/**/*.cu")).toBe(true);
    expect(matchesGlob("kernels/softmax/kernel.cu", "kernels/*.cu")).toBe(false);
    expect(matchesGlob("csrc/a.cuh", "csrc/*.{cu,cuh}")).toBe(true);
    expect(isUnder("kernels/softmax/kernel.cu", "kernels")).toBe(true);
    expect(isUnder("kernels/softmax/kernel.cu", "./kernels/")).toBe(true);
    expect(isUnder("ops/gemm/kernel.cu", "ops/*")).toBe(true);
    expect(isUnder("kernelsx/a.cu", "kernels")).toBe(false);
  });

  it("a file in a task's folder touches that task; new and removed tasks too", () => {
    const touched = selectChangedTasks({
      changed: [
        "kernels/softmax/kernel.cu",
        "kernels/gelu/task.json",
        "kernels/relu/kernel.cu",
        "README.md",
      ],
      baseTasks: [
        { path: "kernels/softmax" },
        { path: "kernels/relu" },
        { path: "kernels/rmsnorm" },
      ],
      headTasks: [
        { path: "kernels/softmax" },
        { path: "kernels/gelu" },
        { path: "kernels/rmsnorm" },
      ],
    });
    expect(touched).toEqual([
      { path: "kernels/gelu", inBase: false, inHead: true },
      { path: "kernels/relu", inBase: true, inHead: false },
      { path: "kernels/softmax", inBase: true, inHead: true },
    ]);
  });

  it("with paths, only matching files count, and a shared one touches every task", () => {
    const tasks = [{ path: "kernels/softmax" }, { path: "kernels/lin#backward" }];
    const only = (changed: string[]) =>
      selectChangedTasks({
        changed,
        baseTasks: tasks,
        headTasks: tasks,
        paths: ["**/*.cu", "csrc/**"],
      }).map((task) => task.path);
    expect(only(["kernels/softmax/README.md"])).toEqual([]);
    expect(only(["kernels/lin/kernel.cu"])).toEqual(["kernels/lin#backward"]);
    expect(only(["csrc/common.cuh"])).toEqual(["kernels/lin#backward", "kernels/softmax"]);
  });
});

describe("the noise rule", () => {
  const spread = (median: number, low: number, high: number) => ({
    medianMs: median,
    p20Ms: low,
    p80Ms: high,
  });

  it("slower only beyond the noise and the threshold", () => {
    const base = spread(1, 0.98, 1.02);
    expect(compareSpreads(base, spread(1.05, 1.04, 1.06), 3)).toBe("same");
    expect(compareSpreads(base, spread(1.1, 1.06, 1.12), 3)).toBe("slower");
    expect(compareSpreads(base, spread(0.9, 0.89, 0.97), 3)).toBe("faster");
  });

  it("launch-bound configurations do not count", () => {
    const configs = [
      { base: spread(1, 0.98, 1.02), head: spread(0.5, 0.49, 0.51), launchBound: false },
      {
        base: spread(0.004, 0.0039, 0.0041),
        head: spread(0.008, 0.0079, 0.0081),
        launchBound: true,
      },
    ];
    expect(isRegression(configs, 3)).toBe(false);
    expect(summarizeSpeedup(configs)?.configs).toBe(1);
    expect(summarizeSpeedup(configs)?.median).toBeCloseTo(2);
  });
});
