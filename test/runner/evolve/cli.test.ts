// `evokernel optimize` as a user meets it: its usage, arguments checked before anything
// starts, exit 3 without a GPU, and a whole run (and its resumption) against a stand-in
// for the harness on a GPU machine (test/helpers/fake-gpu-harness.mjs).
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { resultSchema } from "../../../src/shared/result.js";
import { interruptCli, runCli } from "../../helpers/cli.js";
import { skipWithoutPython } from "../../helpers/python.js";

const fakeHarness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));

const onGpuMachine = process.env["EVOKERNEL_GPU_TESTS"] === "1";
const noKey = { ANTHROPIC_API_KEY: "" };

describe("evokernel optimize", () => {
  it("--help shows its usage", async () => {
    const run = await runCli(["optimize", "--help"]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("usage: evokernel optimize <task>");
    expect(run.stdout).toContain("--config C");
    expect(run.stdout).toContain("exit:");
  });

  it.each([
    [["--config", "greedy"], "--config is one of free, insight, full, not greedy"],
    [["--candidates=-3"], "--candidates is at least 0, not -3"],
    [["--candidates", "2.5"], "--candidates is a whole number"],
    [["--usd", "lots"], "--usd is a number, not lots"],
    [["--proposer", "oracle"], "--proposer is one of"],
  ])("refuses %j with exit 2", async (args, message) => {
    const run = await runCli(["optimize", "softmax", ...args], { env: noKey });
    expect(run.exitCode, run.stderr).toBe(2);
    expect(run.stderr).toContain(message);
  });

  it("a task that does not exist is a usage error", async () => {
    const run = await runCli(["optimize", "no_such_task", "--json"], { env: noKey });
    expect(run.exitCode).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { exitCode: 2 } });
  });

  it.skipIf(skipWithoutPython || onGpuMachine)(
    "without a GPU exits 3 after checking its arguments",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "evokernel-optimize-"));
      try {
        const archive = join(dir, "archive.jsonl");
        const run = await runCli(
          ["optimize", "softmax", "--proposer", "tuner", "--archive", archive],
          { env: noKey },
        );
        expect(run.exitCode, run.stderr).toBe(3);
        expect(run.stderr).toContain("no CUDA GPU on this machine");
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

describe("evokernel optimize on a (stand-in) GPU", () => {
  it("Ctrl-C stops after the work in flight, keeps the archive, and exits 130", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-optimize-"));
    try {
      const env = {
        ...noKey,
        EVOKERNEL_PYTHON: fakeHarness,
        EVOKERNEL_SANDBOX: "off",
        EVOKERNEL_CACHE: dir,
      };
      const archive = join(dir, "archive.jsonl");
      const args = ["optimize", "softmax", "--proposer", "tuner", "--seed", "3"];
      const run = await interruptCli(
        [...args, "--candidates", "40", "--parallel", "2", "--archive", archive],
        /generation 2:/,
        { env },
      );
      expect(run.exitCode, run.stderr).toBe(130);
      expect(run.stderr).toContain("interrupted: finishing the work in flight");
      expect(run.stderr).toMatch(/interrupted after \d+ candidates/);
      expect(run.stderr).not.toContain("final checks");
      const lines = (await readFile(archive, "utf8")).trim().split("\n");
      // the baseline and proposal 1: "generation 2" (proposal 3) begins once 1 is recorded
      expect(lines.length).toBeGreaterThanOrEqual(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("SIGTERM (a cancelled workflow step) leaves none of the harness's processes behind", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-optimize-"));
    const helpers = join(dir, "helpers.txt");
    try {
      const env = {
        ...noKey,
        EVOKERNEL_PYTHON: fakeHarness,
        EVOKERNEL_SANDBOX: "off",
        EVOKERNEL_CACHE: dir,
        // each fork server leaves a helper in its process group, as a real one's workers
        EVOKERNEL_FAKE_HELPER_PIDS: helpers,
      };
      const args = ["optimize", "softmax", "--proposer", "tuner", "--seed", "3"];
      const run = await interruptCli([...args, "--candidates", "40"], /generation 2:/, {
        env,
        signal: "SIGTERM",
      });
      expect(run.exitCode, run.stderr).toBe(143);
      const pids = (await readFile(helpers, "utf8")).trim().split("\n").map(Number);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) {
        // gone, or a zombie its parent has not reaped yet; a SIGKILL is delivered when the
        // process next runs, which on a busy machine can be after the runner's exit (seen on
        // CI beside another run: state R), so it is waited for, never for ever
        const stat = await deadOrZombie(pid);
        expect(stat === "gone" || stat.slice(stat.lastIndexOf(")") + 2)[0] === "Z", stat).toBe(
          true,
        );
      }
    } finally {
      const pids = await readFile(helpers, "utf8").catch(() => "");
      for (const pid of pids.trim().split("\n").filter(Boolean).map(Number)) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone, as it should be
        }
      }
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("builds the kernel to beat while the harness starts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-optimize-"));
    try {
      // the stand-in's server is ready only once a build has written its artifact (as
      // torch's import outlasts a build), else after 60 s; it says which
      const env = {
        ...noKey,
        EVOKERNEL_PYTHON: fakeHarness,
        EVOKERNEL_SANDBOX: "off",
        EVOKERNEL_CACHE: dir,
        EVOKERNEL_FAKE_READY_AFTER_BUILD: "60",
      };
      const args = ["optimize", "softmax", "--proposer", "tuner", "--seed", "1"];
      const archive = join(dir, "archive.jsonl");
      const run = await runCli([...args, "--candidates", "1", "--archive", archive], { env });
      expect(run.exitCode, run.stderr).not.toBe(4);
      expect(await readFile(join(dir, "fake-serve-ready.txt"), "utf8")).toBe("after a build");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("searches, re-checks the best, writes the result, and resumes from its archive", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-optimize-"));
    try {
      const calls = join(dir, "calls.log");
      const env = {
        ...noKey,
        EVOKERNEL_PYTHON: fakeHarness,
        EVOKERNEL_SANDBOX: "off",
        EVOKERNEL_CACHE: dir,
        EVOKERNEL_FAKE_CALLS: calls,
      };
      const archive = join(dir, "archive.jsonl");
      const out = join(dir, "out");
      // a seed whose six proposals find a win (the assertions below need one)
      const args = ["optimize", "softmax", "--proposer", "tuner", "--seed", "1"];
      const run = await runCli(
        [...args, "--candidates", "6", "--parallel", "2", "--archive", archive, "--out", out],
        { env },
      );
      const result = resultSchema.parse(
        JSON.parse(await readFile(join(out, "result.json"), "utf8")),
      );
      expect(run.exitCode, run.stderr).toBe(result.win ? 0 : 1);
      expect(run.stderr).toMatch(/^\[0\/6\] c0 ok 1\.00×/m);
      expect(run.stderr).toContain("generation 3: 2 proposals");
      expect(run.stdout).toContain("search: 6/6 candidates");
      expect(result.search).toMatchObject({ candidates: 6, stoppedBy: "candidates" });
      expect(result.verification.configs.some((config) => config.heldout)).toBe(true);
      // static checks and builds in the CPU fork server (one sandbox, not one each), GPU work
      // in the GPU one, the reference's own timing in a process of its own, once
      const ran = (await readFile(calls, "utf8")).trim().split("\n");
      const where = (command: string) => [
        ...new Set(
          ran.filter((l) => l.endsWith(` ${command}`)).map((l) => l.slice(0, -command.length - 1)),
        ),
      ];
      expect(where("static")).toEqual(["serve --cpu"]);
      expect(where("build")).toEqual(["serve --cpu"]);
      expect(where("evaluate")).toEqual(["serve"]);
      expect(
        ran
          .filter((line) => line.startsWith("serve --cpu "))
          .every((line) => / (static|build)$/.test(line)),
      ).toBe(true);
      expect(ran.filter((line) => line === "request bench --warm-compile")).toHaveLength(1);
      expect(run.stderr).toMatch(
        /the reference alone \(eager, torch\.compile\) timed in [\d.]+ s from the harness's start/,
      );
      expect(result.device).toMatchObject({ gpu: "Fake GPU", driver: "999.1" });
      expect((await readFile(archive, "utf8")).trim().split("\n")).toHaveLength(7);
      if (result.win) {
        expect(result.best?.diff).toContain("--- a/kernels/softmax/kernel.cu");
        expect(await readFile(join(out, "best.cu"), "utf8")).toBe(result.best?.source);
      }

      // the same command with more budget continues; its result counts both runs
      const resumed = await runCli(
        [...args, "--candidates", "8", "--parallel", "2", "--archive", archive, "--json"],
        { env },
      );
      expect(resumed.stderr).toContain("resuming: 7 archived (6/8 candidates");
      expect(resumed.stderr).toContain("generation 4: 2 proposals");
      expect(resumed.stderr).not.toContain("generation 3");
      const again = resultSchema.parse(JSON.parse(resumed.stdout));
      expect(again.search.candidates).toBe(8);
      expect(again.run.seed).toBe(1);
      expect(again.history[0]).toEqual(result.history[0]);

      // another seed is another run: refused before anything starts
      const other = await runCli(["optimize", "softmax", "--seed", "4", "--archive", archive], {
        env,
      });
      expect(other.exitCode).toBe(2);
      expect(other.stderr).toContain("--seed 1 --config insight");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** /proc/PID/stat once the process is dead (a zombie) or gone, or as it is after 60 s. */
async function deadOrZombie(pid: number): Promise<string> {
  let stat = "gone";
  for (let i = 0; i < 600; i += 1) {
    stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "gone");
    if (stat === "gone" || stat.slice(stat.lastIndexOf(")") + 2)[0] === "Z") return stat;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return stat;
}
