// What a command shows the sandbox for the task it is given: the task's folder, also for a
// robust-kbench backward task named `folder#backward` (no such path). On the H100 (2026-11-26)
// the correct corpus's five backward tasks under evk selftest ended in harness errors: their
// folder was never shown, so the fork server could not read them.
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { allowRead, holdView } from "../../../runner/src/sandbox/sandbox.js";
import { loadTarget } from "../../../runner/src/workspace/target.js";
import { repo } from "../../helpers/cli.js";

const fixtures = join(repo, "test", "fixtures", "robust-kbench");

afterEach(() => vi.unstubAllEnvs());

describe("the sandbox's view of a task", () => {
  it("shows a backward task's folder", async () => {
    vi.stubEnv("EVOKERNEL_SANDBOX", "on");
    const target = await loadTarget(join(fixtures, "linear_relu#backward"), repo);
    expect(target.task.backward).toBe(true);
    const release = holdView();
    try {
      // seen already: allowing it again while a server is up is no error
      expect(() => allowRead(join(fixtures, "linear_relu"))).not.toThrow();
    } finally {
      release();
    }
  });

  it("refuses to show a path that does not exist", () => {
    expect(() => allowRead(join(fixtures, "linear_relu#backward"))).toThrow(/does not exist/);
  });
});
