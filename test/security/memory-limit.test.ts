// Issue 34.3: no command exceeds its machine's share. Every harness command runs under a memory
// limit of its own (EVOKERNEL_MEM_LIMIT_MB, by default half the machine's memory:
// runner/harness/evokernel_harness/limits.py); a task whose inputs need more fails at the
// allocation, in seconds, with the limit and the allocation named and the reason `resources`,
// instead of growing until the kernel's OOM killer chooses among the machine's processes
// (KernelBench's 19_ReLU.py took a 23 GB machine down so). The real CLI, the real harness in
// its sandbox, on the CPU: a reference whose get_inputs allocates 4 GiB, under 512 MiB; one whose
// get_inputs writes a 4 MiB file, under the sandbox's file-size limit (EVOKERNEL_SANDBOX_FSIZE,
// applied by its prlimit) of 1 MiB.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repo, runCli } from "../helpers/cli.js";
import { skipWithoutPython } from "../helpers/python.js";

const tasks = join(repo, "runner", "harness", "tests", "tasks");

type Document = {
  candidates: { ok: boolean; status: string; reason: string | null; message: string }[];
};

describe.skipIf(skipWithoutPython)("a harness command over its memory limit", () => {
  it("fails at the allocation naming the limit and the allocation, reason resources", async () => {
    const run = await runCli(
      [
        "verify",
        join(tasks, "huge_relu.py"),
        "--candidate",
        join(tasks, "relu_new.py"),
        "--device",
        "cpu",
        "--json",
      ],
      { env: { EVOKERNEL_MEM_LIMIT_MB: "512" } },
    );
    const document = JSON.parse(run.stdout) as Document;
    const [result] = document.candidates;
    expect(result, run.stderr).toMatchObject({ ok: false, status: "error", reason: "resources" });
    expect(result?.message).toContain("an allocation of 4294967296 bytes (4.0 GiB)");
    expect(result?.message).toContain("the memory limit of 512 MiB (EVOKERNEL_MEM_LIMIT_MB");
  }, 600_000);

  it("fails at a write past the sandbox's file-size limit, naming the limit, reason resources", async () => {
    const run = await runCli(
      [
        "verify",
        join(tasks, "big_file_relu.py"),
        "--candidate",
        join(tasks, "relu_new.py"),
        "--device",
        "cpu",
        "--json",
      ],
      { env: { EVOKERNEL_SANDBOX_FSIZE: "1048576" } },
    );
    const document = JSON.parse(run.stdout) as Document;
    const [result] = document.candidates;
    expect(result, run.stderr).toMatchObject({ ok: false, status: "error", reason: "resources" });
    expect(result?.message).toContain(
      "a write went past the file-size limit of 1048576 bytes (1 MiB) (EVOKERNEL_SANDBOX_FSIZE",
    );
  }, 600_000);
});
