// Issue 33.8: CPU mode never gives a GPU verdict. `evokernel verify --device cpu`, with the
// real harness: a CUDA candidate (.cu) is checked and built, never run, and the command exits
// 3 with what it checked (before, it was "rejected: launch-error (hack 13) … CUDA driver
// version is insufficient", exit 1); a Python candidate's pass is labelled "CPU check only,
// not a verdict" in the text and in the JSON.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repo, runCli } from "../../helpers/cli.js";
import { skipWithoutPython } from "../../helpers/python.js";

const smallSoftmax = join(repo, "test", "fixtures", "tasks", "small_softmax");

type Document = {
  cpuCheck?: string;
  error?: { exitCode: number; message: string };
  candidates: { ok: boolean; status: string; reason: string | null; message: string }[];
};

describe.skipIf(skipWithoutPython)("evokernel verify --device cpu", () => {
  it("gives a CUDA candidate no verdict: exit 3, what it checked instead", async () => {
    const run = await runCli(["verify", "kernels/softmax", "--device", "cpu", "--json"]);
    expect(run.exitCode, run.stderr).toBe(3);
    const document = JSON.parse(run.stdout) as Document;
    expect(document.error?.exitCode).toBe(3);
    expect(document.error?.message).toContain("no verdict");
    const [result] = document.candidates;
    expect(result).toMatchObject({ ok: false, status: "error", reason: "no-gpu" });
    expect(result?.message).toContain("the static check (passed");
    expect(run.stdout).not.toContain("launch-error");
    expect(document.cpuCheck).toContain("CPU check only, not a verdict");
  }, 600_000);

  it("says so in the text too, on stderr, with exit 3", async () => {
    const run = await runCli(["verify", "kernels/softmax", "--device", "cpu"]);
    expect(run.exitCode, run.stderr).toBe(3);
    expect(run.stdout).toContain("runs only on a CUDA GPU");
    expect(run.stderr).toContain("no verdict");
  }, 600_000);

  it("labels a pass a CPU check only, not a verdict", async () => {
    const candidate = join(smallSoftmax, "candidate_ok.py");
    const text = await runCli(["verify", smallSoftmax, "-c", candidate, "--device", "cpu"]);
    expect(text.exitCode, text.stderr).toBe(0);
    expect(text.stdout).toContain("PASSED (CPU check only, not a verdict)");
    expect(text.stdout.trimEnd().split("\n").at(-1)).toMatch(/^CPU check only, not a verdict/);
    const json = await runCli([
      "verify",
      smallSoftmax,
      "-c",
      candidate,
      "--device",
      "cpu",
      "--json",
    ]);
    expect(json.exitCode, json.stderr).toBe(0);
    const document = JSON.parse(json.stdout) as Document;
    expect(document.candidates[0]?.ok).toBe(true);
    expect(document.cpuCheck).toMatch(/^CPU check only, not a verdict/);
  }, 600_000);
});
