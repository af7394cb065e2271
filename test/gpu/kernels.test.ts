// On a GPU machine (EVOKERNEL_GPU_TESTS=1): every built-in task's own kernel passes full
// verification, held-out configurations included, and `bench` times one end to end.
import { afterAll, describe, expect, it } from "vitest";
import { runCascade } from "../../runner/src/cascade.js";
import { ForkServer, device } from "../../runner/src/harness/client.js";
import { discoverTasks } from "../../runner/src/workspace/discover.js";
import { checkNativeTask } from "../../runner/src/workspace/native-task.js";
import { join } from "node:path";
import { repo, runCli } from "../helpers/cli.js";

const enabled = process.env["EVOKERNEL_GPU_TESTS"] === "1";
const tasks = enabled ? await discoverTasks([join(repo, "kernels")]) : [];

describe.skipIf(!enabled)("built-in kernels on the GPU", () => {
  const server = new ForkServer();
  afterAll(() => server.close());

  it("has a CUDA GPU", async () => {
    expect((await device({ runner: server.run })).cuda).toBe(true);
  });

  it.each(tasks.map((task) => [task.name, task.path]))(
    "%s: the task's own kernel passes, held-out configurations included",
    async (_name, path) => {
      const checked = await checkNativeTask(path);
      if (!checked.ok || checked.task.kernel === undefined)
        throw new Error(`${path} has no kernel`);
      const [result] = await runCascade(path, [join(path, checked.task.kernel)], {
        heldout: true,
        server,
      });
      expect(result?.status, result?.message).toBe("passed");
    },
    600_000,
  );

  it("bench softmax times eager, torch.compile and the kernel, none under the floor", async () => {
    const run = await runCli(["bench", "softmax", "--json"], { timeoutMs: 600_000 });
    expect(run.exitCode, run.stderr).toBe(0);
    const document = JSON.parse(run.stdout) as {
      candidate: {
        bench: { configs: { floorMs: number; candidate: { medianMs: number } | null }[] };
      };
    };
    const configs = document.candidate.bench.configs;
    expect(configs.length).toBeGreaterThan(0);
    for (const config of configs) {
      expect(config.candidate).not.toBeNull();
      expect(config.candidate?.medianMs ?? 0).toBeGreaterThanOrEqual(config.floorMs);
    }
  }, 600_000);
});
