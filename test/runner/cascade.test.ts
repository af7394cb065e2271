// The cascade with stand-in harness calls: which steps run for which outcome, builds
// overlapping GPU work, verification one at a time, and the verdict each path gives.
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { createBuildPool } from "../../runner/src/build/pool.js";
import { runCascade, type CascadeEvent, type HarnessCalls } from "../../runner/src/cascade.js";
import { evaluate as evaluateInOneChild } from "../../runner/src/harness/client.js";
import type { HarnessRunner } from "../../runner/src/harness/outcome.js";
import type { BuildRecord } from "../../src/shared/contract/records.js";
import { evaluateFrom } from "../helpers/evaluate-standin.js";
import {
  benchRecord,
  buildRecord,
  rejectedVerifyRecord,
  staticRecord,
  verifyRecord,
} from "../helpers/records.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 10));

function harness(overrides: Partial<HarnessCalls> = {}) {
  const log: string[] = [];
  const gpu = { running: 0, most: 0 };
  const calls: HarnessCalls = {
    staticCheck: async (candidate) => {
      log.push(`static ${candidate}`);
      await tick();
      return staticRecord();
    },
    verify: async (_task, candidate, options) => {
      gpu.running += 1;
      gpu.most = Math.max(gpu.most, gpu.running);
      log.push(`verify ${candidate} ${options?.artifact ?? "-"}`);
      await tick();
      gpu.running -= 1;
      return verifyRecord({ candidate });
    },
    bench: async (_task, options) => {
      log.push(`bench ${options?.candidate ?? "-"} baseline=${options?.baseline ?? "-"}`);
      await tick();
      return benchRecord();
    },
    evaluate: async () => Promise.reject(new Error("replaced below")),
    ...overrides,
  };
  calls.evaluate = overrides.evaluate ?? evaluateFrom(calls, log);
  return { calls, log, gpu };
}

function pool(records: Record<string, Partial<BuildRecord>> = {}) {
  const built: string[] = [];
  return {
    built,
    pool: createBuildPool({
      concurrency: 4,
      build: async (candidate) => {
        built.push(candidate);
        await tick();
        return buildRecord({ artifact: `${candidate}.so`, ...records[candidate] });
      },
    }),
  };
}

