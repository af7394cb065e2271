// The TypeScript side against the real Python harness, on the CPU: records parse, the fork
// server runs requests, and the CLI gives the verdicts and exit codes a user relies on.
// Skipped only where no Python with torch exists and CI is not set.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCascade } from "../../../runner/src/cascade.js";
import {
  ForkServer,
  device,
  inspectTask,
  staticCheck,
  verify,
} from "../../../runner/src/harness/client.js";
import { deviceRecordSchema } from "../../../src/shared/contract/records.js";
import { allowRead } from "../../../runner/src/sandbox/sandbox.js";
import { repo, runCli } from "../../helpers/cli.js";
import { skipWithoutPython } from "../../helpers/python.js";

const fixtures = join(repo, "test", "fixtures");
// The harness runs in the sandbox: it sees the fixtures only because we say so (commands
// say so for the tasks they are given; these tests call the client directly).
allowRead(fixtures);
const relu = join(fixtures, "tasks", "small_relu");
const onGpuMachine = process.env["EVOKERNEL_GPU_TESTS"] === "1";

describe.skipIf(skipWithoutPython)("harness client", () => {
  const server = new ForkServer();
  afterAll(() => server.close());

  it("reads the device record, in its own process and through the fork server", async () => {
    const direct = await device();
    const forked = await device({ runner: server.run });
    expect(forked).toEqual(direct);
  });

  it.each([
    ["native", relu],
    ["kernelbench", join(fixtures, "kernelbench", "23_Softmax.py")],
    ["robust-kbench", join(fixtures, "robust-kbench", "linear_relu")],
  ])("inspects a %s task", async (format, path) => {
    const info = await inspectTask(path, { runner: server.run });
    expect(info.error).toBeNull();
    expect(info).toMatchObject({ ok: true, format });
    expect(info.configs.length).toBeGreaterThanOrEqual(2);
  });

  it("the static check rejects a timer patch", async () => {
    const record = await staticCheck(
      join(repo, "runner", "corpus", "softmax", "06a_patch_elapsed_time.py"),
    );
    expect(record.ok).toBe(false);
    expect(record.findings.some((finding) => finding.hack === 6)).toBe(true);
  });

  it("evaluates candidates on the CPU: a pass and a copy that only works on [0, 1)", async () => {
    const results = await runCascade(
      relu,
      [join(relu, "candidate_ok.py"), join(relu, "candidate_copy.py")],
      {
        device: "cpu",
        server,
      },
    );
    // Which check catches the copy first is the harness's business; that one does is ours.
    expect(results.map((result) => result.status)).toEqual(["passed", "rejected"]);
    expect(results[1]?.reason).not.toBeNull();
    expect(deviceRecordSchema.shape.device.safeParse(results[0]?.verify?.device).success).toBe(
      true,
    );
  });

  it("the search's screen (the harness's evaluate) gives the records of verify --quick and verify", async () => {
    const candidates = [join(relu, "candidate_ok.py"), join(relu, "candidate_copy.py")];
    const one = await runCascade(relu, candidates, {
      device: "cpu",
      seed: 5,
      server,
      quick: true,
      bench: { compile: false },
    });
    const timeless = (record: { seconds: unknown; phases: unknown } | null | undefined) =>
      record === null || record === undefined ? record : { ...record, seconds: 0, phases: {} };
    for (const [index, result] of one.entries()) {
      const candidate = candidates[index] as string;
      const separate = { device: "cpu", seed: 5, runner: server.run } as const;
      const quick = await verify(relu, candidate, { ...separate, quick: true });
      expect(timeless(result.quick)).toEqual(timeless(quick));
      if (!quick.ok) continue;
      expect(timeless(result.verify)).toEqual(timeless(await verify(relu, candidate, separate)));
    }
    // bench needs a GPU: the one child says it did not run, the bench child that there is none
    expect(one[0]).toMatchObject({ ok: false, reason: "no-gpu", bench: { reason: "no-gpu" } });
    expect(one[0]?.message).toContain("bench did not run");
    expect(one[1]?.bench).toBeNull();
  });
});

describe.skipIf(skipWithoutPython)("CLI with the harness", () => {
  it("device --json prints the DeviceRecord", async () => {
    const run = await runCli(["device", "--json"]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(deviceRecordSchema.safeParse(JSON.parse(run.stdout)).success).toBe(true);
  });

  it("tasks --probe loads and runs each reference", async () => {
    const run = await runCli(["tasks", "test/fixtures/tasks/small_relu", "--probe"]);
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("ok (probed)");
  });

  it("tasks --probe refuses a degenerate task", async () => {
    const run = await runCli(["tasks", "test/fixtures/tasks/degenerate", "--probe"]);
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toContain("probe failed");
  });

  it("verify --device cpu passes a correct candidate (exit 0)", async () => {
    const run = await runCli([
      "verify",
      relu,
      "--device",
      "cpu",
      "-c",
      join(relu, "candidate_ok.py"),
    ]);
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("PASSED");
    expect(run.stderr).toMatch(/verify +candidate_ok\.py ok/);
  });

  it("verify --device cpu rejects a copy that only works on [0, 1) inputs (exit 1)", async () => {
    const run = await runCli([
      "verify",
      relu,
      "--device",
      "cpu",
      "--json",
      "-c",
      join(relu, "candidate_copy.py"),
    ]);
    expect(run.exitCode, run.stderr).toBe(1);
    const document = JSON.parse(run.stdout) as { candidates: { status: string; reason: string }[] };
    expect(document.candidates).toMatchObject([{ status: "rejected" }]);
  });

  it.skipIf(onGpuMachine)(
    "verify without a GPU prints the static check, then exits 3",
    async () => {
      const run = await runCli(["verify", "test/fixtures/tasks/small_softmax"]);
      expect(run.exitCode, run.stderr).toBe(3);
      expect(run.stdout).toContain("static check:");
      expect(run.stdout).toContain("kernel.cu (evk) ok");
      expect(run.stderr).toContain("no CUDA GPU on this machine");
    },
  );
});
