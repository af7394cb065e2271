// `evokernel verify --manifest`: candidates of several tasks in one command, against the
// stand-in harness of a GPU machine (test/helpers/fake-gpu-harness.mjs).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manifestPath } from "../../../runner/src/cli/verify.js";
import { runCli } from "../../helpers/cli.js";

const fakeHarness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));

describe("evokernel verify --manifest", () => {
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "evokernel-verify-manifest-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("verifies the candidates of several tasks in one run, a line per candidate", async () => {
    const manifest = join(dir, "manifest.json");
    const entries = [
      { file: "runner/corpus/softmax/00a_warp_row_float4.cu", task: "kernels/softmax" },
      { file: "runner/corpus/softmax/00b_torch_ext_block_row.cu", task: "kernels/softmax" },
      { file: "runner/corpus/row_sum/00a_smem_tree_float4.cu", task: "kernels/row_sum" },
    ].map((entry) => ({ ...entry, hack: null, expect: "pass", reasons: [], check: "verify" }));
    await writeFile(manifest, JSON.stringify(entries));
    const env = { EVOKERNEL_PYTHON: fakeHarness, EVOKERNEL_SANDBOX: "off", EVOKERNEL_CACHE: dir };
    const run = await runCli(["verify", "--manifest", manifest, "--json"], { env });
    expect(run.exitCode, run.stderr).toBe(0);
    const document = JSON.parse(run.stdout) as {
      summary: { tasks: number; candidates: number; passed: number; candidatesPerMinute: number };
      tasks: { task: { name: string }; candidates: { candidate: string; ok: boolean }[] }[];
    };
    expect(document.summary).toMatchObject({ tasks: 2, candidates: 3, passed: 3 });
    expect(document.summary.candidatesPerMinute).toBeGreaterThan(0);
    expect(document.tasks.map((task) => task.task.name).sort()).toEqual(["row_sum", "softmax"]);
    expect(document.tasks.flatMap((task) => task.candidates).every((c) => c.ok)).toBe(true);
    const lines = run.stderr.split("\n").filter((line) => /^\[\d\/3\] /.test(line));
    expect(lines).toHaveLength(3);
    expect(run.stderr).toMatch(
      /^\[\d\/3\] runner\/corpus\/row_sum\/00a_smem_tree_float4\.cu: passed \(compile /m,
    );
  });

  it("takes entries with only a file and a task, ignoring other keys, as its help says", async () => {
    const manifest = join(dir, "plain.json");
    const entries = [
      { file: "runner/corpus/softmax/00a_warp_row_float4.cu", task: "kernels/softmax" },
      { file: "runner/corpus/row_sum/00a_smem_tree_float4.cu", task: "kernels/row_sum", note: "x" },
    ];
    await writeFile(manifest, JSON.stringify(entries));
    const env = { EVOKERNEL_PYTHON: fakeHarness, EVOKERNEL_SANDBOX: "off", EVOKERNEL_CACHE: dir };
    const run = await runCli(["verify", "--manifest", manifest, "--json"], { env });
    expect(run.exitCode, run.stderr).toBe(0);
    const document = JSON.parse(run.stdout) as { summary: { candidates: number; passed: number } };
    expect(document.summary).toMatchObject({ candidates: 2, passed: 2 });
  });

  it("refuses a <task> or --candidate beside it, and a missing file, with exit 2", async () => {
    const manifest = join(dir, "missing.json");
    await writeFile(
      manifest,
      JSON.stringify([
        {
          file: "nope.cu",
          task: "kernels/softmax",
          hack: null,
          expect: "pass",
          reasons: [],
          check: "verify",
        },
      ]),
    );
    const both = await runCli(["verify", "softmax", "--manifest", manifest]);
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toContain("give no <task> or --candidate");
    const missing = await runCli(["verify", "--manifest", manifest]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/candidate .*nope\.cu does not exist/);
  });

  it("resolves shared: paths under EVOKERNEL_SHARED_DATA", () => {
    const env = { EVOKERNEL_SHARED_DATA: "/data" };
    expect(manifestPath("shared:kernelbench/level1/19_ReLU.py", "/repo", env)).toBe(
      "/data/kernelbench/level1/19_ReLU.py",
    );
    expect(manifestPath("kernels/softmax", "/repo", env)).toBe("/repo/kernels/softmax");
    expect(manifestPath("/abs/x.cu", "/repo", env)).toBe("/abs/x.cu");
  });
});