describe("runCascade", () => {
  it("runs static → build → verify for each candidate, verifying one at a time", async () => {
    const { calls, log, gpu } = harness();
    const { pool: builds } = pool();
    const events: CascadeEvent[] = [];
    const results = await runCascade("/t/softmax", ["a.cu", "b.cu", "c.cu"], {
      harness: calls,
      pool: builds,
      onEvent: (event) => events.push(event),
    });
    expect(results.map((result) => [result.candidate, result.status, result.ok])).toEqual([
      ["a.cu", "passed", true],
      ["b.cu", "passed", true],
      ["c.cu", "passed", true],
    ]);
    expect(log).toContain("verify a.cu a.cu.so");
    expect(gpu.most).toBe(1);
    expect(results[0]?.seconds.compile).toBe(1.2);
    expect(results[0]?.seconds.total).toBeGreaterThan(0);
    const forA = events
      .filter((event) => event.candidate === "a.cu")
      .map((event) => `${event.type} ${event.step}`);
    expect(forA).toEqual([
      "start static",
      "done static",
      "start build",
      "done build",
      "start verify",
      "done verify",
    ]);
  });

  it("stops at a static rejection, with its code as the reason", async () => {
    const finding = {
      code: "torch-fallback",
      hack: 12,
      line: 9,
      text: "except:",
      message: "try/except around the kernel",
      severity: "reject" as const,
    };
    const note = { ...finding, code: "long-line", hack: null, severity: "warn" as const };
    const { calls, log } = harness({
      staticCheck: () => Promise.resolve(staticRecord({ ok: false, findings: [note, finding] })),
    });
    const { pool: builds, built } = pool();
    const [result] = await runCascade("/t", ["bad.py"], { harness: calls, pool: builds });
    expect(result).toMatchObject({
      ok: false,
      status: "rejected",
      reason: "torch-fallback",
      build: null,
      verify: null,
    });
    expect(result?.message).toBe("try/except around the kernel (line 9)");
    expect(built).toEqual([]);
    expect(log.some((line) => line.startsWith("verify"))).toBe(false);
  });

  it("reports a static check that never finished as that failure, not a rejection", async () => {
    const { calls } = harness({
      staticCheck: () =>
        Promise.resolve(
          staticRecord({
            ok: false,
            findings: [
              {
                code: "harness-timeout",
                hack: null,
                line: 0,
                text: "",
                message: "timed out",
                severity: "reject",
              },
            ],
          }),
        ),
    });
    const [result] = await runCascade("/t", ["slow.py"], {
      harness: calls,
      pool: pool().pool,
    });
    expect(result).toMatchObject({ status: "timeout", reason: "timeout" });
  });

  it("stops at a failed build with the compiler's log", async () => {
    const { calls, log } = harness();
    const { pool: builds } = pool({
      "broken.cu": { ok: false, artifact: null, log: "error: expected ';'" },
    });
    const [result] = await runCascade("/t", ["broken.cu"], {
      harness: calls,
      pool: builds,
    });
    expect(result).toMatchObject({
      ok: false,
      status: "compile-error",
      message: "error: expected ';'",
    });
    expect(log.some((line) => line.startsWith("verify"))).toBe(false);
  });

  it("passes a rejection through with its reason", async () => {
    const { calls } = harness({ verify: () => Promise.resolve(rejectedVerifyRecord()) });
    const [result] = await runCascade("/t", ["copy.py"], {
      harness: calls,
      pool: pool().pool,
    });
    expect(result).toMatchObject({
      ok: false,
      status: "rejected",
      reason: "distribution-specific",
    });
  });

  it("stops after the static check when asked to (no GPU)", async () => {
    const { calls, log } = harness();
    const { pool: builds, built } = pool();
    const [result] = await runCascade("/t", ["a.cu"], {
      harness: calls,
      pool: builds,
      staticOnly: true,
    });
    expect(result).toMatchObject({ ok: false, reason: "no-gpu", build: null });
    expect(built).toEqual([]);
    expect(log).toEqual(["static a.cu"]);
  });

  it("times a verified candidate beside the built baseline", async () => {
    const { calls, log } = harness();
    const { pool: builds, built } = pool();
    const [result] = await runCascade("/t", ["a.cu"], {
      harness: calls,
      pool: builds,
      bench: { baseline: "/t/kernel.cu" },
    });
    expect(result?.ok).toBe(true);
    expect(result?.bench?.ok).toBe(true);
    expect(built).toContain("/t/kernel.cu");
    expect(log).toContain("bench a.cu baseline=/t/kernel.cu");
  });

  it("does not time a candidate that failed verification", async () => {
    const { calls, log } = harness({ verify: () => Promise.resolve(rejectedVerifyRecord()) });
    await runCascade("/t", ["a.cu"], { harness: calls, pool: pool().pool, bench: {} });
    expect(log.some((line) => line.startsWith("bench"))).toBe(false);
  });

  it("rejects a candidate that timing catches (under the roofline floor)", async () => {
    const { calls } = harness({
      bench: () =>
        Promise.resolve(
          benchRecord({ ok: false, reason: "below-floor", message: "faster than the floor" }),
        ),
    });
    const [result] = await runCascade("/t", ["a.cu"], {
      harness: calls,
      pool: pool().pool,
      bench: {},
    });
    expect(result).toMatchObject({ ok: false, status: "rejected", reason: "below-floor" });
  });
});

describe("the static check, once per candidate", () => {
  const warned = staticRecord({
    findings: [
      { code: "w", hack: null, line: 4, text: "x", message: "noted", severity: "warn" as const },
    ],
  });

  it("hands its record to each GPU step: verify, or the harness's cascade", async () => {
    for (const screen of [false, true]) {
      const checked: string[] = [];
      const given: unknown[] = [];
      const { calls } = harness({
        staticCheck: (candidate) => {
          checked.push(candidate);
          return Promise.resolve(warned);
        },
        verify: (_task, candidate, options) => {
          given.push(options?.static);
          return Promise.resolve(verifyRecord({ candidate }));
        },
      });
      const inOne = calls.evaluate;
      calls.evaluate = (task, candidate, options) => {
        given.push(options?.static);
        return inOne(task, candidate, options);
      };
      const steps = screen ? ({ quick: true, bench: {} } as const) : ({ bench: {} } as const);
      await runCascade("/t", ["a.cu"], { harness: calls, pool: pool().pool, ...steps });
      expect(checked).toEqual(["a.cu"]);
      // verify; or evaluate, then (its stand-in's) quick and full checks
      expect(given).toEqual(screen ? [warned, warned, warned] : [warned]);
    }
  });
});

