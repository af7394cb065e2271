// The real Evaluator on stand-in harness calls: the cascade's order (quick check before the
// full one, timing beside the baseline without torch.compile), the stage that ends a
// failing candidate, fitness, and the final checks (held-out, torch.compile on); the
// cascade is the harness's, in one child per candidate (`evaluate`).
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBuildPool } from "../../../runner/src/build/pool.js";
import type { CascadeEvent, HarnessCalls } from "../../../runner/src/cascade.js";
import { createHarnessEvaluator } from "../../../runner/src/evolve/harness-evaluator.js";
import type { Evaluation } from "../../../runner/src/evolve/types.js";
import * as client from "../../../runner/src/harness/client.js";
import { childEnv, startLineProcess } from "../../../runner/src/harness/exec.js";
import {
  benchRecord,
  buildRecord,
  rejectedVerifyRecord,
  staticRecord,
  verifyRecord,
} from "../../helpers/records.js";
import { evaluateFrom } from "../../helpers/evaluate-standin.js";

type Calls = { log: string[]; harness: HarnessCalls };

/** A timing with the baseline beside the candidate on every configuration (and torch.compile
 * where it was asked for). */
function timed(compile = false) {
  const record = benchRecord();
  return {
    ...record,
    configs: record.configs.map((config) => ({
      ...config,
      compile: compile
        ? { medianMs: 0.04, p20Ms: 0.039, p80Ms: 0.041, minMs: 0.038, meanMs: 0.04, n: 40 }
        : null,
      baseline: config.baseline ?? {
        medianMs: 0.05,
        p20Ms: 0.049,
        p80Ms: 0.051,
        minMs: 0.048,
        meanMs: 0.05,
        n: 40,
      },
    })),
  };
}

/** The reference timed alone (bench --warm-compile): eager and torch.compile, no baseline. */
function reference() {
  const record = timed(true);
  return {
    ...record,
    configs: record.configs.map((config) => ({ ...config, baseline: null, candidate: null })),
  };
}

