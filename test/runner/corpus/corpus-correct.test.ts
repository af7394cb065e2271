// runner/corpus/correct/manifest.json (issue 7): correct but unusual kernels that must pass
// verification and be benchmarked on a GPU. Here, without a GPU: the manifest parses, every
// candidate file exists and its format is what its content says, every `shared:` task
// exists under the shared data folder (skipped where that data is absent), and there are
// enough passing entries, most of them torch extensions (the build-throughput benchmark).
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  readManifest,
  resolveCorpusPath,
  sharedDataDir,
  type CorpusEntry,
} from "../../../runner/src/corpus/manifest.js";
import { repo } from "../../helpers/cli.js";

const manifest = join(repo, "runner", "corpus", "correct", "manifest.json");

function contentFormat(file: string): string | null {
  if (file.endsWith(".py")) return "py";
  const source = readFileSync(file, "utf8");
  if (/\bevk_(forward|backward)\s*\(/.test(source)) return "evk";
  if (source.includes("PYBIND11_MODULE")) return "torch-ext";
  return null;
}

/** The task path without a robust-kbench `#backward` suffix, and whether it had one. */
function splitTask(path: string): { path: string; backward: boolean } {
  return path.endsWith("#backward")
    ? { path: path.slice(0, -"#backward".length), backward: true }
    : { path, backward: false };
}

describe("the correct-but-unusual corpus manifest", () => {
  let entries: CorpusEntry[] = [];
  beforeAll(async () => {
    entries = await readManifest(manifest);
  });

  it("parses, and every candidate file exists with the format its content gives", () => {
    expect(entries.length).toBeGreaterThan(0);
    for (const entry of entries) {
      const file = resolveCorpusPath(entry.file, repo);
      expect(existsSync(file), entry.file).toBe(true);
      expect(contentFormat(file), entry.file).toBe(entry.format);
      expect(entry.hack, entry.file).toBeNull();
      expect(entry.file.startsWith("runner/corpus/correct/"), entry.file).toBe(true);
    }
  });

  it("has at least 12 passing, benchmarked entries, at least 10 of them torch extensions", () => {
    const passing = entries.filter((entry) => entry.expect === "pass");
    expect(passing.length).toBeGreaterThanOrEqual(12);
    expect(passing.every((entry) => entry.check === "bench" && entry.reasons.length === 0)).toBe(
      true,
    );
    const extensions = entries.filter(
      (entry) =>
        entry.format === "torch-ext" ||
        (entry.format === "py" &&
          readFileSync(join(repo, entry.file), "utf8").includes("load_inline")),
    );
    expect(extensions.length).toBeGreaterThanOrEqual(10);
  });

  it("keeps the one-pass-variance contrast as a rejection for accuracy loss", () => {
    const rejects = entries.filter((entry) => entry.expect === "reject");
    expect(rejects.length).toBeGreaterThanOrEqual(1);
    for (const entry of rejects) {
      expect(entry.reasons[0], entry.file).toBe("accuracy-loss");
      expect(entry.check, entry.file).toBe("verify");
    }
  });

  it("names repository tasks that exist", () => {
    for (const entry of entries.filter((e) => !e.task.startsWith("shared:"))) {
      const { path } = splitTask(resolveCorpusPath(entry.task, repo));
      expect(existsSync(path), entry.task).toBe(true);
    }
  });

  const data = sharedDataDir(repo);
  it.skipIf(!existsSync(data))("names shared: tasks that exist under the shared data", () => {
    for (const entry of entries.filter((e) => e.task.startsWith("shared:"))) {
      const { path, backward } = splitTask(resolveCorpusPath(entry.task, repo));
      expect(existsSync(path), `${entry.task} -> ${path}`).toBe(true);
      if (statSync(path).isDirectory()) {
        expect(existsSync(join(path, "func_forward.py")), entry.task).toBe(true);
        if (backward) expect(existsSync(join(path, "func_backward.py")), entry.task).toBe(true);
      } else {
        expect(backward, entry.task).toBe(false);
        expect(readFileSync(path, "utf8"), entry.task).toMatch(/class Model\b/);
      }
    }
  });

  it("resolves shared: paths under EVOKERNEL_SHARED_DATA, keeping #backward", () => {
    const env = { EVOKERNEL_SHARED_DATA: "/data" };
    expect(resolveCorpusPath("shared:robust-kbench/tasks/mnist_linear#backward", "/r", env)).toBe(
      "/data/robust-kbench/tasks/mnist_linear#backward",
    );
    expect(resolveCorpusPath("shared:x.py", "/work/main", {})).toBe("/work/shared/data/x.py");
    expect(resolveCorpusPath("kernels/layernorm", "/r", env)).toBe("/r/kernels/layernorm");
    expect(resolveCorpusPath("/abs/k.cu", "/r", env)).toBe("/abs/k.cu");
  });
});
