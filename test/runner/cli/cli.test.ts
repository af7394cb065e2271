// The CLI as a user meets it: the bundled command spawned with execa. Nothing here needs
// Python: help, exit codes for usage errors, and `tasks` (schema checks only).
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { gpuPossible } from "../../../runner/src/gpu/presence.js";
import { repo, runCli } from "../../helpers/cli.js";

describe("help and version", () => {
  it("--help lists the commands and exits 0", async () => {
    const run = await runCli(["--help"]);
    expect(run.exitCode).toBe(0);
    for (const command of ["tasks", "verify", "bench", "device"])
      expect(run.stdout).toContain(command);
  });

  it.each(["tasks", "verify", "bench", "device"])("%s --help shows its usage", async (command) => {
    const run = await runCli([command, "--help"]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain(`usage: evokernel ${command}`);
    expect(run.stdout).toContain("exit:");
  });

  it.each(["--version", "-V"])("%s prints the package version", async (flag) => {
    const run = await runCli([flag]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("help <command> prints that command's help, not the global one", async () => {
    const run = await runCli(["help", "bench"]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("usage: evokernel bench");
    expect(run.stdout).not.toContain("commands:");
  });
});

describe("did you mean", () => {
  it.each([
    ["tsks", "tasks"],
    ["verfy", "verify"],
    ["optimise", "optimize"],
    ["selftets", "selftest"],
  ])("command %s suggests %s", async (typed, meant) => {
    const run = await runCli([typed]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain(`did you mean "${meant}"?`);
  });

  it("help with a mistyped command suggests the command", async () => {
    const run = await runCli(["help", "benh"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('did you mean "bench"?');
  });

  it("a mistyped flag gets our own message with the flag it meant, not parseArgs' text", async () => {
    const run = await runCli(["tasks", "--prbe"]);
    expect(run.exitCode).toBe(2);
    // One prefix: "evokernel: " once, then the command's name.
    expect(run.stderr).toContain(
      "evokernel: tasks has no option --prbe; did you mean --probe? (see evokernel help tasks)",
    );
    expect(run.stderr).not.toMatch(/evokernel: evokernel/);
    expect(run.stderr).not.toMatch(/Unknown option|To specify a positional argument/);
  });

  it("a flag without its value, and a value given to a switch", async () => {
    const missing = await runCli(["verify", "softmax", "--seed"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("--seed needs a value");
    const given = await runCli(["tasks", "--json=yes"]);
    expect(given.exitCode).toBe(2);
    expect(given.stderr).toContain("--json takes no value");
  });
});

describe("misconfiguration: exit 3 with advice, at once", () => {
  it("a wrong EVOKERNEL_PYTHON says what is wrong and what to do, no traceback", async () => {
    const run = await runCli(["tasks", "--probe", "test/fixtures/tasks"], {
      env: { EVOKERNEL_PYTHON: "/no/such/python3" },
    });
    expect(run.exitCode).toBe(3);
    expect(run.stderr).toContain("EVOKERNEL_PYTHON=/no/such/python3 does not exist");
    expect(run.stderr).toContain("unset it");
    expect(run.stderr).not.toMatch(/Traceback|internal error|\n\s+at /);
  });

  it("a build cache that cannot be written: exit 3 naming EVOKERNEL_CACHE", async () => {
    const run = await runCli(["tasks", "--probe", "test/fixtures/tasks"], {
      env: { EVOKERNEL_CACHE: "/proc/evokernel-cache" },
    });
    expect(run.exitCode).toBe(3);
    expect(run.stderr).toContain("EVOKERNEL_CACHE=/proc/evokernel-cache cannot be written");
    expect(run.stderr).not.toMatch(/Traceback|internal error/);
  });

  it("optimize with the llm proposer and no key: exit 3 naming the setting, before torch", async () => {
    const run = await runCli(["optimize", "softmax", "--proposer", "llm"], {
      env: { ANTHROPIC_API_KEY: "", EVOKERNEL_PYTHON: "/no/such/python3" },
    });
    expect(run.exitCode).toBe(3);
    expect(run.stderr).toContain("set ANTHROPIC_API_KEY, or use --proposer tuner");
  });

  it.skipIf(gpuPossible())(
    "bench without an NVIDIA driver answers before any Python starts",
    async () => {
      // A Python that does not exist: reaching it would be another message (exit 3 too).
      const run = await runCli(["bench", "softmax"], {
        env: { EVOKERNEL_PYTHON: "/no/such/python3" },
      });
      expect(run.exitCode).toBe(3);
      expect(run.stderr).toContain("no CUDA GPU on this machine");
      expect(run.stderr).not.toContain("EVOKERNEL_PYTHON");
    },
  );
});

describe("usage errors exit 2 and say what to do", () => {
  it("no command", async () => {
    const run = await runCli([]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain("usage: evokernel");
  });

  it("an unknown command", async () => {
    const run = await runCli(["frobnicate"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('unknown command "frobnicate"');
    for (const name of ["tasks", "verify", "bench", "selftest", "device"]) {
      expect(run.stderr).toMatch(new RegExp(`Use one of .*\\b${name}\\b`));
    }
  });

  it("an unknown flag", async () => {
    const run = await runCli(["tasks", "--fast"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain("--fast");
    expect(run.stderr).toContain("evokernel help tasks");
  });

  it("a missing task", async () => {
    const run = await runCli(["verify"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain("name a task");
  });

  it("a task that does not exist", async () => {
    const run = await runCli(["verify", "no_such_task"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('no task "no_such_task"');
    expect(run.stderr).not.toContain("did you mean");
  });

  it("a mistyped task name gets the task it meant, built-in or in the folder given", async () => {
    const builtIn = await runCli(["verify", "sotfmax"]);
    expect(builtIn.exitCode).toBe(2);
    expect(builtIn.stderr).toContain('evokernel: no task "sotfmax"; did you mean "softmax"?');
    const inFolder = await runCli(["verify", "test/fixtures/tasks/smal_relu"]);
    expect(inFolder.exitCode).toBe(2);
    expect(inFolder.stderr).toContain(
      'no task "test/fixtures/tasks/smal_relu"; did you mean "test/fixtures/tasks/small_relu"?',
    );
  });

  it("a candidate that does not exist", async () => {
    const run = await runCli(["verify", "softmax", "--candidate", "nope.cu"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/candidate .*nope\.cu does not exist/);
  });

  it("selftest: a manifest that does not exist is a usage error; a path is read from where you are", async () => {
    const missing = await runCli(["selftest", "--manifest", "no/such/manifest.json"]);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain("no/such/manifest.json");
    const outside = await runCli(["selftest", "--manifest", "manifest.json"], {
      cwd: join(repo, "runner", "corpus", "correct"),
    });
    // the manifest was found and read: what stops it now is the lack of a GPU (exit 3)
    expect(outside.stderr).not.toContain("ENOENT");
    expect(outside.exitCode).toBe(3);
  });

  it("selftest: tasks that are not on this machine are named, with where shared: tasks are read", async () => {
    const run = await runCli(["selftest", "--manifest", "manifest.json"], {
      cwd: join(repo, "runner", "corpus", "correct"),
      env: { EVOKERNEL_SHARED_DATA: "/no/such/evokernel-data" },
    });
    // the entries without their data are skipped, named, with where they are looked for
    expect(run.stderr).toMatch(
      /skipping \d+ entries whose task is not on this machine \(shared:.*kernelbench/,
    );
    expect(run.stderr).toContain("under /no/such/evokernel-data (EVOKERNEL_SHARED_DATA)");
    expect(run.exitCode).toBe(3); // then no GPU
    // a manifest none of whose tasks is here: exit 3, naming them
    const only = join(repo, "runner", "corpus", "correct", "manifest.json");
    const dir = await mkdtemp(join(tmpdir(), "evokernel-selftest-"));
    const entries = (JSON.parse(await readFile(only, "utf8")) as { task: string }[]).filter(
      (entry) => entry.task.startsWith("shared:"),
    );
    await writeFile(join(dir, "manifest.json"), JSON.stringify(entries));
    const none = await runCli(["selftest", "--manifest", join(dir, "manifest.json")], {
      env: { EVOKERNEL_SHARED_DATA: "/no/such/evokernel-data" },
    });
    expect(none.exitCode).toBe(3);
    expect(none.stderr).toMatch(/tasks are not on this machine \(.*kernelbench/);
    expect(none.stderr).toContain("under /no/such/evokernel-data; set EVOKERNEL_SHARED_DATA");
    await rm(dir, { recursive: true, force: true });
  });

  it("selftest from a tree without the public data: skips those entries, says so, and still runs", async () => {
    // a fresh clone, a release tree, the runner image: no KernelBench files (issue 32.5)
    const run = await runCli(["selftest"], {
      env: { EVOKERNEL_SHARED_DATA: "/no/such/evokernel-data" },
    });
    expect(run.stderr).toMatch(/selftest: skipping 2 entries whose task is not on this machine/);
    expect(run.stderr).toContain("every hack class is still checked by other entries");
    // what stops it here is the lack of a GPU, not the missing data
    expect(run.stderr).toContain("no CUDA GPU");
    expect(run.exitCode).toBe(3);
  });

  it("selftest's default manifests check every hack class without the public data", async () => {
    const { readManifest } = await import("../../../runner/src/corpus/manifest.js");
    const entries = [
      ...(await readManifest(join(repo, "runner/corpus/manifest.json"))),
      ...(await readManifest(join(repo, "runner/corpus/isolation/manifest.json"))),
    ];
    const classes = (list: typeof entries) =>
      [...new Set(list.map((entry) => entry.hack).filter((hack) => hack !== null))].sort();
    const own = entries.filter((entry) => !entry.task.startsWith("shared:"));
    expect(classes(own)).toEqual(classes(entries));
    expect(classes(entries)).toHaveLength(16);
  });

  it("a bad --device", async () => {
    const run = await runCli(["verify", "softmax", "--device", "tpu"]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain("--device is cuda or cpu");
  });

  it("--json still prints one JSON document", async () => {
    const run = await runCli(["verify", "no_such_task", "--json"]);
    expect(run.exitCode).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({ error: { exitCode: 2 } });
  });
});

describe("tasks", () => {
  it("lists the fixture tasks of every shape", async () => {
    const run = await runCli([
      "tasks",
      "test/fixtures/tasks",
      "test/fixtures/kernelbench",
      "test/fixtures/robust-kbench",
    ]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/small_relu\s+native\s+2\s+1\s+no\s+ok/);
    expect(run.stdout).toMatch(/23_Softmax\s+kernelbench/);
    expect(run.stdout).toMatch(/linear_relu\s+robust-kbench/);
  });

  it("lists kernels/ by default", async () => {
    const run = await runCli(["tasks"]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/softmax\s+native/);
  });

  it("exits 1 and says why for invalid tasks", async () => {
    const run = await runCli(["tasks", "test/fixtures/invalid-ts"]);
    expect(run.exitCode).toBe(1);
    expect(run.stdout).toContain("invalid");
    expect(run.stdout).toContain("divides by neither 32 nor 8");
  });

  it("--json prints exactly one document", async () => {
    const run = await runCli(["tasks", "test/fixtures/tasks", "--json"]);
    expect(run.exitCode).toBe(0);
    const document = JSON.parse(run.stdout) as { tasks: { name: string; problems: string[] }[] };
    expect(document.tasks.map((task) => task.name)).toContain("small_relu");
  });

  it("verify refuses an invalid task with exit 1", async () => {
    const run = await runCli(["verify", "test/fixtures/invalid/bad-dtype"]);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain("inputs[0].dtype");
  });
});
