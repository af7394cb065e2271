// lab/gpu-batch.sh (the GPU machine's batch runner): a second `start` while a batch runs is
// refused, and the running batch's folder is left as it was. Before, the second start deleted
// the first one's results, and the first one's end then marked the second done.
import { execFile, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const script = fileURLToPath(new URL("../../lab/gpu-batch.sh", import.meta.url));

async function start(batch: string): Promise<{ code: number; stderr: string }> {
  try {
    await run("bash", [script, "start", "selftest"], {
      env: { ...process.env, EVK_BATCH_DIR: batch },
    });
    return { code: 0, stderr: "" };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

describe("gpu-batch.sh start", () => {
  it("refuses while a batch is running and leaves its results alone", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evokernel-gpu-batch-"));
    const running = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      const batch = join(dir, "batch");
      await mkdir(join(batch, "steps"), { recursive: true });
      await writeFile(join(batch, "pid"), `${running.pid}\n`);
      await writeFile(join(batch, "steps", "result.txt"), "kept");
      const refused = await start(batch);
      expect(refused.code).toBe(4);
      expect(refused.stderr).toContain(`a batch is still running (pid ${running.pid})`);
      expect(await readFile(join(batch, "steps", "result.txt"), "utf8")).toBe("kept");
    } finally {
      running.kill();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
