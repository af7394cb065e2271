// The app's pure parts: the command parser, the planner and its globs, the zip reader, the
// trimming to GitHub's limits, the queue and the memory of handled keys.
import { describe, expect, it } from "vitest";
import { commandKey, parseComment } from "../../src/app/comment-commands.js";
import { buildJobSpec } from "../../src/app/job-spec.js";
import { parseExternalId, externalIdOf, newJobId } from "../../src/app/job-registry.js";
import { CHECK_OUTPUT_LIMIT, fitCheckOutput, trimTo } from "../../src/app/limits.js";
import { planTasks, resolveTaskNames, taskOf } from "../../src/app/planner.js";
import { createEarlyRuns } from "../../src/app/early-runs.js";
import { workflowFileOf } from "../../src/app/handlers/workflow-run.js";
import { createWorkQueue } from "../../src/app/queue.js";
import { createSeenSet } from "../../src/app/seen.js";
import { parseConfig } from "../../src/shared/config.js";
import { selectChangedTasks } from "../../src/shared/changed-tasks.js";
import { globMatcher } from "../../src/shared/glob.js";
import { jobSpecSchema } from "../../src/shared/job.js";

describe("parseComment", () => {
  it.each([
    ["/bench", { name: "bench", tasks: [] }],
    ["/verify softmax kernels/gemm", { name: "verify", tasks: ["softmax", "kernels/gemm"] }],
    [
      "/optimize softmax --budget 40 --proposer tuner",
      { name: "optimize", tasks: ["softmax"], budget: 40, proposer: "tuner" },
    ],
    ["/optimize --budget=5", { name: "optimize", tasks: [], budget: 5 }],
    ["/OPTIMIZE", { name: "optimize", tasks: [] }],
    ["/cancel", { name: "cancel" }],
    ["/help", { name: "help" }],
    ["Looks good.\n\n  /bench softmax  \nthanks", { name: "bench", tasks: ["softmax"] }],
    ["```\ncode\n```\n/bench", { name: "bench", tasks: [] }],
    ["<!-- a note -->\n/bench", { name: "bench", tasks: [] }],
    // Four spaces that continue a paragraph are not a code block.
    ["please run\n    /bench", { name: "bench", tasks: [] }],
    ["/bench @1A2B3C4 softmax", { name: "bench", tasks: ["softmax"], sha: "1a2b3c4" }],
    [
      "/optimize softmax @0123456789abcdef --budget 3",
      { name: "optimize", tasks: ["softmax"], budget: 3, sha: "0123456789abcdef" },
    ],
  ])("reads %j", (body, command) => {
    expect(parseComment(body)).toMatchObject({ kind: "command", command });
  });

  it.each([
    ["LGTM", "prose"],
    ["see /path/to/file", "a path in prose"],
    ["/path/to/file is broken", "a path at the start of a line"],
    ["> /bench", "a quoted command"],
    ["```\n/bench\n```", "a command in a code block"],
    ["<!-- /bench -->", "a command in an HTML comment"],
    ["note\n<!--\n/bench\n-->\nthanks", "a command in a multi-line HTML comment"],
    ["<!-- hidden from here on\n/bench", "a command after an unclosed HTML comment"],
    ["Try this:\n\n    /bench softmax\n", "a command in an indented code block"],
    ["\t/bench", "a command indented by a tab"],
    ["````\n```\n/bench\n````", "a command inside a longer fence a shorter one does not close"],
    ["~~~\n```\n/bench\n~~~", "a command inside a tilde fence a backtick one does not close"],
  ])("ignores %j (%s)", (body) => {
    expect(parseComment(body)).toEqual({ kind: "none" });
  });

  it.each([
    ["/deploy now", "is not a command I know"],
    ["/optimize --budget lots", "whole number"],
    ["/optimize --budget", "needs a value"],
    ["/optimize --proposer gpt", "use `llm` or `tuner`"],
    ["/optimize --seed 3", "not an option of `/optimize`"],
    ["/bench ../../etc", "not a task name"],
    ["/bench --quick", "not an option"],
    ["/cancel everything", "takes no arguments"],
    ["/bench @main", "is not a commit"],
    ["/verify @1a2b3c4 @5d6e7f8", "name one commit"],
  ])("explains %j", (body, error) => {
    const parsed = parseComment(body);
    expect(parsed.kind).toBe("invalid");
    expect(parsed.kind === "invalid" && parsed.error).toContain(error);
  });

  it("keys the same command the same, whatever the task order", () => {
    const a = parseComment("/bench b a");
    const b = parseComment("/bench a b");
    expect(
      a.kind === "command" &&
        b.kind === "command" &&
        commandKey(a.command) === commandKey(b.command),
    ).toBe(true);
  });
});

