// A candidate is shown to the sandbox as the one file it is, never as its folder: a candidate
// saved straight in /tmp (or a home folder) showed that whole folder read-only, over the
// sandbox's own /tmp, so the harness found no writable temporary folder and every command
// failed ("the harness process vanished: No usable temporary directory", exit 4), while the
// candidate could read every file beside it. Fails without the fix (target.ts candidatesFor).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repo, runCli } from "../helpers/cli.js";
import { skipWithoutPython } from "../helpers/python.js";

let dir: string;
let loose: string[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-candidate-file-"));
  loose = [];
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
  await Promise.all(loose.map((file) => rm(file, { force: true })));
});

describe.skipIf(skipWithoutPython)("a candidate in the machine's temporary folder", () => {
  it("is verified (its own words come back), and sees nothing else of that folder", async () => {
    const tag = `${String(process.pid)}-${Math.random().toString(36).slice(2)}`;
    const secret = join(tmpdir(), `evk-beside-${tag}.txt`);
    const candidate = join(tmpdir(), `evk-loose-${tag}.py`);
    loose.push(secret, candidate);
    await writeFile(secret, "KEY-BESIDE-THE-CANDIDATE\n");
    await writeFile(
      candidate,
      [
        "import os",
        `_beside = ${JSON.stringify(secret)}`,
        'raise RuntimeError("SEEN " + (open(_beside).read().strip() if os.path.exists(_beside) else "nothing"))',
        "",
        "def forward(x):",
        "    return x",
        "",
      ].join("\n"),
    );
    const task = join(repo, "test", "fixtures", "tasks", "small_relu");
    const run = await runCli(
      ["verify", task, "--candidate", candidate, "--device", "cpu", "--json"],
      { env: { EVOKERNEL_CACHE: join(dir, "cache") } },
    );
    expect(run.stdout).not.toContain("KEY-BESIDE-THE-CANDIDATE");
    const result = JSON.parse(run.stdout) as {
      candidates?: { reason: string; message: string }[];
      error?: { message: string };
    };
    expect(result.error, run.stderr).toBeUndefined();
    expect(result.candidates?.[0]?.reason).toBe("load-error");
    expect(result.candidates?.[0]?.message).toContain("SEEN nothing");
  });
});
