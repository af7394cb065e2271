// What a command shows the sandbox, its user can read. Inside, a shown folder keeps its owner
// and mode while its parents are gone: a root runner's temporary folder (0700) shown as it was
// made every harness child of a review fail to read the job's checkout (H200, 2026-11-28).
// Each test fails without its protection: the job folder shared with the sandbox's group
// (makeJobFolder), and allowRead refusing, with what to change, a path the user cannot read.
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pythonInvocation, runProcess } from "../../runner/src/harness/exec.js";
import { makeJobFolder } from "../../runner/src/jobs/run-job.js";
import { allowRead } from "../../runner/src/sandbox/sandbox.js";
import { skipWithoutPython } from "../helpers/python.js";

const made: string[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

describe.skipIf(skipWithoutPython || process.getuid?.() !== 0)(
  "folders shown to the sandbox, as root",
  () => {
    it("a job's folder: the sandbox's user reads the task files in it", async () => {
      vi.stubEnv("EVOKERNEL_SANDBOX", "on");
      const work = await makeJobFolder();
      made.push(work);
      const file = join(work, "reference.py");
      await writeFile(file, "print('hello')\n");
      allowRead(work);
      const run = await pythonInvocation([
        "-I",
        "-c",
        `print(open(${JSON.stringify(file)}).read())`,
      ]);
      const ran = await runProcess(run.file, run.args, {
        env: run.env,
        cwd: run.cwd,
        timeoutMs: 300_000,
      });
      expect(ran.output).not.toContain("PermissionError");
      expect(ran.exitCode, ran.output).toBe(0);
      expect(ran.output).toContain("print('hello')");
    }, 300_000);

    it("a folder the sandbox's user cannot read is refused when shown, saying what to change", async () => {
      vi.stubEnv("EVOKERNEL_SANDBOX", "on");
      const dir = await mkdtemp(join(tmpdir(), "evokernel-private-"));
      made.push(dir);
      await chmod(dir, 0o700);
      expect(() => allowRead(dir)).toThrow(/sandbox's user \(uid \d+\) cannot read .* \(mode 0700/);
      await chmod(dir, 0o755);
      expect(() => allowRead(dir)).not.toThrow();
    });
  },
);
