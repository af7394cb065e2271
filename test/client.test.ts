// The client turns every way a harness run can end into a record (candidate calls) or a
// HarnessError (task and machine calls); no outcome reads as a pass unless the record says so.
import { describe, expect, it } from "vitest";
import { HarnessError } from "../runner/src/errors.js";
import {
  bench,
  build,
  device,
  inspectTask,
  staticCheck,
  verify,
} from "../runner/src/harness/client.js";
import { fakeRunner } from "./helpers/fake-runner.js";
import {
  benchRecord,
  buildRecord,
  deviceRecord,
  h100,
  staticRecord,
  taskInfo,
  verifyRecord,
} from "./helpers/records.js";

describe("verify", () => {
  it("returns the harness's record and passes the options as flags", async () => {
    const fake = fakeRunner(() => ({ record: verifyRecord() }));
    const record = await verify("/t/softmax", "/c/kernel.cu", {
      runner: fake.runner,
      artifact: "/cache/k.so",
      heldout: true,
      device: "cpu",
      seed: 7,
    });
    expect(record.status).toBe("passed");
    const argv = fake.calls[0] ?? [];
    expect(argv.slice(0, 5)).toEqual([
      "verify",
      "--task",
      "/t/softmax",
      "--candidate",
      "/c/kernel.cu",
    ]);
    expect(argv.join(" ")).toContain(
      "--artifact /cache/k.so --heldout --device cpu --seed 7 --out ",
    );
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
    expect(fake.calls[0]).toContain("--relaxed");
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
    expect(fake.calls[0]?.join(" ")).toContain(
      "--cache /cache --define BLOCK=256 --define FAST=1 --nvcc-flag=-maxrregcount=64",
    );
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
    expect(fake.calls[0]?.join(" ")).toContain(
      "--candidate /c/k.cu --artifact /a/k.so --baseline /t/softmax/kernel.cu --baseline-artifact /a/b.so --no-compile --budget 0.5",
    );
    const broken = fakeRunner(() => ({ outcome: { exitCode: null, signal: "SIGSEGV" } }));
    const record = await bench("/t/softmax", { runner: broken.runner });
    expect(record).toMatchObject({ ok: false, reason: "crash", ceilings: null });
  });
});

describe("task and machine calls", () => {
  it("inspect returns the TaskInfo and asks for the probe", async () => {
    const fake = fakeRunner(() => ({ record: taskInfo() }));
    const info = await inspectTask("/t/softmax", { runner: fake.runner, probe: true });
    expect(info.name).toBe("softmax");
    expect(fake.calls[0]).toContain("--probe");
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
