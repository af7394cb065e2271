// Every built-in kernel compiles for Hopper (sm_90) with plain nvcc, the way the harness
// builds the evk format. Runs without a GPU; in CI a missing nvcc is a failure.
import { existsSync } from "node:fs";
import { readdir, readFile, mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { basename, delimiter, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { childEnv, runProcess } from "../runner/src/harness/exec.js";
import { createLimit } from "../runner/src/util/limit.js";
import { repo } from "./helpers/cli.js";
import { inCi } from "./helpers/python.js";

function findNvcc(): string | null {
  const onPath = (process.env["PATH"] ?? "").split(delimiter).map((dir) => join(dir, "nvcc"));
  return [...onPath, "/usr/local/cuda/bin/nvcc"].find((file) => existsSync(file)) ?? null;
}

async function kernelSources(): Promise<string[]> {
  const entries = await readdir(join(repo, "kernels"), { recursive: true }).catch(() => []);
  return entries
    .filter((entry) => entry.endsWith(".cu"))
    .map((entry) => join(repo, "kernels", entry))
    .sort();
}

const nvcc = findNvcc();
const sources = await kernelSources();
const out = await mkdtemp(join(tmpdir(), "evokernel-nvcc-"));
const limit = createLimit(availableParallelism());

if (nvcc === null && !inCi)
  console.warn("skipping kernel compilation: nvcc not found (install the CUDA toolkit)");

afterAll(() => rm(out, { recursive: true, force: true }));

describe.skipIf(nvcc === null && !inCi)("kernels compile with nvcc for sm_90", () => {
  it("has nvcc (CI images carry it at /usr/local/cuda/bin)", () => {
    expect(nvcc).not.toBeNull();
  });

  it("has kernels to compile", () => {
    expect(sources.length).toBeGreaterThan(0);
  });

  it.concurrent.each(sources.map((file) => [file.slice(repo.length), file]))(
    "%s",
    async (_name, file) => {
      const source = await readFile(file, "utf8");
      // torch-ext kernels need torch's headers; the harness builds those through torch.
      if (source.includes("PYBIND11_MODULE")) return;
      const library = join(
        out,
        `${basename(file, ".cu")}-${Math.random().toString(36).slice(2)}.so`,
      );
      const args = ["-O3", "-std=c++17", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC"];
      const include = ["-I", join(repo, "runner", "harness", "include")];
      const compiled = await limit(() =>
        runProcess(nvcc ?? "nvcc", [...args, ...include, "-o", library, file], {
          env: childEnv(),
          timeoutMs: 600_000,
        }),
      );
      expect(compiled.output.trim() === "" ? compiled.exitCode : compiled.output).toBe(0);
    },
    600_000,
  );
});
