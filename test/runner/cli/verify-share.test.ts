// Verifications of one command share the GPU (EVOKERNEL_GPU_SHARE, issue 33.7): `verify` and
// `verify --manifest` run that many at once, each in a GPU fork server of its own, against the
// stand-in harness of a GPU machine (test/helpers/fake-gpu-harness.mjs). Its verify barrier
// holds each verification until the number asked for have begun: side by side they meet, one
// after another they never do.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli.js";

const fakeHarness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));
const candidates = [
  "runner/corpus/softmax/00a_warp_row_float4.cu",
  "runner/corpus/softmax/00b_torch_ext_block_row.cu",
  "runner/corpus/softmax/00d_honest_named_softmax_kernel.cu",
  "kernels/softmax/kernel.cu",
];

let dir = "";
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-verify-share-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The barrier's log: the servers that verified (their pids) and whether each met the others. */
async function barrier(
  file: string,
): Promise<{ servers: Set<string>; met: number; alone: number }> {
  const lines = (await readFile(file, "utf8")).trim().split("\n");
  const of = (word: string) => lines.filter((line) => line.startsWith(`${word} `));
  return {
    servers: new Set(of("start").map((line) => line.slice(6))),
    met: of("met").length,
    alone: of("alone").length,
  };
}

function env(share: string, count: number, log: string): Record<string, string> {
  return {
    EVOKERNEL_PYTHON: fakeHarness,
    EVOKERNEL_SANDBOX: "off",
    EVOKERNEL_CACHE: join(dir, "cache"),
    EVOKERNEL_GPU_SHARE: share,
    EVOKERNEL_FAKE_VERIFY_BARRIER: `${count}:${log}`,
  };
}

describe("verifications of one command share the GPU", () => {
  it("verify runs EVOKERNEL_GPU_SHARE of them at once, each in a fork server of its own", async () => {
    const log = join(dir, "barrier.log");
    const args = candidates.flatMap((file) => ["--candidate", file]);
    const run = await runCli(["verify", "softmax", ...args, "--json"], { env: env("2", 2, log) });
    expect(run.exitCode, run.stderr).toBe(0);
    const document = JSON.parse(run.stdout) as { candidates: { ok: boolean }[] };
    expect(document.candidates.map((c) => c.ok)).toEqual([true, true, true, true]);
    const seen = await barrier(log);
    expect(seen.servers.size).toBe(2);
    expect(seen.alone).toBe(0);
    expect(seen.met).toBe(4);
  });

  it("verify --manifest does too, and never starts more servers than verifications at once", async () => {
    const log = join(dir, "barrier.log");
    const manifest = join(dir, "manifest.json");
    await writeFile(
      manifest,
      JSON.stringify([
        ...candidates.map((file) => ({ file, task: "kernels/softmax" })),
        { file: "runner/corpus/row_sum/00a_smem_tree_float4.cu", task: "kernels/row_sum" },
      ]),
    );
    const run = await runCli(["verify", "--manifest", manifest, "--json"], {
      env: env("3", 3, log),
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const seen = await barrier(log);
    expect(seen.servers.size).toBe(3);
    expect(seen.alone).toBe(0);
  });

  it("EVOKERNEL_GPU_SHARE=1 verifies one at a time in one server", async () => {
    const log = join(dir, "barrier.log");
    const args = candidates.slice(0, 3).flatMap((file) => ["--candidate", file]);
    const run = await runCli(["verify", "softmax", ...args], { env: env("1", 1, log) });
    expect(run.exitCode, run.stderr).toBe(0);
    const seen = await barrier(log);
    expect(seen.servers.size).toBe(1);
    expect(seen.met).toBe(3);
  });

  it("a setting out of range is exit 3, saying what to set, before the harness starts", async () => {
    const log = join(dir, "barrier.log");
    for (const bad of ["9", "0", "two"]) {
      const run = await runCli(["verify", "softmax", "--candidate", candidates[0] ?? ""], {
        env: env(bad, 1, log),
      });
      expect(run.exitCode, bad).toBe(3);
      expect(run.stderr).toContain(`EVOKERNEL_GPU_SHARE=${bad} is not a number of verifications`);
      expect(run.stderr).not.toContain("starting the harness");
    }
  });
});