describe("globMatcher", () => {
  it.each([
    ["kernels", "kernels/softmax/kernel.cu", true],
    ["kernels", "kernelsx/a", false],
    ["kernels/*", "kernels/softmax", true],
    ["kernels/*", "kernels/softmax/kernel.cu", false],
    ["**/*.cu", "kernels/softmax/kernel.cu", true],
    ["**/*.cu", "kernel.cu", true],
    ["csrc/**/*.cuh", "csrc/common.cuh", true],
    ["csrc/**/*.cuh", "csrc/a/b/common.cuh", true],
    ["csrc/**", "csrc/a/b", true],
    ["kernels/[ab].py", "kernels/a.py", true],
    ["kernels/[ab].py", "kernels/c.py", false],
    ["a.b", "axb", false],
    ["include/{a,b}.h", "include/b.h", true],
    ["include/{a,b}.h", "include/c.h", false],
    ["./csrc/", "csrc/x.cuh", true],
  ])("%s against %s is %s", (pattern, path, expected) => {
    expect(globMatcher(pattern)(path)).toBe(expected);
  });

  it("is one dialect: the app's planner and the runner's task selection agree", () => {
    const config = { tasks: ["kernels"], paths: ["kernels/**/*.cu", "include/{common,math}.cuh"] };
    const changed = ["include/math.cuh", "README.md"];
    expect(
      planTasks(
        config,
        changed.map((filename) => ({ filename })),
      ),
    ).toEqual({ kind: "all" });
    const tasks = [{ path: "kernels/softmax" }, { path: "kernels/rmsnorm" }];
    const touched = selectChangedTasks({
      changed,
      baseTasks: tasks,
      headTasks: tasks,
      paths: config.paths,
    });
    expect(touched.map((task) => task.path)).toEqual(["kernels/rmsnorm", "kernels/softmax"]);
  });
});

describe("planTasks", () => {
  const roots = { tasks: ["kernels"], paths: undefined };
  it("maps files to their task folders, renames to both ends", () => {
    const plan = planTasks(roots, [
      { filename: "kernels/softmax/kernel.cu" },
      { filename: "kernels/softmax/task.json" },
      { filename: "kernels/gemm2/kernel.cu", previousFilename: "kernels/gemm/kernel.cu" },
      { filename: "README.md" },
    ]);
    expect(plan).toEqual({
      kind: "tasks",
      tasks: ["kernels/gemm", "kernels/gemm2", "kernels/softmax"],
    });
  });

  it("stays quiet when no task changed", () => {
    expect(
      planTasks(roots, [{ filename: "README.md" }, { filename: "kernels/README.md" }]),
    ).toEqual({ kind: "none" });
  });

  it("counts a KernelBench file directly in a root as a task", () => {
    expect(planTasks(roots, [{ filename: "kernels/level1_relu.py" }])).toEqual({
      kind: "tasks",
      tasks: ["kernels/level1_relu.py"],
    });
  });

  it("with paths: only matching files count; one outside every task reviews them all", () => {
    const config = { tasks: ["kernels"], paths: ["**/*.cu", "csrc/**/*.cuh"] };
    expect(planTasks(config, [{ filename: "kernels/softmax/notes.md" }])).toEqual({ kind: "none" });
    expect(planTasks(config, [{ filename: "kernels/softmax/kernel.cu" }])).toEqual({
      kind: "tasks",
      tasks: ["kernels/softmax"],
    });
    expect(planTasks(config, [{ filename: "csrc/common.cuh" }])).toEqual({ kind: "all" });
  });

  it("leaves a PR of 3,000 files or more to the runner's git diff: GitHub lists no more", () => {
    const listed = Array.from({ length: 3000 }, (_, i) => ({ filename: `docs/${i}.md` }));
    // No task among the files GitHub listed; one may lie past them.
    expect(planTasks(roots, listed)).toEqual({ kind: "all" });
    expect(planTasks(roots, listed.slice(1))).toEqual({ kind: "none" });
  });

  it("takes glob roots as the matched prefix", () => {
    expect(taskOf(["ops/*/cuda"], "ops/relu/cuda/k.cu")).toBe("ops/relu/cuda");
    expect(resolveTaskNames(["kernels"], ["softmax", "other/gemm"])).toEqual([
      "kernels/softmax",
      "other/gemm",
    ]);
  });
});

describe("trimTo", () => {
  it("keeps a text that fits, trims one that does not with a link, closing what it opened", () => {
    expect(trimTo("short", 100)).toBe("short");
    const long = "<details>\n\n```\n" + "x".repeat(500);
    const trimmed = trimTo(long, 200, "https://example.test/run/1");
    expect(trimmed.length).toBeLessThanOrEqual(200);
    expect(trimmed).toContain("https://example.test/run/1");
    expect(trimmed).toContain("```\n</details>");
  });

  it("counts a check run's output in UTF-8 bytes, as GitHub does: ± × µ are two bytes each", () => {
    const row = "| softmax | 1.23 ± 0.01 µs | 0.98× | −26 % |\n";
    const report = row.repeat(Math.ceil(70_000 / row.length));
    expect(report.length).toBeLessThan(CHECK_OUTPUT_LIMIT.max * 1.1);
    const trimmed = trimTo(report, CHECK_OUTPUT_LIMIT, "https://example.test/run/1");
    expect(Buffer.byteLength(trimmed, "utf8")).toBeLessThanOrEqual(65_535);
    // Not trimmed further than needed: within a row of the limit.
    expect(Buffer.byteLength(trimmed, "utf8")).toBeGreaterThan(
      65_535 - Buffer.byteLength(row) - 200,
    );
    expect(trimmed).toContain("https://example.test/run/1");
    // Trimmed by characters, the same report is over GitHub's limit.
    expect(Buffer.byteLength(trimTo(report, 65_535), "utf8")).toBeGreaterThan(65_535);
    // A report that fits in characters but not in bytes is trimmed, a 4-byte character whole.
    const emoji = "🚀".repeat(20_000);
    const cut = trimTo(emoji, CHECK_OUTPUT_LIMIT);
    expect(Buffer.byteLength(cut, "utf8")).toBeLessThanOrEqual(65_535);
    expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    const output = fitCheckOutput({ title: "t", summary: report, text: emoji });
    expect(Buffer.byteLength(output.summary, "utf8")).toBeLessThanOrEqual(65_535);
    expect(Buffer.byteLength(output.text, "utf8")).toBeLessThanOrEqual(65_535);
  });
});