describe("the search's screen (quick): the harness's cascade in one child", () => {
  const searching = { quick: true, bench: { baseline: "/t/kernel.cu", compile: false } } as const;
  const before = ["start static", "done static", "start build", "done build"];

  async function screen(overrides: Partial<HarnessCalls> = {}) {
    const { calls, log } = harness(overrides);
    const events: CascadeEvent[] = [];
    const [result] = await runCascade("/t", ["a.cu"], {
      harness: calls,
      pool: pool().pool,
      ...searching,
      onEvent: (event) => events.push(event),
    });
    return { result, log, steps: events.map((event) => `${event.type} ${event.step}`) };
  }

  it("asks for quick → verify → bench in one call, a start and a done event each", async () => {
    const one = await screen();
    expect(one.log.filter((line) => line.startsWith("evaluate"))).toEqual(["evaluate a.cu"]);
    const gpuSteps = ["quick", "verify", "bench"].flatMap((step) => [
      `start ${step}`,
      `done ${step}`,
    ]);
    expect(one.steps).toEqual([...before, ...gpuSteps]);
    expect(one.result).toMatchObject({ ok: true, status: "passed", reason: null });
    expect(one.result?.quick?.ok).toBe(true);
    expect(one.result?.verify?.ok).toBe(true);
    expect(one.result?.bench?.ok).toBe(true);
    expect(one.result?.seconds.compile).toBe(1.2);
    // the stages' own seconds add up to the GPU steps' time
    expect(one.result?.seconds.verify).toBeGreaterThan(0);
    expect(one.result?.seconds.time).toBeGreaterThan(0);
  });

  it("stops where the harness stopped: after a quick rejection, no full check, no timing", async () => {
    const one = await screen({
      verify: async (_task, candidate, options) =>
        Promise.resolve(options?.quick ? rejectedVerifyRecord() : verifyRecord({ candidate })),
    });
    expect(one.steps).toEqual([...before, "start quick", "done quick"]);
    expect(one.result).toMatchObject({
      ok: false,
      status: "rejected",
      reason: "distribution-specific",
      verify: null,
      bench: null,
    });
    expect(one.result?.quick?.ok).toBe(false);
  });

  it("stops after a full-check rejection, and after a timing rejection", async () => {
    const afterVerify = await screen({
      verify: async (_task, candidate, options) =>
        Promise.resolve(options?.quick ? verifyRecord({ candidate }) : rejectedVerifyRecord()),
    });
    expect(afterVerify.steps).toEqual([
      ...before,
      "start quick",
      "done quick",
      "start verify",
      "done verify",
    ]);
    expect(afterVerify.result).toMatchObject({
      ok: false,
      status: "rejected",
      reason: "distribution-specific",
      bench: null,
    });
    expect(afterVerify.result?.quick?.ok).toBe(true);
    const afterBench = await screen({
      bench: () => Promise.resolve(benchRecord({ ok: false, reason: "below-floor", message: "x" })),
    });
    expect(afterBench.result).toMatchObject({
      ok: false,
      status: "rejected",
      reason: "below-floor",
      message: "x",
    });
    expect(afterBench.result?.verify?.ok).toBe(true);
  });

  it("a child that crashes in the full check: a crash record for it, no timing", async () => {
    // the child writes the quick record, then dies by a signal
    const runner: HarnessRunner = async (request) => {
      if (request.command !== "evaluate") throw new Error(`not evaluate: ${request.command}`);
      writeFileSync(request.quickOut, JSON.stringify(verifyRecord()));
      await tick();
      return {
        exitCode: null,
        signal: "SIGSEGV",
        timedOut: false,
        memKilled: false,
        seconds: 1,
        log: "Fatal Python error: Segmentation fault",
      };
    };
    const { calls } = harness({
      evaluate: (task, candidate, options) =>
        evaluateInOneChild(task, candidate, { ...options, runner, pollMs: 1 }),
    });
    const events: CascadeEvent[] = [];
    const [result] = await runCascade("/t", ["a.cu"], {
      harness: calls,
      pool: pool().pool,
      ...searching,
      onEvent: (event) => events.push(event),
    });
    expect(events.slice(4).map((event) => `${event.type} ${event.step}`)).toEqual([
      "start quick",
      "done quick",
      "start verify",
      "done verify",
    ]);
    expect(result?.quick?.ok).toBe(true);
    expect(result).toMatchObject({ ok: false, status: "crash", reason: "crash", bench: null });
    expect(result?.verify?.message).toContain("killed by SIGSEGV");
    expect(result?.verify?.message).toContain("Segmentation fault");
  });
});
