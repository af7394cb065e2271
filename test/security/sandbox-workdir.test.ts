// Issue 33.4, through the runner's own client and fork server, in the sandbox, with the real
// harness on the CPU: the sandbox's root is read-only, so a candidate that builds into a
// relative folder failed with EROFS (and its except branch hid it). Each command now runs in
// a private folder of its own under the sandbox's /tmp (runner/harness/evokernel_harness/
// workdir.py): the candidate passes, and the next one finds its folder empty.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ForkServer, verify } from "../../runner/src/harness/client.js";
import { allowRead } from "../../runner/src/sandbox/sandbox.js";
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

  it("is its own: the next candidate finds it empty", async () => {
    const first = await run("writes_relative.py");
    expect(first.ok, first.message).toBe(true);
    const second = await run("looks_around.py");
    expect(second.ok, second.message).toBe(true);
  }, 600_000);
});
