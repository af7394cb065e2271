// The client turns every way a harness run can end into a record (candidate calls) or a
// HarnessError (task and machine calls); no outcome reads as a pass unless the record says so.
import { describe, expect, it } from "vitest";
import { HarnessError } from "../../../runner/src/errors.js";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../../../runner/src/paths.js";
import { checkTaskJson } from "../../../runner/src/workspace/native-task.js";
import {
  bench,
  build,
  device,
  evaluate,
  createStaticContexts,
  inspectTask,
  staticCheck,
  staticContext,
  verify,
} from "../../../runner/src/harness/client.js";
import type { HarnessOutcome, HarnessRunner } from "../../../runner/src/harness/outcome.js";
import {
  harnessCommandSchema,
  type HarnessCommand,
} from "../../../src/shared/contract/harness-request.js";
import { fakeRunner } from "../../helpers/fake-runner.js";
import {
  benchRecord,
  buildRecord,
  deviceRecord,
  h100,
  rejectedVerifyRecord,
  staticRecord,
  taskInfo,
  verifyRecord,
} from "../../helpers/records.js";

describe("verify", () => {
  it("returns the harness's record and passes the options in its typed request", async () => {
    const fake = fakeRunner(() => ({ record: verifyRecord() }));
    const record = await verify("/t/softmax", "/c/kernel.cu", {
      runner: fake.runner,
      artifact: "/cache/k.so",
      heldout: true,
      device: "cpu",
      seed: 7,
    });
    expect(record.status).toBe("passed");
    expect(fake.calls[0]).toEqual({
      command: "verify",
      task: "/t/softmax",
      candidate: "/c/kernel.cu",
      artifact: "/cache/k.so",
      heldout: true,
      device: "cpu",
      seed: 7,
      out: expect.stringMatching(/verify\.json$/) as unknown,
    });
  });

  it("carries the static check's record in its request, when given", async () => {
    const fake = fakeRunner(() => ({ record: verifyRecord() }));
    const checked = staticRecord({ format: "py" });
    await verify("/t/softmax", "/c/k.py", { runner: fake.runner, static: checked });
    await verify("/t/softmax", "/c/k.py", { runner: fake.runner });
    expect(harnessCommandSchema.parse(fake.calls[0])).toMatchObject({ static: checked });
    expect(fake.calls[1]).not.toHaveProperty("static");
  });

  it.each([
    ["a timeout", { outcome: { timedOut: true } }, "timeout"],
    ["a signal", { outcome: { exitCode: null, signal: "SIGSEGV" } }, "crash"],
    ["the memory limit", { outcome: { exitCode: null, memKilled: true } }, "crash"],
    ["a fork server that died", { outcome: { exitCode: null } }, "crash"],
    ["a harness failure", { outcome: { exitCode: 4, log: "Traceback…" } }, "error"],
    ["no record", {}, "error"],
    ["a record that is not JSON", { text: '{"ok": tru' }, "error"],
    [
      "a record that does not parse",
      { record: { ...verifyRecord(), configs: "all fine" } },
      "error",
    ],
    [
      "a record claiming ok while rejected",
      { record: { ...verifyRecord(), status: "rejected" } },
      "error",
    ],
  ] as const)("turns %s into a failed record", async (_name, answer, status) => {
    const fake = fakeRunner(() => answer);
    const record = await verify("/t/softmax", "/c/kernel.cu", {
      runner: fake.runner,
      knownDevice: h100,
    });
    expect(record.ok).toBe(false);
    expect(record.status).toBe(status);
    expect(record.device).toEqual(h100);
    expect(record.message).not.toBe("");
  });

  it("keeps the harness log in the failed record", async () => {
    const fake = fakeRunner(() => ({ outcome: { exitCode: 4, log: "Traceback: boom" } }));
    const record = await verify("/t/softmax", "/c/k.cu", { runner: fake.runner });
    expect(record.message).toContain("Traceback: boom");
  });
});