function harness(fail: { quick?: boolean; verify?: boolean; bench?: boolean } = {}): Calls {
  const log: string[] = [];
  const calls: Calls = {
    log,
    harness: {
      evaluate: () => Promise.reject(new Error("replaced below")),
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
          options?.warmCompile === true
            ? "bench warm-compile"
            : `bench compile=${options?.compile} baseline=${options?.baseline?.split("/").pop()}`,
        );
        return Promise.resolve(
          fail.bench
            ? benchRecord({ ok: false, reason: "below-floor", message: "under the floor" })
            : options?.warmCompile === true
              ? reference()
              : timed(options?.compile === true),
        );
      },
    },
  };
  // one child: the same stand-ins (as a test replaces them), in the order `evaluate` runs them
  calls.harness.evaluate = evaluateFrom(calls.harness);
  return calls;
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
    // each configuration's floor goes with its timing: what the next candidates race against
    expect(evaluation.timings.map((t) => t.floorMs)).toEqual(configs.map((c) => c.floorMs));
    expect(evaluation.timings.every((t) => (t.floorMs ?? 0) > 0)).toBe(true);
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
    // torch.compile is timed once a run: the later timing carries the first one's figures
    expect(alone.configs.map((c) => c.compile)).toEqual(timed.configs.map((c) => c.compile));
    expect(alone.configs.every((c) => c.compile !== null)).toBe(true);
    expect(calls.log).toEqual([
      "static",
      "verify-heldout",
      "bench compile=true baseline=kernel.cu",
      "bench compile=false baseline=kernel.cu",
    ]);
  });

  it("takes torch.compile's times from the reference timed beside the search: no final timing warms it up", async () => {
    const calls = harness();
    const evaluator = evaluatorWith(calls);
    evaluator.timeReference();
    const timed = await evaluator.time({ source: "k", defines: {}, flags: [] });
    expect(timed.configs.every((c) => c.compile?.medianMs === 0.04)).toBe(true);
    expect(calls.log).toEqual(["bench warm-compile", "bench compile=false baseline=kernel.cu"]);
  });

  it("no final timing starts before the reference's timing has ended, and says it would wait", async () => {
    const calls = harness();
    const stand = calls.harness.bench;
    let finish: () => void = () => undefined;
    calls.harness.bench = (task, options) =>
      options?.warmCompile === true
        ? new Promise((resolve) => {
            finish = () => resolve(stand(task, options));
          })
        : stand(task, options);
    const evaluator = evaluatorWith(calls);
    expect(evaluator.timingWaits?.()).toBe(false); // no reference timed: nothing to wait for
    evaluator.timeReference();
    expect(evaluator.timingWaits?.()).toBe(true);
    let timedYet = false;
    const timing = evaluator.time({ source: "k", defines: {}, flags: [] }).then((t) => {
      timedYet = true;
      return t;
    });
    // torch.compile's first calls run GPU work outside the GPU's lock: not beside a final timing
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(timedYet).toBe(false);
    expect(calls.log).toEqual([]);
    finish();
    expect((await timing).configs.every((c) => c.compile?.medianMs === 0.04)).toBe(true);
    expect(evaluator.timingWaits?.()).toBe(false);
    expect(calls.log).toEqual(["bench warm-compile", "bench compile=false baseline=kernel.cu"]);
  });

  it("times torch.compile in the first final timing when the reference's timing had none", async () => {
    const calls = harness();
    const failing = calls.harness.bench;
    calls.harness.bench = async (task, options) =>
      options?.warmCompile === true
        ? benchRecord({ ok: false, reason: "no-gpu", message: "no GPU" })
        : failing(task, options);
    const evaluator = evaluatorWith(calls);
    evaluator.timeReference();
    const timed = await evaluator.time({ source: "k", defines: {}, flags: [] });
    expect(timed.configs.every((c) => c.compile !== null)).toBe(true);
    expect(calls.log).toEqual(["bench compile=true baseline=kernel.cu"]);
  });

  it("times torch.compile again while no final timing has had it", async () => {
    const calls = harness({ bench: true });
    const evaluator = evaluatorWith(calls);
    const failed = await evaluator.time({ source: "k", defines: {}, flags: [] });
    expect(failed.ok).toBe(false);
    await evaluator.time(null);
    expect(calls.log).toEqual([
      "bench compile=true baseline=kernel.cu",
      "bench compile=true baseline=kernel.cu",
    ]);
  });
});