describe("job ids", () => {
  it("round-trips through the check run's external_id", () => {
    const id = newJobId("review", 12, "0123456789abcdef0123456789abcdef01234567");
    expect(id).toMatch(/^review-12-0123456-[0-9a-f]{6}$/);
    expect(parseExternalId(externalIdOf(id))).toEqual({ jobId: id });
    expect(parseExternalId(externalIdOf(id, 99))).toEqual({ jobId: id, runId: 99 });
    expect(parseExternalId("someone-else")).toBeUndefined();
  });
});

describe("queue and seen set", () => {
  it("runs work after the caller returns, a few at a time, and says when idle", async () => {
    const order: string[] = [];
    const errors: string[] = [];
    const queue = createWorkQueue(2, (label) => errors.push(label));
    for (const name of ["a", "b", "c"]) {
      queue.push(name, async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        order.push(name);
      });
    }
    queue.push("bad", () => Promise.reject(new Error("boom")));
    expect(order).toEqual([]);
    await queue.idle();
    expect(order.sort()).toEqual(["a", "b", "c"]);
    expect(errors).toEqual(["bad"]);
  });

  it("remembers a bounded number of keys", () => {
    const seen = createSeenSet(2);
    expect([
      seen.first("a"),
      seen.first("a"),
      seen.first("b"),
      seen.first("c"),
      seen.first("a"),
    ]).toEqual([true, false, true, true, true]);
  });
});

describe("early runs", () => {
  it("are found by run id, or by the run-name for a job without one, once, within bounds", () => {
    let clock = 0;
    const early = createEarlyRuns(2, 1000, () => clock);
    const replay = () => Promise.resolve();
    early.park({ runId: 1, title: "evokernel review review-7-aaaaaaa-111111" }, replay);
    expect(early.take({ jobId: "review-7-aaaaaaa-111111", runId: 2 })).toBeUndefined();
    expect(early.take({ jobId: "review-7-aaaaaaa-111111" })).toBe(replay);
    expect(early.take({ jobId: "review-7-aaaaaaa-111111" })).toBeUndefined();
    // At most two, the oldest go first; none older than the age limit.
    early.park({ runId: 3 }, replay);
    early.park({ runId: 4 }, replay);
    early.park({ runId: 5 }, replay);
    expect(early.size).toBe(2);
    expect(early.take({ jobId: "x", runId: 3 })).toBeUndefined();
    clock = 1001;
    expect(early.take({ jobId: "x", runId: 5 })).toBeUndefined();
    expect(early.size).toBe(0);
  });
});

describe("buildJobSpec", () => {
  it("carries the config's runner labels, which the workflow's runs-on reads", () => {
    const parsed = parseConfig({ runner: "gpu-h100", pullRequests: "bench" });
    if (!parsed.ok) throw new Error(parsed.errors.join("; "));
    const spec = buildJobSpec({
      kind: "review",
      repo: { owner: "octo", repo: "kernels" },
      pull: { number: 7, headSha: "a".repeat(40), baseSha: "b".repeat(40) },
      config: parsed.config,
      tasks: ["kernels/softmax"],
      requestedBy: "octocat",
    });
    expect(spec.runner).toEqual(["gpu-h100"]);
    expect(jobSpecSchema.parse(spec).runner).toEqual(["gpu-h100"]);
    expect(() => jobSpecSchema.parse({ ...spec, runner: [] })).toThrow();
  });
});

describe("a workflow run's path", () => {
  it("names its workflow file, with or without the ref GitHub's REST description puts after it", () => {
    expect(workflowFileOf(".github/workflows/evokernel.yml")).toBe("evokernel.yml");
    expect(workflowFileOf(".github/workflows/build.yml@main")).toBe("build.yml");
    expect(workflowFileOf(".github/workflows/evokernel.yaml@refs/heads/feature/x")).toBe(
      "evokernel.yaml",
    );
    expect(workflowFileOf("octo/kernels/.github/workflows/evokernel.yml@v1.2")).toBe(
      "evokernel.yml",
    );
  });
});