describe("static, build, bench", () => {
  it("static: a crash is a failed check coded harness-crash", async () => {
    const fake = fakeRunner(() => ({ outcome: { exitCode: null, signal: "SIGKILL" } }));
    const record = await staticCheck("/c/k.cu", {
      runner: fake.runner,
      task: "/t/softmax",
      relaxed: true,
    });
    expect(record.ok).toBe(false);
    expect(record.findings[0]?.code).toBe("harness-crash");
    expect(fake.calls[0]).toMatchObject({ command: "static", relaxed: true, task: "/t/softmax" });
  });

  it("static: with the task's context, the harness gets its ops and library rule, not the task", async () => {
    const fake = fakeRunner((request) =>
      request.command === "static-context"
        ? {
            record: {
              schema: 1,
              kind: "static-context",
              task: "softmax",
              referenceOps: ["softmax", "exp"],
              libraries: "deny",
            },
          }
        : { record: staticRecord() },
    );
    const contexts = createStaticContexts((task) => staticContext(task, { runner: fake.runner }));
    for (const candidate of ["/c/a.cu", "/c/b.cu"]) {
      const record = await staticCheck(candidate, {
        runner: fake.runner,
        task: "/t/softmax",
        contexts,
      });
      expect(record.ok).toBe(true);
    }
    // the context is asked once for the two candidates
    expect(fake.calls.map((request) => request.command)).toEqual([
      "static-context",
      "static",
      "static",
    ]);
    expect(fake.calls[1]).toEqual({
      command: "static",
      candidate: "/c/a.cu",
      referenceOps: ["softmax", "exp"],
      libraries: "deny",
      out: expect.any(String) as unknown,
    });
  });

  it("static: a task whose context cannot be had is checked with the task, as before", async () => {
    const fake = fakeRunner((request) =>
      request.command === "static-context"
        ? { outcome: { exitCode: 4 } }
        : { record: staticRecord() },
    );
    const contexts = createStaticContexts((task) => staticContext(task, { runner: fake.runner }));
    await staticCheck("/c/a.cu", { runner: fake.runner, task: "/t/broken", contexts });
    expect(fake.calls[1]).toMatchObject({ command: "static", task: "/t/broken" });
    expect(fake.calls[1]).not.toHaveProperty("referenceOps");
  });

  it("static: a malformed static-context record is no context", async () => {
    const fake = fakeRunner(() => ({
      record: { schema: 1, kind: "static-context", task: "t", referenceOps: [1], libraries: "x" },
    }));
    expect(await staticContext("/t/softmax", { runner: fake.runner })).toBeNull();
  });

  it("static: passes the record through", async () => {
    const fake = fakeRunner(() => ({ record: staticRecord() }));
    expect((await staticCheck("/c/k.cu", { runner: fake.runner })).ok).toBe(true);
  });

  it("build: passes defines and the cache, and fails closed", async () => {
    const fake = fakeRunner(() => ({ record: buildRecord() }));
    await build("/c/k.cu", {
      runner: fake.runner,
      cache: "/cache",
      defines: { BLOCK: 256, FAST: "1" },
      flags: ["-maxrregcount=64"],
    });
    expect(fake.calls[0]).toEqual({
      command: "build",
      candidate: "/c/k.cu",
      cache: "/cache",
      defines: ["BLOCK=256", "FAST=1"],
      nvccFlags: ["-maxrregcount=64"],
      out: expect.any(String) as unknown,
    });
    const broken = fakeRunner(() => ({ outcome: { timedOut: true } }));
    const record = await build("/c/k.cu", { runner: broken.runner, timeoutMs: 5_000 });
    expect(record.ok).toBe(false);
    expect(record.log).toContain("timed out after 5 s");
  });

  it("bench: names baseline and candidate, and fails closed", async () => {
    const fake = fakeRunner(() => ({ record: benchRecord() }));
    await bench("/t/softmax", {
      runner: fake.runner,
      candidate: "/c/k.cu",
      artifact: "/a/k.so",
      baseline: "/t/softmax/kernel.cu",
      baselineArtifact: "/a/b.so",
      compile: false,
      budgetS: 0.5,
    });
    expect(fake.calls[0]).toEqual({
      command: "bench",
      task: "/t/softmax",
      candidate: "/c/k.cu",
      artifact: "/a/k.so",
      baseline: "/t/softmax/kernel.cu",
      baselineArtifact: "/a/b.so",
      noCompile: true,
      budget: 0.5,
      ceilings: expect.stringMatching(/ceilings\.json$/) as unknown,
      out: expect.any(String) as unknown,
    });
    const broken = fakeRunner(() => ({ outcome: { exitCode: null, signal: "SIGSEGV" } }));
    const record = await bench("/t/softmax", { runner: broken.runner });
    expect(record).toMatchObject({ ok: false, reason: "crash", ceilings: null });
  });
});

