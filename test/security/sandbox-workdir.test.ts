// Issue 33.4, through the runner's own client and fork server, in the sandbox, with the real
// harness on the CPU: the sandbox's root is read-only, so a candidate that builds into a
// relative folder failed with EROFS (and its except branch hid it). Each command now runs in
// a private folder of its own under the sandbox's /tmp (runner/harness/evokernel_harness/
// workdir.py): the candidate passes, and the next one finds its folder empty.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { rmSync } from "node:fs";
import { build, ForkServer, verify } from "../../runner/src/harness/client.js";
import { allowRead, scratchFolder } from "../../runner/src/sandbox/sandbox.js";
import { repo } from "../helpers/cli.js";
import { skipWithoutPython } from "../helpers/python.js";

const fixtures = join(repo, "test", "security", "fixtures", "workdir");
const task = join(repo, "test", "fixtures", "tasks", "small_softmax");
allowRead(fixtures);
allowRead(task);

describe.skipIf(skipWithoutPython)("a candidate's working folder in the sandbox", () => {
  const server = new ForkServer();
  afterAll(() => server.close());
  const run = (name: string) =>
    verify(task, join(fixtures, name), { device: "cpu", seed: 7, runner: server.run });

  it("is writable: a candidate that builds into relative folders passes", async () => {
    const record = await run("writes_relative.py");
    expect(record.ok, record.message).toBe(true);
    expect(JSON.stringify(record)).not.toContain("Read-only");
  }, 600_000);

  it("keeps what the build stage built in it for the commands after, in another sandbox", async () => {
    // the build in the CPU pool's sandbox, verification (twice) in a GPU lane's: each its own /tmp
    const cache = await scratchFolder("kept-cache-"); // seen, writable, by every sandbox
    const lane = new ForkServer();
    try {
      const built = await build(join(fixtures, "builds_relative.py"), {
        cache,
        runner: server.run,
      });
      expect(built.ok, built.log).toBe(true);
      expect(built.log).toContain("evk-workdir: its working folder (");
      for (let time = 0; time < 2; time += 1) {
        const record = await verify(task, join(fixtures, "builds_relative.py"), {
          device: "cpu",
          seed: 7,
          artifact: built.artifact ?? "",
          runner: lane.run,
        });
        expect(record.ok, record.message).toBe(true);
      }
    } finally {
      await lane.close();
      rmSync(cache, { recursive: true, force: true });
    }
  }, 600_000);

  it("is its own: the next candidate finds it empty", async () => {
    const first = await run("writes_relative.py");
    expect(first.ok, first.message).toBe(true);
    const second = await run("looks_around.py");
    expect(second.ok, second.message).toBe(true);
  }, 600_000);
});
