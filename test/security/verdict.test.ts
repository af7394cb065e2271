// Issue 16.1's second half, through the runner's own client and fork server, in the sandbox,
// with the real harness on the CPU: a candidate that takes over the process that loaded it
// (test/security/fixtures/verdict/) replaces the harness's compare function, writes a passing
// record itself and exits, or bends the files that carry its outputs to the judge. The
// verdict is the judge's (runner/harness/evokernel_harness/judge.py), decided in a process
// that never loaded the candidate: each is refused with its true reason, and an honest
// candidate still passes. With the judge taken out (cmd_verify running the verification in
// its own process, as before) the first two pass and the others are not refused for what
// they did, so these tests fail.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ForkServer, verify } from "../../runner/src/harness/client.js";
import { allowRead } from "../../runner/src/sandbox/sandbox.js";
import { repo } from "../helpers/cli.js";
import { skipWithoutPython } from "../helpers/python.js";

const hostile = join(repo, "test", "security", "fixtures", "verdict");
const task = join(repo, "test", "fixtures", "tasks", "small_softmax");
allowRead(hostile);
allowRead(task);

describe.skipIf(skipWithoutPython)("the verdict, attacked from the candidate's own process", () => {
  const server = new ForkServer();
  afterAll(() => server.close());
  const run = (candidate: string) =>
    verify(task, candidate, { device: "cpu", seed: 7, runner: server.run });

  it.each([
    ["patch_compare", "verdict-forged", "never loaded the candidate"],
    ["forged_record", "outputs-missing", "wrote no file"],
    ["output_symlink", "outputs-invalid", "symlink"],
    ["output_absurd_size", "outputs-invalid", `holds ${2 ** 32} bytes`],
    ["output_wrong_dtype", "outputs-invalid", "written as float64"],
  ])(
    "%s: refused (%s)",
    async (name, reason, words) => {
      const record = await run(join(hostile, `${name}.py`));
      expect(record.ok, record.message).toBe(false);
      expect(record.status).toBe("rejected");
      expect(record.reason, record.message).toBe(reason);
      expect(record.message).toContain(words);
    },
    600_000,
  );

  it("a process the candidate leaves behind cannot turn the refusal into a pass", async () => {
    const record = await run(join(hostile, "stray_rewriter.py"));
    expect(record.ok).toBe(false);
    expect(record.reason).toBe("mismatch");
    expect(record.message).not.toContain("FORGED");
  }, 600_000);

  it("an honest candidate passes, judged", async () => {
    const record = await run(join(task, "candidate_ok.py"));
    expect(record.ok, record.message).toBe(true);
    expect(record.message).toBe("passed 7 trials on 2 configurations");
    expect(Object.keys(record.phases)).toContain("recheck");
  }, 600_000);
});