describe("evaluate (quick, verify and bench in one child)", () => {
  const ended: HarnessOutcome = {
    exitCode: 0,
    signal: null,
    timedOut: false,
    memKilled: false,
    seconds: 1,
    log: "",
  };
  const pause = () => new Promise((resolve) => setTimeout(resolve, 30));

  /** A child that writes the given records, in order, a pause apart, then ends as told. */
  function child(texts: Partial<Record<"quick" | "verify" | "bench", string>>, end = ended) {
    const calls: { request: HarnessCommand; timeoutMs: number }[] = [];
    const runner: HarnessRunner = async (request, timeoutMs) => {
      calls.push({ request: harnessCommandSchema.parse(request), timeoutMs });
      if (request.command !== "evaluate") throw new Error(`not evaluate: ${request.command}`);
      for (const stage of ["quick", "verify", "bench"] as const) {
        const text = texts[stage];
        if (text === undefined) break;
        writeFileSync(request[`${stage}Out`], text);
        await pause();
      }
      return end;
    };
    return { runner, calls };
  }
  const passed = JSON.stringify(verifyRecord());

  it("passes verify's and bench's options, gives the sum of their limits, reports each record as it comes", async () => {
    const { runner, calls } = child({
      quick: passed,
      verify: passed,
      bench: JSON.stringify(benchRecord()),
    });
    const seen: string[] = [];
    const records = await evaluate("/t/softmax", "/c/k.cu", {
      runner,
      artifact: "/a/k.so",
      device: "cpu",
      seed: 7,
      baseline: "/t/softmax/kernel.cu",
      baselineArtifact: "/a/b.so",
      compile: false,
      budgetS: 0.5,
      race: { leader: { "8192x8192": 1.25 }, ceilings: { "8192x8192": 1.4 } },
      verifyTimeoutMs: 3_000,
      benchTimeoutMs: 5_000,
      pollMs: 5,
      onRecord: (stage, record) => seen.push(`${stage} ${record.kind} ${calls.length}`),
    });
    expect(records.quick?.ok).toBe(true);
    expect(records.verify?.ok).toBe(true);
    expect(records.bench?.ok).toBe(true);
    expect(seen).toEqual(["quick verify 1", "verify verify 1", "bench bench 1"]);
    expect(calls[0]?.request).toEqual({
      command: "evaluate",
      task: "/t/softmax",
      candidate: "/c/k.cu",
      artifact: "/a/k.so",
      device: "cpu",
      seed: 7,
      baseline: "/t/softmax/kernel.cu",
      baselineArtifact: "/a/b.so",
      noCompile: true,
      budget: 0.5,
      race: { "8192x8192": 1.25 },
      raceCeilings: { "8192x8192": 1.4 },
      ceilings: expect.stringMatching(/ceilings\.json$/) as unknown,
      quickOut: expect.stringMatching(/quick\.json$/) as unknown,
      verifyOut: expect.stringMatching(/verify\.json$/) as unknown,
      benchOut: expect.stringMatching(/bench\.json$/) as unknown,
    });
    expect(calls[0]?.timeoutMs).toBe(8_000);
  });

  it("carries the static check's record in its request, when given", async () => {
    const { runner, calls } = child({ quick: JSON.stringify(rejectedVerifyRecord()) });
    const checked = staticRecord();
    await evaluate("/t/softmax", "/c/k.cu", { runner, pollMs: 5, static: checked });
    expect(calls[0]?.request).toMatchObject({ command: "evaluate", static: checked });
  });

  it("says with each record the stage the harness runs next, none after one not ok", async () => {
    const { runner } = child({ quick: passed, verify: JSON.stringify(rejectedVerifyRecord()) });
    const seen: string[] = [];
    await evaluate("/t/softmax", "/c/k.cu", {
      runner,
      pollMs: 5,
      onRecord: (stage, record, next) => seen.push(`${stage} ${record.ok} → ${next ?? "end"}`),
    });
    expect(seen).toEqual(["quick true → verify", "verify false → end"]);
  });

  it("stops at a record that is not ok, whatever else is there", async () => {
    const { runner } = child({
      quick: JSON.stringify(rejectedVerifyRecord()),
      verify: passed,
    });
    const records = await evaluate("/t/softmax", "/c/k.cu", { runner, pollMs: 5 });
    expect(records.quick).toMatchObject({ ok: false, reason: "distribution-specific" });
    expect(records.verify).toBeNull();
    expect(records.bench).toBeNull();
  });

  it.each([
    ["a timeout in quick", {}, { timedOut: true }, "quick", "timeout"],
    [
      "a crash in verify",
      { quick: passed },
      { exitCode: null, signal: "SIGSEGV" },
      "verify",
      "crash",
    ],
    [
      "a harness failure in bench",
      { quick: passed, verify: passed },
      { exitCode: 4 },
      "bench",
      "error",
    ],
    [
      "a verify record that does not parse",
      { quick: passed, verify: '{"ok": tru' },
      {},
      "verify",
      "error",
    ],
    ["an exit with a record missing", { quick: passed }, {}, "verify", "error"],
  ] as const)(
    "turns %s into a failed record for that stage, null after it",
    async (_name, texts, end, stage, status) => {
      const { runner } = child(texts, { ...ended, log: "the log", ...end });
      const records = await evaluate("/t/softmax", "/c/k.cu", {
        runner,
        pollMs: 5,
        knownDevice: h100,
        verifyTimeoutMs: 1_000,
      });
      const stages = ["quick", "verify", "bench"] as const;
      const at = stages.indexOf(stage);
      for (const before of stages.slice(0, at)) expect(records[before]?.ok).toBe(true);
      const failed = records[stage];
      expect(failed?.ok).toBe(false);
      expect(failed?.kind === "bench" ? failed.reason : failed?.status).toBe(status);
      expect(failed?.device).toEqual(h100);
      if (status !== "error" || stage === "bench") expect(failed?.message).toContain("the log");
      for (const after of stages.slice(at + 1)) expect(records[after]).toBeNull();
      if (status === "timeout") expect(failed?.message).toContain("timed out after 601 s");
    },
  );
});

