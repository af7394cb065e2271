// The real Evaluator on stand-in harness calls: the cascade's order (quick check before the
// full one, timing beside the baseline without torch.compile), the stage that ends a
// failing candidate, fitness, and the final checks (held-out, torch.compile on).
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBuildPool } from "../../runner/src/build/pool.js";
import type { HarnessCalls } from "../../runner/src/evaluate.js";
import { createHarnessEvaluator } from "../../runner/src/evolve/evaluator.js";
import {
  benchRecord,
  buildRecord,
  rejectedVerifyRecord,
  staticRecord,
  verifyRecord,
} from "../helpers/records.js";

type Calls = { log: string[]; harness: HarnessCalls };

/** A timing with the baseline beside the candidate on every configuration. */
function timed() {
  const record = benchRecord();
  return {
    ...record,
    configs: record.configs.map((config) => ({
      ...config,
      baseline: config.baseline ?? { ...config.eager, medianMs: 0.05, p20Ms: 0.049, p80Ms: 0.051 },
    })),
  };
}

function harness(fail: { quick?: boolean; verify?: boolean; bench?: boolean } = {}): Calls {
  const log: string[] = [];
  return {
    log,
    harness: {
      staticCheck: async (candidate) => {
        log.push("static");
        const source = await readFile(candidate, "utf8");
        return source.includes("std::thread")
          ? staticRecord({
              ok: false,
              findings: [
                {
                  code: "background-thread",
                  hack: 4,
                  line: 1,
                  text: "std::thread",
                  message: "starts a thread",
                  severity: "reject",
                },
              ],
            })
          : staticRecord();
      },
      verify: async (_task, _candidate, options) => {
        const step = options?.quick ? "quick" : options?.heldout ? "verify-heldout" : "verify";
        log.push(step);
        const failing = step === "quick" ? fail.quick : fail.verify;
        return Promise.resolve(failing ? rejectedVerifyRecord() : verifyRecord());
      },
      bench: async (_task, options) => {
        log.push(
          `bench compile=${options?.compile} baseline=${options?.baseline?.split("/").pop()}`,
        );
        return Promise.resolve(
          fail.bench
            ? benchRecord({ ok: false, reason: "below-floor", message: "under the floor" })
            : timed(),
        );
      },
    },
  };
}

describe("the harness evaluator", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "evokernel-evaluator-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function evaluatorWith(calls: Calls, builds: { fail?: boolean } = {}) {
    const pool = createBuildPool({
      build: async () =>
        Promise.resolve(
          builds.fail
            ? buildRecord({ ok: false, artifact: null, log: "error: x undeclared" })
            : buildRecord(),
        ),
    });
    return createHarnessEvaluator({
      task: "/repo/kernels/softmax",
      baseline: "/repo/kernels/softmax/kernel.cu",
      workDir: dir,
      pool,
      harness: calls.harness,
    });
  }

  it("runs static → build → quick → verify → time, and scores by the geometric mean", async () => {
    const calls = harness();
    const evaluation = await evaluatorWith(calls).evaluate({
      source: "__global__ void k() {}",
      defines: {},
      flags: [],
    });
    expect(calls.log).toEqual([
      "static",
      "quick",
      "verify",
      "bench compile=false baseline=kernel.cu",
    ]);
    expect(evaluation.ok).toBe(true);
    expect(evaluation.stage).toBe("done");
    const configs = timed().configs;
    const ratios = configs.map((c) => (c.baseline?.medianMs ?? 0) / (c.candidate?.medianMs ?? 1));
    const geomean = Math.exp(ratios.reduce((sum, r) => sum + Math.log(r), 0) / ratios.length);
    expect(evaluation.fitness).toBeCloseTo(geomean, 10);
    expect(evaluation.timings).toHaveLength(configs.length);
    expect(evaluation.timePhases).toMatchObject({ load: 0.8, timing: 1.6, profiler: 0.9 });
    // and the verification children's, the quick one and the full one
    expect(evaluation.verifyPhases?.quick).toMatchObject({ load: 0.8, candidate: 0.9 });
    expect(evaluation.verifyPhases?.full).toMatchObject({ reference: 0.4, profiler: 0.2 });
    // the harness's profile, as the next proposal reads it
    expect(evaluation.profile?.split("\n")).toEqual([
      "GPU kernels of one call on 4096x8192, longest first:",
      "    118.4 µs  98 %  ×1  softmax_kernel(float const*, float*, int, int)",
      "      2.1 µs   2 %  ×1  void at::native::vectorized_elementwise_kernel<4>",
    ]);
  });

  it("a configuration timed without the baseline beside it gives no fitness", async () => {
    const calls = harness();
    calls.harness.bench = async () => Promise.resolve(benchRecord());
    const evaluation = await evaluatorWith(calls).evaluate({ source: "k", defines: {}, flags: [] });
    expect(evaluation).toMatchObject({ ok: false, stage: "time", reason: "not-timed" });
  });

  it.each([
    ["static", {}, {}, "__global__ void k() { std::thread t; }", ["static"]],
    ["compile", {}, { fail: true }, "k", ["static"]],
    ["quick", { quick: true }, {}, "k", ["static", "quick"]],
    ["verify", { verify: true }, {}, "k", ["static", "quick", "verify"]],
    [
      "time",
      { bench: true },
      {},
      "k",
      ["static", "quick", "verify", "bench compile=false baseline=kernel.cu"],
    ],
  ] as const)(
    "a failure at %s ends the cascade there",
    async (stage, fail, builds, source, log) => {
      const calls = harness(fail);
      const evaluation = await evaluatorWith(calls, builds).evaluate({
        source: source,
        defines: {},
        flags: [],
      });
      expect(evaluation).toMatchObject({ ok: false, stage, fitness: null });
      expect(calls.log).toEqual(log);
      // the phases of the children that ran, and only theirs
      const ran: readonly string[] = log;
      expect(evaluation.verifyPhases?.quick !== undefined).toBe(ran.includes("quick"));
      expect(evaluation.verifyPhases?.full !== undefined).toBe(ran.includes("verify"));
    },
  );

  it("final checks: verification with held-out configurations, timing with torch.compile", async () => {
    const calls = harness();
    const evaluator = evaluatorWith(calls);
    const verified = await evaluator.verify({ source: "k", defines: {}, flags: [] });
    expect(verified.ok).toBe(true);
    expect(verified.configs.some((config) => config.heldout)).toBe(true);
    const timed = await evaluator.time({ source: "k", defines: {}, flags: [] });
    expect(timed.configs[0]?.candidate).not.toBeNull();
    const alone = await evaluator.time(null);
    expect(alone.ok).toBe(true);
    expect(calls.log).toEqual([
      "static",
      "verify-heldout",
      "bench compile=true baseline=kernel.cu",
      "bench compile=true baseline=kernel.cu",
    ]);
  });
});
