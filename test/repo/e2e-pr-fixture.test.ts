// The GPU acceptance run's pull request (test/fixtures/e2e-pr/make.sh) is made from the current
// kernels by small edits: when a kernel changes so that an edit no longer applies, or the edited
// kernel no longer compiles, this fails here, on CI, not on the GPU machine (the fixture script
// once stopped at its first edit for days, and nothing noticed: issue 32).
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { childEnv, runProcess } from "../../runner/src/harness/exec.js";
import { repo } from "../helpers/cli.js";
import { inCi } from "../helpers/python.js";

const out = await mkdtemp(join(tmpdir(), "evokernel-e2e-pr-"));
afterAll(() => rm(out, { recursive: true, force: true }));

const FIXTURES = [
  { file: "layernorm_faster.cu", from: "kernels/layernorm/kernel.cu" },
  { file: "softmax_slower.cu", from: "kernels/softmax/kernel.cu" },
  { file: "row_sum_wrong.cu", from: "kernels/row_sum/kernel.cu" },
  { file: "layernorm_touched.cu", from: "kernels/layernorm/kernel.cu" },
];

function findNvcc(): string | null {
  const onPath = (process.env["PATH"] ?? "").split(delimiter).map((dir) => join(dir, "nvcc"));
  return [...onPath, "/usr/local/cuda/bin/nvcc"].find((file) => existsSync(file)) ?? null;
}
const nvcc = findNvcc();

describe("the acceptance run's pull request (test/fixtures/e2e-pr/make.sh)", () => {
  it("is made from the current kernels, each by an edit that still applies", async () => {
    const made = await runProcess("bash", [join(repo, "test/fixtures/e2e-pr/make.sh"), out], {
      env: childEnv(),
      timeoutMs: 60_000,
    });
    expect(made.exitCode, made.output).toBe(0);
    for (const { file, from } of FIXTURES) {
      const edited = await readFile(join(out, file), "utf8");
      const original = await readFile(join(repo, from), "utf8");
      expect(edited, file).not.toBe(original);
      // a small edit, not a rewrite: all but a few lines as in the kernel
      const before = original.split("\n");
      const changed = edited.split("\n").filter((line, i) => line !== before[i]);
      expect(changed.length, file).toBeLessThanOrEqual(3);
    }
  });

  it("fails, naming the edit, when an edit no longer applies", async () => {
    const copy = await mkdtemp(join(tmpdir(), "evokernel-e2e-pr-stale-"));
    try {
      // a checkout whose softmax no longer has the line the slower kernel's edit changes
      await cp(join(repo, "test/fixtures/e2e-pr"), join(copy, "test/fixtures/e2e-pr"), {
        recursive: true,
      });
      for (const { from } of FIXTURES) {
        const text = await readFile(join(repo, from), "utf8");
        await mkdir(dirname(join(copy, from)), { recursive: true });
        await writeFile(
          join(copy, from),
          text.replace("THREADS_PER_ROW 256", "THREADS_PER_ROW 128"),
        );
      }
      const script = join(copy, "test/fixtures/e2e-pr/make.sh");
      const made = await runProcess("bash", [script, join(copy, "out")], {
        env: childEnv(),
        timeoutMs: 60_000,
      });
      expect(made.exitCode).not.toBe(0);
      expect(made.output).toContain("changed nothing in kernels/softmax/kernel.cu");
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  it.skipIf(nvcc === null && !inCi).each(FIXTURES)(
    "$file compiles for sm_90",
    async ({ file }) => {
      expect(nvcc).not.toBeNull();
      const args = [
        "-O3",
        "-std=c++17",
        "-arch=sm_90",
        "-cubin",
        "-I",
        join(repo, "runner/harness/include"),
      ];
      const compiled = await runProcess(
        nvcc ?? "nvcc",
        [...args, "-o", join(out, `${file}.cubin`), join(out, file)],
        { env: childEnv(), timeoutMs: 600_000 },
      );
      expect(compiled.exitCode, compiled.output).toBe(0);
    },
    600_000,
  );
});