describe("the harness's cascade in one child, on the stand-in harness", () => {
  const fakeHarness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));
  let dir: string;
  let server: client.ForkServer;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "evokernel-one-child-"));
    server = new client.ForkServer({
      start: async (onLine) => {
        await Promise.resolve();
        // started as the runner starts the harness (python -I -c LAUNCH serve)
        const launch = "import sys; import evokernel_harness.__main__";
        const argv = [fakeHarness, "-I", "-c", launch, "serve"];
        return startLineProcess(process.execPath, argv, { env: childEnv(), onLine });
      },
    });
  });
  afterEach(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const sources = {
    fast: "#define BLOCK_SIZE 512\n__global__ void softmax_fast(float* x) {}\n",
    slow: "// speed=1.25\n__global__ void softmax_slow(float* x) {}\n",
    rejected: "// fake-harness: verify=distribution-specific\n__global__ void k() {}\n",
    static: "// fake-harness: static=torch-fallback\n__global__ void k() {}\n",
    broken: "// fake-harness: compile-error\n__global__ void k() {}\n",
    crashQuick: "// fake-harness: crash-in=quick\n__global__ void k() {}\n",
    crashVerify: "// fake-harness: crash-in=verify\n__global__ void k() {}\n",
    crashBench: "// fake-harness: crash-in=bench\n__global__ void k() {}\n",
  };

  async function evaluateAll() {
    const cache = join(dir, "cache");
    await mkdir(cache, { recursive: true });
    const commands: string[] = [];
    const runner: client.HarnessRunner = (request, timeoutMs) => {
      commands.push(request.command);
      return server.run(request, timeoutMs);
    };
    // the evaluator takes the server for its `run`
    const logged = { run: runner } as unknown as client.ForkServer;
    const events: string[] = [];
    const evaluator = createHarnessEvaluator({
      task: "/repo/kernels/softmax",
      baseline: join(dir, "kernel.cu"),
      workDir: join(dir, "work"), // one file per source, for both
      server: logged,
      pool: createBuildPool({
        build: (candidate, defines, flags) =>
          client.build(candidate, {
            runner,
            cache,
            ...(defines === undefined ? {} : { defines }),
            ...(flags === undefined ? {} : { flags }),
          }),
      }),
      harness: {
        staticCheck: (candidate, options) => client.staticCheck(candidate, { ...options, runner }),
      },
      onEvent: (event: CascadeEvent) =>
        events.push(
          `${event.type} ${event.step}${event.type === "done" ? ` ${event.ok} ${event.detail}` : ""}`,
        ),
    });
    const evaluations: Record<string, Evaluation> = {};
    for (const [name, source] of Object.entries(sources)) {
      const evaluation = await evaluator.evaluate({ source, defines: {}, flags: [] });
      // wall times differ from run to run; the build's own does not
      const seconds = { compile: evaluation.seconds.compile, verify: 0, time: 0 };
      evaluations[name] = { ...evaluation, seconds };
    }
    return { evaluations, events, commands: [...new Set(commands)].sort() };
  }

  it("gives each candidate's evaluation and events, stopping where the harness stopped", async () => {
    await writeFile(join(dir, "kernel.cu"), "__global__ void softmax_kernel(float* x) {}\n");
    const one = await evaluateAll();
    // the task's static context in a child of the fork server (torch imported there already)
    expect(one.commands).toEqual(["build", "evaluate", "static", "static-context"]);
    const gpu = (line: string) => /^(start|done) (quick|verify|bench)/.test(line);
    // fast, slow: the three stages; rejected: the quick check only; static, broken: none;
    // crashQuick: quick; crashVerify: quick, verify; crashBench: all three
    expect(one.events.filter(gpu).map((line) => line.split(" ").slice(0, 3).join(" "))).toEqual([
      ...Array.from({ length: 2 }, () => [
        ...["start quick", "done quick true", "start verify", "done verify true"],
        ...["start bench", "done bench true"],
      ]).flat(),
      ...["start quick", "done quick false"],
      ...["start quick", "done quick false"],
      ...["start quick", "done quick true", "start verify", "done verify false"],
      ...["start quick", "done quick true", "start verify", "done verify true"],
      ...["start bench", "done bench false"],
    ]);
    expect(one.evaluations["fast"]).toMatchObject({ ok: true, stage: "done" });
    expect(one.evaluations["fast"]?.fitness).toBeCloseTo(1 / 0.7, 6);
    expect(one.evaluations["slow"]?.fitness).toBeCloseTo(1 / 1.25, 6);
    expect(one.evaluations["rejected"]).toMatchObject({
      stage: "quick",
      reason: "distribution-specific",
    });
    expect(one.evaluations["static"]).toMatchObject({ stage: "static" });
    expect(one.evaluations["broken"]).toMatchObject({ stage: "compile" });
    expect(one.evaluations["crashQuick"]).toMatchObject({ stage: "quick", reason: "crash" });
    expect(one.evaluations["crashVerify"]).toMatchObject({ stage: "verify", reason: "crash" });
    expect(one.evaluations["crashBench"]).toMatchObject({ stage: "time", reason: "crash" });
    expect(one.evaluations["crashBench"]?.message).toContain("killed by SIGSEGV");
  });
});