describe("a task the run has read", () => {
  const text = readFileSync(join(repoRoot(), "kernels", "softmax", "task.json"), "utf8");
  const checked = checkTaskJson(text);
  if (!checked.ok) throw new Error(checked.errors.join("\n"));
  const task = { path: "/t/softmax", spec: checked.task };

  it("goes to every command with its task.json, so the harness does not read the file again", async () => {
    const fake = fakeRunner((request) => ({
      record:
        request.command === "verify"
          ? verifyRecord()
          : request.command === "bench"
            ? benchRecord()
            : request.command === "inspect"
              ? taskInfo()
              : request.command === "static"
                ? staticRecord()
                : {
                    schema: 1,
                    kind: "static-context",
                    task: "softmax",
                    referenceOps: [],
                    libraries: "allow",
                  },
    }));
    const options = { runner: fake.runner };
    await verify(task, "/c/k.cu", options);
    await bench(task, options);
    await inspectTask(task, options);
    await staticContext(task, options);
    await staticCheck("/c/k.cu", { ...options, task });
    expect(fake.calls.map((call) => call.command)).toEqual([
      "verify",
      "bench",
      "inspect",
      "static-context",
      "static",
    ]);
    for (const call of fake.calls) {
      expect(call).toMatchObject({ task: "/t/softmax", taskSpec: JSON.parse(text) as unknown });
    }
  });

  it("a path alone, or a task of another format (no task.json), sends the path only", async () => {
    const fake = fakeRunner(() => ({ record: verifyRecord() }));
    await verify("/t/softmax", "/c/k.cu", { runner: fake.runner });
    await verify({ path: "/t/level1/1_matmul.py", spec: null }, "/c/k.cu", { runner: fake.runner });
    expect(fake.calls.map((call) => "taskSpec" in call)).toEqual([false, false]);
  });
});

describe("task and machine calls", () => {
  it("inspect returns the TaskInfo and asks for the probe", async () => {
    const fake = fakeRunner(() => ({ record: taskInfo() }));
    const info = await inspectTask("/t/softmax", { runner: fake.runner, probe: true });
    expect(info.name).toBe("softmax");
    expect(fake.calls[0]).toMatchObject({ command: "inspect", task: "/t/softmax", probe: true });
  });

  it("device returns the DeviceRecord", async () => {
    const fake = fakeRunner(() => ({ record: deviceRecord() }));
    expect((await device({ runner: fake.runner })).cuda).toBe(true);
  });

  it("a failed inspect throws HarnessError with the log", async () => {
    const fake = fakeRunner(() => ({ outcome: { exitCode: 4, log: "ImportError: no module" } }));
    await expect(inspectTask("/t/x", { runner: fake.runner })).rejects.toMatchObject({
      name: "HarnessError",
      log: "ImportError: no module",
    });
  });

  it("an unreadable device record throws HarnessError with the zod issues", async () => {
    const fake = fakeRunner(() => ({ record: { schema: 1, kind: "device", cuda: "yes" } }));
    const error = await device({ runner: fake.runner }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HarnessError);
    expect((error as HarnessError).issues.length).toBeGreaterThan(0);
  });
});
